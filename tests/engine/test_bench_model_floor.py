"""bench/model_floor.py: the order the sides run in, the rates, the ratio line and the table row,
each worked out by hand (the bench's model runs are too slow for the suite)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

BENCH = str(Path(__file__).resolve().parents[2] / "bench" / "model_floor.py")


@pytest.fixture(scope="module")
def bench() -> dict:
    return runpy.run_path(BENCH, run_name="bench")


def test_the_sides_alternate_within_each_repeat(bench: dict) -> None:
    assert bench["schedule"](["ours", "direct 1", "direct 2"], 2) == [
        "ours", "direct 1", "direct 2", "ours", "direct 1", "direct 2"]


def test_a_rate_is_the_best_repeat_and_the_ratio_meets_the_target_at_0_8(bench: dict) -> None:
    assert bench["best_rate"](16, [8.0, 4.0, 5.0]) == 4.0  # 16 texts in the fastest 4 s
    assert bench["verdict"](4.0, 5.0) == "0.80 (meets >= 0.8)"
    assert bench["verdict"](3.9, 5.0) == "0.78 (MISSES >= 0.8)"


def test_memory_growth_is_the_larger_count_over_the_smaller(bench: dict) -> None:
    assert bench["growth"]({64: 945.0, 16: 900.0}) == "1.05"
    assert bench["growth"]({16: 900.0}) == "-"


def test_the_score_gap_is_relative_to_the_direct_loop(bench: dict) -> None:
    gap = bench["largest_gap"]([(1.0, 2.0), (-3.0, 0.5)], [(1.0, 2.002), (-3.0, 0.5)])
    assert gap == pytest.approx(0.002 / 2.002)


def test_a_table_row_names_the_fastest_thread_count_of_each_side(bench: dict) -> None:
    result = bench["Result"]("gpt-ppl", 16, load={"evalstress": 20.0, "direct": 22.0},
                             seconds={"evalstress": [8.0, 10.0], "evalstress threads=1": [4.0],
                                      "direct 1 thread": [3.2], "direct 2 threads": [4.0]},
                             peaks={16: 900.0, 64: 945.0})
    row = bench["table"]([result])[-1]
    # 16 / 3.2 = 5 texts/s for the direct loop at 1 thread; evalstress 16 / 8 = 2 at its
    # defaults (0.4 of it) and 16 / 4 = 4 with threads=1 (0.8 of it)
    assert row == ("| gpt-ppl | 16 | 20.0 / 22.0 | 5.00 (1 thread) | 2.00 | "
                   "0.40 (MISSES >= 0.8) | 4.00 (threads=1) | 0.80 (meets >= 0.8) | "
                   "900 / 945 (1.05) |")
