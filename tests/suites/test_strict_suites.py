"""Suite files: unknown keys and parameters are errors with a did-you-mean, bad values name the
file, the key and the reason (the cases of the hardening audit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalstress.analyses.registry import check_suite
from evalstress.core.strict import ConfigError
from evalstress.suites import Suite, load_suite

SRC = Path(__file__).resolve().parents[2] / "src"


def _load(tmp_path: Path, body: str) -> Suite:
    path = tmp_path / "mine.yaml"
    path.write_text(body, encoding="utf-8")
    return load_suite(path)


@pytest.mark.parametrize(("body", "message"), [
    ("perturbations: [truncation]\nseed: 3\n",
     "mine.yaml: unknown suite key 'seed'. Did you mean 'seeds'?"),
    ("perturbations:\n  truncation: {ratoi: 3}\n",
     "mine.yaml: field 'perturbations.truncation': unknown parameter 'ratoi'. Did you mean "
     "'ratio'?"),
    ("perturbations:\n  truncation: {ratio: 0.3}\n",
     "'ratio' is the severity of truncation, not a parameter"),
    ("perturbations:\n  sentence-switching: {keep_lst: true}\n",
     "unknown parameter 'keep_lst'. Did you mean 'keep_last'?"),
    ("perturbations:\n  truncaton: {}\n", "Did you mean 'truncation'?"),
    ("perturbations: [truncation]\nanalyses: [blindspt]\n",
     "mine.yaml: field 'analyses': unknown analysis 'blindspt'. Did you mean 'blindspot'?"),
    ("perturbations: [truncation]\noptions: {rel_tl: 0.5}\n",
     "mine.yaml: field 'options': unknown option 'rel_tl'. Did you mean 'rel_tol'?"),
    ("perturbations: [truncation]\ngeneration: {max_reask: 1}\n",
     "field 'generation': unknown key 'max_reask'. Did you mean 'max_reasks'?"),
    ("perturbations:\n  truncation: {tasks: [sumarization]}\n",
     "unknown task 'sumarization'. Did you mean 'summarization'?"),
])
def test_unknown_names_are_errors_with_a_suggestion(tmp_path: Path, body: str,
                                                    message: str) -> None:
    """Analysis names and option keys are checked when a job is built (`check_suite`), the
    rest when the file is read; both before any work."""
    with pytest.raises(ConfigError) as caught:
        check_suite(_load(tmp_path, body))
    assert message in str(caught.value)


def test_reading_a_suite_loads_no_analysis() -> None:
    """Suites sit below the analyses: reading one imports neither the analyses nor, through
    them, the engine and the studies."""
    code = ("import sys; from evalstress.suites import load_suite; load_suite('dhp-full'); "
            "print(sorted(m for m in sys.modules if m.startswith(('evalstress.analyses', "
            "'evalstress.engine', 'evalstress.studies'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize(("body", "message"), [
    ("perturbations:\n  middle-swap: {grid: [5, -1, 'abc']}\n",
     "field 'perturbations.middle-swap.grid': -1 is not a positive number"),
    ("perturbations:\n  truncation: {grid: [0.5, 'abc']}\n",
     "field 'perturbations.truncation.grid': 'abc' is not a severity of truncation"),
    ("perturbations:\n  spelling-mistake: {grid: [1.5]}\n",
     "1.5 is not a ratio in (0, 1]"),
    ("perturbations:\n  sentence-exchange: {grid: [1.5]}\n", "1.5 is not a whole number"),
    ("perturbations:\n  truncation: {grid: []}\n", "give at least one severity"),
    ("perturbations:\n  truncation: {grid: [0.2, 0.2]}\n", "listed twice"),
    ("perturbations: [truncation]\nseeds: 'abc'\n",
     "field 'seeds' must be a number of seeds (e.g. 5) or a non-empty list of seeds"),
    ("perturbations: [truncation]\nseeds: 0\n", "field 'seeds': 0 seeds run nothing"),
    ("perturbations: [truncation]\nseeds: [1, x]\n", "field 'seeds': 'x' is not a seed"),
    ("perturbations: [truncation]\nanalyses: {blindspot: 1}\n",
     "field 'analyses' must be a list of analysis names"),
    ("perturbations:\n  truncation: 3\n",
     "field 'perturbations.truncation' must be a mapping of options"),
    ("perturbations: truncation\n", "field 'perturbations' must be a mapping"),
    ("- truncation\n", "a suite must be a mapping"),
    # before: accepted, and the analysis failed after all the scoring
    ("perturbations: [truncation]\noptions: {rel_tol: abc}\n",
     "field 'options': 'rel_tol' must be a number, got 'abc'"),
    ("perturbations: [truncation]\noptions: {alpha: 5}\n",
     "field 'options': 'alpha' must be >= 0 and <= 1, got 5"),
    ("perturbations: [truncation]\noptions: {n_boot: 2.5}\n",
     "'n_boot' must be a whole number"),
])
def test_bad_values_name_the_file_the_key_and_the_reason(tmp_path: Path, body: str,
                                                        message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, body)
    assert str(caught.value).startswith(str(tmp_path / "mine.yaml"))
    assert message in str(caught.value)


def test_one_analysis_name_is_a_one_item_list(tmp_path: Path) -> None:
    # before: "unknown analysis b, l, i, n, d, ..."
    suite = _load(tmp_path, "perturbations: [truncation]\nanalyses: blindspot\n")
    assert suite.analyses == ("blindspot",)


def test_good_values_are_kept(tmp_path: Path) -> None:
    suite = _load(tmp_path, "perturbations:\n  truncation: {grid: [0.3]}\n"
                            "  sentence-exchange: {grid: [2, paper]}\n"
                            "  char-deletion: {grid: minor, k: {minor: '3'}}\nseeds: [4, 7]\n")
    grids = {plan.name: plan.grid for plan in suite.perturbations}
    assert grids == {"truncation": (0.3,), "sentence-exchange": (2, "paper"),
                     "char-deletion": ("minor",)}
    assert suite.seeds == (4, 7)
    assert suite.perturbations[2].perturbation.params == {"k": {"minor": 3}}  # "3" read as 3


def test_a_suite_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes("description: caf\xe9\nperturbations: [truncation]\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin\.yaml, line 1: is not UTF-8 text: byte 0xE9 "
                       r"at byte offset 16"):
        load_suite(path)


def test_a_ratio_past_one_is_refused_unless_the_severity_counts(tmp_path: Path) -> None:
    """truncation's ratio is a share of the text: 2.0 ran as if it meant something; only
    middle-swap, whose paper rule counts sentences, may go past 1."""
    with pytest.raises(ConfigError, match=r"2\.0 is not a ratio in \(0, 1\]"):
        _load(tmp_path, "perturbations:\n  truncation: {grid: [2.0]}\n")
    assert _load(tmp_path, "perturbations:\n  middle-swap: {grid: [1, 2]}\n").perturbations
