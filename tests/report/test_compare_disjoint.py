"""`evalstress compare` says why nothing changed: runs of two suites with no perturbation in
common share no test, which is not the same as every shared verdict staying the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.analyses.registry import run_analyses
from evalstress.cli import app
from evalstress.core.data import builtin_corpus
from evalstress.engine.runner import run
from evalstress.evaluators.base import create_evaluator
from evalstress.report import write_outputs
from evalstress.suites import custom_suite


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ROUGE on three built-in examples: one run with truncation, one with dropped tokens."""
    folder = tmp_path_factory.mktemp("disjoint")
    out = {}
    for perturbation in ("truncation", "token-drop"):
        suite = custom_suite([perturbation], [0])
        result = run(builtin_corpus()[:3], suite, [create_evaluator("rouge")])
        out[perturbation] = folder / perturbation
        write_outputs(result, run_analyses(suite.analyses, result, suite.options),
                      out[perturbation])
    return out


def compare(a: Path, b: Path, html: Path) -> tuple[str, str]:
    said = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(html)])
    assert said.exit_code == 0, said.output
    return " ".join(said.output.split()), html.read_text(encoding="utf-8")


def test_runs_of_disjoint_suites_share_no_test(runs: dict[str, Path], tmp_path: Path) -> None:
    said, html = compare(runs["truncation"], runs["token-drop"], tmp_path / "cmp.html")
    assert "No verdict changed" not in said and "No verdict changed" not in html
    assert "The runs share no test" in said and "The runs share no test" in html


def test_a_run_against_itself_changed_nothing_on_every_test(runs: dict[str, Path],
                                                            tmp_path: Path) -> None:
    """ROUGE reports three aspects (rouge1, rouge2, rougeL): three blind-spot tests."""
    said, html = compare(runs["truncation"], runs["truncation"], tmp_path / "cmp.html")
    assert "No verdict changed on the 3 tests both runs have." in said
    assert "No verdict changed on the 3 tests both runs have." in html
