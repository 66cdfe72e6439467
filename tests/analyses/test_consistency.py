"""The consistency statistics against hand computations, scipy and numpy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from evalstress.analyses.consistency import repeat_row, shift_rows, verdict_changes


def test_repeats_count_identical_items_with_a_wilson_interval_and_the_mean_sd() -> None:
    ratings = [[3, 3, 3], [1, 2, 3], [4, 4, 5], [2, 2, 2], [5, None, 5]]
    row = repeat_row("overall", ratings, 3)
    # the last item has a missing answer: left out; of the 4 others, 2 answered alike
    assert (row["items"], row["left_out"], row["identical"]) == (4, 1, 2)
    ci = binomtest(2, 4).proportion_ci(method="wilson")
    assert (row["identical_low"], row["identical_high"]) == pytest.approx((ci.low, ci.high))
    sds = [0.0, 1.0, np.std([4, 4, 5], ddof=1), 0.0]  # 1, 2, 3 has SD 1 exactly
    assert row["mean_sd"] == pytest.approx(np.mean(sds))
    assert row["sd_low"] <= row["mean_sd"] <= row["sd_high"]


def test_a_constant_shift_under_one_rewording_moves_and_none_under_the_other_is_stable(
        ) -> None:
    base = [1.0, 2.0, 3.0, 4.0, 5.0] * 3  # 15 items, SD 1.46: tolerance 0.29
    rows, alpha_eff = shift_rows({"overall": base},
                                 {1: {"overall": [b + 1 for b in base]},
                                  2: {"overall": list(base)}})
    by = {r["variant"]: r for r in rows}
    assert by[1]["shift"] == pytest.approx(1.0) and by[1]["outcome"] == "moves up"
    assert by[1]["low"] == pytest.approx(1.0) and by[1]["high"] == pytest.approx(1.0)
    assert by[2]["outcome"] == "stable"
    assert by[1]["delta"] == pytest.approx(0.2 * np.std(base, ddof=1))
    assert 0 < alpha_eff <= 0.05


def test_fewer_than_ten_items_decide_no_shift() -> None:
    rows, _ = shift_rows({"overall": [1.0, 2.0, 3.0]}, {1: {"overall": [2.0, 3.0, 4.0]}})
    assert rows[0]["outcome"] == "inconclusive" and rows[0]["n_to_settle"] == 10


def test_verdict_changes_name_each_test_whose_verdict_differs() -> None:
    written = {("overall", "truncation"): "detects", ("overall", "repetition"): "blind"}
    reworded = {("overall", "truncation"): "detects", ("overall", "repetition"): "inconclusive"}
    assert verdict_changes(written, reworded) == [
        {"aspect": "overall", "perturbation": "repetition", "written": "blind",
         "reworded": "inconclusive"}]


def test_answers_written_alike_are_identical_though_their_weighted_ratings_differ() -> None:
    ratings = [[4.01, 4.02, 4.01], [3.0, 3.0, 3.0], [2.0, 2.0, 2.0]]
    texts = [["4", "4", "4"], ["3", "3", "Rating: 3"], [None, "2", "2"]]
    row = repeat_row("overall", ratings, 3, texts)
    # item 1: one text; item 2: two texts; item 3: a text unknown, so compared by rating
    assert (row["identical"], row["compared_by_text"], row["identical_ratings"]) == (2, 2, 2)
