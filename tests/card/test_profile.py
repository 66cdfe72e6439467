"""The card's change figures: the relative drop is a ratio of means bootstrapped over examples,
so it stays inside the score's range, and it is absent where the score has no meaningful zero."""

from __future__ import annotations

import numpy as np
import pytest

from evalstress.card.profile import change_figures, relative_drop


def test_a_score_bounded_at_zero_never_loses_more_than_all_of_itself() -> None:
    # every variant scores 0: the drop is exactly 100% in every resample (a fixed denominator
    # put the upper bound at 10 / 5.5 = 182%)
    originals, variants = np.array([1.0, 10.0]), np.array([0.0, 0.0])
    figures = change_figures(originals - variants, originals, variants, True)
    assert (figures["relative_change"], figures["relative_ci_low"],
            figures["relative_ci_high"]) == (1.0, 1.0, 1.0)


def test_the_relative_drop_is_the_ratio_of_means_in_the_metric_s_direction() -> None:
    # lower is better (TER): 140 / 180 - 1 = -2/9, the variants scored better
    change, low, high = relative_drop(np.array([80.0, 100.0]), np.array([60.0, 80.0]), False)
    assert change == pytest.approx(-2 / 9)
    assert low is not None and high is not None and low <= change <= high
    # higher is better: 1 - (1 + 1) / (2 + 4) = 2/3 of the score lost
    assert relative_drop(np.array([2.0, 4.0]), np.array([1.0, 1.0]), True)[0] == \
        pytest.approx(2 / 3)


def test_a_score_with_negative_values_gets_no_percentage() -> None:
    originals, variants = np.array([-20.0, -30.0, -25.0]), np.array([-40.0, -35.0, -50.0])
    figures = change_figures(-(originals - variants) * -1, originals, variants, True)
    assert figures["relative_change"] is None and figures["relative_ci_low"] is None
    assert figures["change"] == pytest.approx(np.mean(originals - variants))


def test_pairs_of_one_example_are_resampled_together() -> None:
    # two perturbations pooled over the same two examples: the clustered ratio is the ratio of
    # the sums, and resampling the two examples (not four pairs) gives exactly three values
    originals = np.array([1.0, 3.0, 1.0, 3.0])
    variants = np.array([0.0, 3.0, 1.0, 3.0])
    change, low, high = relative_drop(originals, variants, True,
                                      clusters=np.array(["a", "b", "a", "b"]))
    assert change == pytest.approx(1 - 7 / 8)
    # resampled example sets: {a, a} -> 1 - 1/2, {a, b} -> 1/8, {b, b} -> 0
    assert low == pytest.approx(0.0) and high == pytest.approx(0.5)


def test_the_interval_is_mean_ci_s_and_each_row_states_its_smallest_detectable_change() -> None:
    from scipy import stats

    from evalstress.analyses.stats import mean_ci

    rng = np.random.default_rng(5)
    originals = rng.uniform(10, 20, 40)
    variants = originals - rng.normal(1.0, 2.0, 40)
    figures = change_figures(originals - variants, originals, variants, True)
    # the same resamples as the card's earlier interval of the mean
    assert (figures["ci_low"], figures["ci_high"]) == pytest.approx(
        mean_ci(originals - variants, n_boot=1000, seed=0))
    plug_in = (originals - variants).std(ddof=0) / np.sqrt(40)
    assert figures["se"] == pytest.approx(plug_in, rel=0.1)
    assert figures["mde"] == pytest.approx(
        (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * figures["se"])
