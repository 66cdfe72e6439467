"""`evalstress report`, `compare` and `combine` on run directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app

runner = CliRunner()
pytestmark = pytest.mark.slow


def test_report_rebuilds_from_the_run_directory(small_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    (run / "report.html").unlink()
    result = runner.invoke(app, ["report", str(run), "--max-variants", "30"])
    assert result.exit_code == 0, result.output
    html = (run / "report.html").read_text(encoding="utf-8")
    data = html.split("id='variants-data'>", 1)[1].split("</script>", 1)[0]
    assert len(json.loads(data)["variants"]) == 30
    assert runner.invoke(app, ["report", str(tmp_path / "none")]).exit_code == 2


def test_compare_lists_changed_verdicts(small_run: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(small_run, a)
    shutil.copytree(small_run, b)
    results = json.loads((b / "results.json").read_text(encoding="utf-8"))
    rows = results["analyses"]["blindspot"]["rows"]
    flipped = next(r for r in rows if r["verdict"] == "pass" and r["evaluator"] == "bleu")
    flipped.update(verdict="fail", passed=False, rank_pass=False)
    (b / "results.json").write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "cmp.html"
    result = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "regression" in result.output and flipped["perturbation"] in result.output
    html = out.read_text(encoding="utf-8")
    assert "A · bleu" in html and "B · bleu" in html and ">regression<" in html
    # the same run twice: nothing changed
    same = runner.invoke(app, ["compare", str(a), str(a), "--out", str(out)])
    assert "No verdict changed" in same.output


def test_combine_names_the_smallest_set(small_run: Path) -> None:
    result = runner.invoke(app, ["combine", str(small_run)])
    assert result.exit_code == 0, result.output
    assert "Smallest set passing the most tests" in result.output
    assert runner.invoke(app, ["combine", str(small_run), "--by", "judge"]).exit_code == 2
