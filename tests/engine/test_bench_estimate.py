"""bench/estimate_accuracy.py: the estimate's error against the make and the table row, worked
out by hand (the bench's makes are too slow for the suite)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

BENCH = str(Path(__file__).resolve().parents[2] / "bench" / "estimate_accuracy.py")


@pytest.fixture(scope="module")
def bench() -> dict:
    return runpy.run_path(BENCH, run_name="bench")


def test_the_error_is_a_share_of_the_measured_time(bench: dict) -> None:
    assert bench["error"](110.0, 100.0) == pytest.approx(0.10)
    assert bench["error"](60.0, 80.0) == pytest.approx(-0.25)
    assert bench["holds"](125.0, 100.0) and bench["holds"](75.0, 100.0)
    assert not bench["holds"](126.0, 100.0) and not bench["holds"](74.0, 100.0)
    assert not bench["holds"](None, 100.0)  # no estimate holds nothing


def test_the_row_sets_both_estimates_beside_the_make(bench: dict) -> None:
    row = {"card": "bleu-summeval", "load": 6.6, "make": 40.0,
           "shipped": {"seconds": 48.0},
           "measured": {"seconds": 35.0, "texts": 26825, "rate_line": "0.35 ms a text",
                        "dry_run_seconds": 11.2}}
    assert bench["row_text"](row) == ("| bleu-summeval | 6.6 | 26,825 | 0.35 ms a text | "
                                      "48 s (+20%) | 35 s (-12%) | 40 s | yes | 11 s |")
    row["shipped"] = {"seconds": None}
    assert "| unknown |" in bench["row_text"](row)
