"""Runs whose evaluators have short labels (`rouge(measure=recall)`): `evalstress compare` pairs
one with a run made before short labels (the same evaluator and parameters under two labels is
one evaluator), and `evalstress check` still finds an evaluator by its registered name."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.analyses.registry import run_analyses
from evalstress.cli import app
from evalstress.core.data import builtin_corpus
from evalstress.engine.runner import run
from evalstress.evaluators.base import create_evaluator
from evalstress.report import write_outputs
from evalstress.report.compare import changes, paired_outcomes, render_compare
from evalstress.suites import custom_suite

OLD = "rouge:measure=recall"  # how the label of this spec read before short labels


@pytest.fixture(scope="module")
def new_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    suite = custom_suite(["truncation", "token-drop"], [0])
    result = run(builtin_corpus()[:4], suite, [create_evaluator("rouge:measure=recall")])
    out = tmp_path_factory.mktemp("cmp") / "new"
    write_outputs(result, run_analyses(suite.analyses, result, suite.options), out)
    return out


def _as_old_run(results: dict[str, Any], label: str) -> dict[str, Any]:
    """The same run as an older evalstress wrote it: the evaluator under its whole spec, and
    one verdict flipped so that something changed."""
    old = json.loads(json.dumps(results).replace(f'"{label}"', json.dumps(OLD)))
    rows = old["analyses"]["blindspot"]["rows"]
    flipped = next(r for r in rows if r["verdict"] == "pass")
    flipped.update(verdict="fail", passed=False, rank_pass=False)
    return old


def test_an_old_and_a_new_run_of_one_evaluator_pair_up(new_run: Path, tmp_path: Path) -> None:
    new = json.loads((new_run / "results.json").read_text("utf-8"))
    [label] = new["evaluators"]
    assert label == "rouge(measure=recall)"
    old = _as_old_run(copy.deepcopy(new), label)
    listed = changes(*paired_outcomes(old, new))
    assert [(c.before, c.after, c.kind) for c in listed] == [("fail", "pass", "fixed")]
    html = render_compare(old, new)
    assert "B's rouge(measure=recall) is paired with A's rouge:measure=recall" in html
    # through the command: the changed verdict is listed, not "no evaluator in common"
    old_dir = tmp_path / "old"
    old_dir.mkdir()
    for name in ("scores.parquet", "variants.parquet", "skips.jsonl", "examples.jsonl"):
        (old_dir / name).write_bytes((new_run / name).read_bytes())
    (old_dir / "results.json").write_text(json.dumps(old), "utf-8")
    said = CliRunner().invoke(app, ["compare", str(old_dir), str(new_run), "--out",
                                    str(tmp_path / "cmp.html")])
    assert said.exit_code == 0, said.output
    text = " ".join(said.output.split())
    assert "B's rouge(measure=recall) is paired with A's rouge:measure=recall" in text
    assert "fixed" in text


def test_different_parameters_do_not_pair(new_run: Path) -> None:
    new = json.loads((new_run / "results.json").read_text("utf-8"))
    old = _as_old_run(copy.deepcopy(new), "rouge(measure=recall)")
    old["evaluators"][OLD]["signature"]["params"]["measure"] = "precision"
    assert changes(*paired_outcomes(old, new)) == []


def test_check_finds_a_short_labelled_evaluator_by_its_registered_name(new_run: Path) -> None:
    for subject in ("rouge", "rouge(measure=recall)"):
        said = CliRunner().invoke(app, ["check", str(new_run), "--no-suite", "--require",
                                        f"{subject}:truncation=pass"])
        assert said.exit_code in (0, 1), said.output  # resolved: a verdict, not a usage error
        assert "unknown evaluator" not in said.output
