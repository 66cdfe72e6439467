"""Accuracy against explicit human preferences (analyses/preference.py), every value checked
against a hand count, Wilson's formula written out here, a bootstrap written out here, and the
krippendorff package."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from evalstress.analyses.preference import (
    PreferenceTest,
    nominal_alpha,
    pick_from_scores,
    pick_from_verdicts,
    preference_agreement,
)


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_picks_from_scores_and_from_verdicts_in_both_orders() -> None:
    assert pick_from_scores(0.7, 0.2) == "a" and pick_from_scores(0.2, 0.7) == "b"
    assert pick_from_scores(0.2, 0.7, higher_is_better=False) == "a"  # an error rate
    assert pick_from_scores(3.0, 3.0) == "tie" and pick_from_scores(None, 1.0) is None
    assert pick_from_scores(float("nan"), 1.0) is None
    assert pick_from_verdicts("a", "a") == "a" and pick_from_verdicts("tie", "tie") == "tie"
    assert pick_from_verdicts("a", "b") == "flip"  # it followed the slot
    assert pick_from_verdicts("a", None) is None


def test_a_small_file_counted_by_hand() -> None:
    # 8 pairs on 5 items. People: a, b, a, tie, b, a, a, b.
    # Evaluator: a (hit), b (hit), tie (miss), a (people's tie: left out), None (no answer:
    # left out), flip (miss), a (hit), a (miss) -> 3 hits of 6 counted pairs.
    humans = ["a", "b", "a", "tie", "b", "a", "a", "b"]
    picks = ["a", "b", "tie", "a", None, "flip", "a", "a"]
    items = ["q1", "q1", "q2", "q2", "q3", "q4", "q5", "q5"]
    result = preference_agreement([PreferenceTest("m", "x", "preference", "pairwise", picks,
                                                  humans, items)], None, items, n_boot=400)
    row = result.rows[0]
    assert (row.pairs, row.agree, row.evaluator_ties, row.flips, row.missing,
            row.human_ties) == (6, 3, 1, 1, 1, 1)
    assert row.items == 4  # q3's one pair had no answer
    assert row.accuracy == pytest.approx(0.5)
    low, high = wilson_by_hand(3, 6)
    assert (row.ci_low, row.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert row.verdict == "inconclusive"  # 4 items: below 10 nothing is decided
    assert result.pairs == 8 and result.items == 5
    assert "no votes" in result.notes[0]


def test_the_item_interval_draws_items_with_all_their_pairs() -> None:
    # 12 items of 3 pairs each; the evaluator gets all three pairs of 10 items right and none
    # of the other 2: 30 of 36
    items = [f"q{i}" for i in range(12) for _ in range(3)]
    humans = ["a"] * 36
    picks = ["a"] * 30 + ["b"] * 6
    result = preference_agreement([PreferenceTest("m", "x", "h", "scores", picks, humans,
                                                  items)], None, items, n_boot=2000, seed=3)
    row = result.rows[0]
    # the bootstrap written out: items drawn with replacement, the share of their pairs
    draws = np.random.default_rng(3).integers(0, 12, (2000, 12))
    hits = np.array([3.0] * 10 + [0.0] * 2)
    boot = hits[draws].sum(axis=1) / 36
    assert row.item_low == pytest.approx(np.quantile(boot, 0.025))
    assert row.item_high == pytest.approx(np.quantile(boot, 0.975))
    # pairs of one item move together: the item interval is wider than Wilson's
    assert row.item_high - row.item_low > row.ci_high - row.ci_low
    # one test: no correction; the interval's lower end is above chance
    assert row.conf == pytest.approx(0.95) and row.low == row.item_low
    assert row.low > 0.5 and row.verdict == "agrees"


def test_holm_widens_the_interval_over_an_evaluators_tests() -> None:
    items = [f"q{i}" for i in range(20)]
    humans = ["a"] * 20
    weak = PreferenceTest("m", "x", "h", "scores", ["a"] * 12 + ["b"] * 8, humans, items)
    coin = PreferenceTest("m", "y", "h", "scores", ["a", "b"] * 10, humans, items)
    alone = PreferenceTest("n", "x", "h", "scores", ["a"] * 12 + ["b"] * 8, humans, items)
    result = preference_agreement([weak, coin, alone], None, items, n_boot=2000)
    rows = {(r.evaluator, r.aspect): r for r in result.rows}
    # Holm over m's two tests, neither rejected: each is read at 0.05 / 2
    assert rows[("m", "x")].conf == pytest.approx(0.975)
    assert rows[("m", "y")].conf == pytest.approx(0.975)
    assert rows[("n", "x")].conf == pytest.approx(0.95)  # n's one test stands alone
    # the same picks, a wider interval where it is one of two tests
    assert rows[("m", "x")].low < rows[("n", "x")].low
    assert rows[("m", "x")].high > rows[("n", "x")].high
    assert all(r.verdict == "inconclusive" for r in result.rows)
    # 0.6 observed: more items would settle it; exactly chance: no number of items would
    assert rows[("m", "x")].n_to_settle > 20 and rows[("m", "y")].n_to_settle is None


def test_an_evaluator_that_picks_the_rejected_output_disagrees() -> None:
    items = [f"q{i}" for i in range(15)]
    result = preference_agreement([PreferenceTest("m", "x", "h", "scores", ["b"] * 14 + ["a"],
                                                  ["a"] * 15, items)], None, items)
    assert result.rows[0].verdict == "disagrees" and result.rows[0].high < 0.5


def test_the_raters_alpha_equals_the_krippendorff_package() -> None:
    votes = [("a", "a", "b"), ("b", "b", None), ("a", "tie", "a"), ("b", "b", "b"),
             ("a", "b", None), ("tie", "tie", "tie"), ("a", "a", "a")]
    items = ["q1", "q1", "q2", "q3", "q3", "q4", "q5"]
    codes = {"a": 0.0, "b": 1.0, "tie": 2.0}
    reliability = np.array([[codes[v] if v else np.nan for v in (*t, None)[:3]]
                            for t in votes]).T
    expected = krippendorff.alpha(reliability_data=reliability,
                                  level_of_measurement="nominal")
    test = PreferenceTest("m", "x", "preference", "scores", ["a"] * 7,
                          ["a", "b", "a", "b", "a", "tie", "a"], items)
    result = preference_agreement([test], {"preference": votes}, items, n_boot=300)
    rater = result.raters[0]
    assert rater.alpha == pytest.approx(expected)
    assert (rater.raters, rater.pairs) == (3, 7)
    # rater pairs alike, by hand: 1/3, 1, 1/3, 1, 0, 1, 1 over the 7 pairs
    assert rater.agreement == pytest.approx((1 / 3 + 1 + 1 / 3 + 1 + 0 + 1 + 1) / 7)
    assert rater.ci_low is not None and rater.ci_low <= rater.ci_high
    assert not result.notes


def test_weighted_nominal_alpha_counts_a_unit_drawn_twice_twice() -> None:
    counts = np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [1.0, 0.0, 1.0]])
    doubled = np.array([[2.0, 1.0, 0.0], [2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [1.0, 0.0, 1.0]])
    reliability = np.array([[0, 0, 1], [0, 0, 1], [1, 1, np.nan], [0, 2, np.nan]]).T
    assert nominal_alpha(doubled, np.ones((1, 4)))[0] == pytest.approx(
        krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal"))
    assert nominal_alpha(counts, np.array([[2.0, 1.0, 1.0]]))[0] == pytest.approx(
        nominal_alpha(doubled, np.ones((1, 4)))[0])
