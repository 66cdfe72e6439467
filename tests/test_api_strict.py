"""The notebook face follows the same precedence and strictness as the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalstress
from evalstress.core.strict import UnknownNameError


def _suite(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text("perturbations:\n  truncation: {grid: [0.5]}\nseeds: 1\n" + extra)
    return path


def test_the_suites_rel_tol_wins_unless_rel_tol_is_given(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "options: {rel_tol: 0.3}\n")
    kept = evalstress.stress(None, "bleu", str(suite), limit=1, cache=False, progress=False)
    assert kept.analyses["blindspot"].rel_tol == 0.3  # before: stress()'s 0.01 replaced it
    given = evalstress.stress(None, "bleu", str(suite), limit=1, cache=False, progress=False,
                              rel_tol=0.05)
    assert given.analyses["blindspot"].rel_tol == 0.05


def test_an_unknown_option_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match=r"unknown option 'rel_tl'\. Did you mean 'rel_tol'"):
        evalstress.stress(None, "bleu", str(_suite(tmp_path)), limit=1, cache=False,
                          progress=False, options={"rel_tl": 0.1})
