"""`evalstress report`, `compare`, `combine` and `export` on run directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.variantfile import read_records

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


def test_exported_variants_load_back_and_score_as_the_run_did(small_run: Path,
                                                              tmp_path: Path) -> None:
    """export, then a run of the same data and suite with --variants FILE: the imported texts
    take the place of the suite's perturbations and get the first run's scores."""
    import pandas as pd

    from evalstress.core.data import builtin_corpus

    exported = tmp_path / "variants.csv"
    result = runner.invoke(app, ["export", str(small_run), "--variants", str(exported)])
    assert result.exit_code == 0, result.output
    count = json.loads((small_run / "results.json").read_text())["counts"]["variants"]
    assert f"Wrote {count} variants" in result.output
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": e.id, "task": e.task, "source": e.source,
                                        "hypothesis": e.hypothesis,
                                        "references": list(e.references)}) + "\n"
                            for e in builtin_corpus()[:6]))
    again = tmp_path / "again"
    result = runner.invoke(app, ["run", str(data), "--suite", "blindspot", "--seeds", "2",
                                 "-e", "bleu", "--variants", str(exported), "--out", str(again),
                                 "--no-cache", "--quiet", "--workers", "1"])
    assert result.exit_code == 0, result.output
    key = ["example_id", "perturbation", "severity", "seed"]

    def bleu(run: Path) -> pd.DataFrame:
        table = pd.read_parquet(run / "scores.parquet")
        table = table[table["evaluator"] == "bleu"][[*key, "score"]]
        return table.sort_values(key).reset_index(drop=True)

    pd.testing.assert_frame_equal(bleu(again), bleu(small_run))
    assert {r["method"] for r in read_records(again / "variants.parquet")} == {"imported"}


def test_export_names_what_it_cannot_write(small_run: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["export", str(small_run), "--variants", str(tmp_path / "v.txt")])
    assert result.exit_code == 2 and "unknown format '.txt'" in " ".join(result.output.split())
    result = runner.invoke(app, ["export", str(tmp_path), "--variants", str(tmp_path / "v.csv")])
    assert result.exit_code == 2
    assert "holds no variants.parquet (is it a run directory?)" in " ".join(result.output.split())
    assert not (tmp_path / "v.csv").exists() and not (tmp_path / "v.txt").exists()
