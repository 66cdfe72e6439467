from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalstress.analyses.verdicts import (
    adjust,
    benjamini_hochberg,
    bootstrap_means,
    claim_pvalue,
    decide,
    decide_all,
    default_tolerance,
    effective_alpha,
    holm,
    n_to_settle,
    ratio_interval,
    settle_text,
    verdict_at,
)


def test_holm_matches_a_hand_computation() -> None:
    # sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04 -> max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_benjamini_hochberg_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 1, 30), rng.uniform(0, 0.01, 10), [0.02, 0.02, 0.02]])
    assert benjamini_hochberg(p) == pytest.approx(stats.false_discovery_control(p, method="bh"))


def test_effective_alpha_by_hand() -> None:
    p = [0.001, 0.02, 0.04, 0.3]
    # Holm: 0.001 <= 0.05/4 rejected; 0.02 > 0.05/3 stops: one rejection, level 0.05/3
    assert effective_alpha(p, 0.05, "holm") == pytest.approx(0.05 / 3)
    # BH: 0.001 <= 0.0125, 0.02 <= 0.025, 0.04 > 0.0375, 0.3 > 0.05: k = 2, level 2 x 0.05/4
    assert effective_alpha(p, 0.05, "bh") == pytest.approx(0.025)
    assert effective_alpha(p, 0.05, "none") == 0.05
    assert effective_alpha([0.9, 0.8], 0.05, "bh") == pytest.approx(0.025)  # none: alpha/m
    assert effective_alpha([0.01, 0.02], 0.05, "holm") == pytest.approx(0.05)  # all rejected


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_effective_alpha_rejects_exactly_what_the_adjusted_p_values_reject(correction: str
                                                                           ) -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        p = np.concatenate([rng.uniform(0, 1, 20), rng.uniform(0, 0.005, rng.integers(0, 8))])
        level = effective_alpha(p, 0.05, correction)
        assert ((p <= level) == (adjust(p, correction) <= 0.05)).all()


def test_an_unknown_correction_is_an_error() -> None:
    with pytest.raises(ValueError, match="holm"):
        adjust([0.1], "bonf")


@pytest.mark.parametrize(("value", "expected"), [(0.5, "detects"), (0.0, "blind"),
                                                 (-0.5, "reversed")])
def test_constant_differences_decide_at_once(value: float, expected: str) -> None:
    boot = bootstrap_means([value] * 12, n_boot=500, seed=1)
    # every resample has the same mean: the interval is the point [value, value]
    verdict = verdict_at(boot, 0.1, 0.99, claim_pvalue(boot, 0.1))
    assert (verdict.low, verdict.high, verdict.verdict) == (value, value, expected)
    assert verdict.n == 12
    # a claim every resample supports has the smallest p of B resamples: 2 x 1 / (B + 1)
    assert verdict.pvalue == pytest.approx(2 / 501)


def test_a_two_example_bootstrap_can_be_enumerated() -> None:
    # d = (0, 1): a resample's mean is 0, 0.5 or 1 with chances 1/4, 1/2, 1/4, so a 95%
    # interval runs from 0 to 1 and straddles +-0.2
    boot = bootstrap_means([0.0, 1.0], n_boot=4000, seed=3)
    assert np.mean(boot.means == 0) == pytest.approx(0.25, abs=0.03)
    verdict = verdict_at(boot, 0.2, 0.95, claim_pvalue(boot, 0.2, min_n=2), min_n=2)
    assert (verdict.low, verdict.high, verdict.verdict) == (0.0, 1.0, "inconclusive")
    # half-width 0.5, nearest boundary 0.5 - 0.2 = 0.3 away: n = 2 x (0.5 / 0.3)^2 = 5.6 -> 6
    assert verdict.n_to_settle == 6


def test_too_few_examples_decide_nothing_however_clear() -> None:
    boot = bootstrap_means([0.5, 0.5, 0.5], seed=1)  # a point interval far beyond +0.1
    assert claim_pvalue(boot, 0.1) == 1.0  # it takes no share of the correction
    verdict = verdict_at(boot, 0.1, 0.95, 1.0)
    assert (verdict.low, verdict.high, verdict.verdict) == (0.5, 0.5, "inconclusive")
    assert verdict.n_to_settle == 10 and "fewer than 10" in verdict.reason


def test_n_to_settle_by_hand() -> None:
    # inside the tolerance: 0.05 from +0.1, half-width 0.2 at n = 10 -> 10 x (0.2/0.05)^2
    assert n_to_settle(0.05, -0.15, 0.25, 10, 0.1) == 160
    assert n_to_settle(0.1, -0.1, 0.3, 10, 0.1) is None  # on the boundary: never
    # below -0.1 by 0.2, half-width 0.3: 10 x (0.3 / 0.2)^2 = 22.5 -> 23
    assert n_to_settle(-0.3, -0.6, 0.0, 10, 0.1) == 23
    assert n_to_settle(-0.4, -0.6, -0.2, 10, 0.1) == 10  # already clear: the n it has


def test_an_estimate_next_to_the_tolerance_needs_a_capped_worded_number() -> None:
    # 0.0001 from +0.1, half-width 0.2 at n = 100: 100 x (0.2 / 0.0001)^2 = 400,000,000
    need = n_to_settle(0.0999, -0.1001, 0.2999, 100, 0.1)
    assert need == 100_000
    assert settle_text(need) == ("100,000 or more examples: the effect is too small to "
                                 "settle")
    assert settle_text(160) == "about 160 examples would settle it"
    assert settle_text(None).startswith("no sample size would settle it")


def test_decide_reads_the_interval() -> None:
    assert decide(0.11, 0.5, 0.1) == "detects"
    assert decide(-0.09, 0.09, 0.1) == "blind"
    assert decide(-0.5, -0.11, 0.1) == "reversed"
    assert decide(0.05, 0.5, 0.1) == "inconclusive"


def test_a_known_equivalent_case_is_blind_and_its_interval_is_the_normal_one() -> None:
    rng = np.random.default_rng(11)
    d = rng.normal(0.0, 0.05, 400)  # true mean 0, standard error 0.0025
    boot = bootstrap_means(d, n_boot=4000, seed=5)
    verdict = verdict_at(boot, 0.02, 0.95, claim_pvalue(boot, 0.02))
    assert verdict.verdict == "blind"
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert verdict.low == pytest.approx(d.mean() - 1.96 * se, abs=0.2 * se)
    assert verdict.high == pytest.approx(d.mean() + 1.96 * se, abs=0.2 * se)


def test_every_reported_interval_supports_its_verdict() -> None:
    rng = np.random.default_rng(2)
    boots = [bootstrap_means(rng.normal(mu, 0.3, 30), n_boot=1000, seed=i)
             for i, mu in enumerate(rng.uniform(-0.4, 0.4, 40))]
    verdicts, level = decide_all(boots, [0.1] * 40, alpha=0.05, correction="bh")
    assert 0.05 / 40 <= level <= 0.05
    for v in verdicts:
        assert v.level == pytest.approx(1 - level)
        assert decide(v.low, v.high, 0.1) == v.verdict  # type: ignore[arg-type]
    # the corrected intervals are wider: every claim they make, the uncorrected ones make too
    plain, _ = decide_all(boots, [0.1] * 40, alpha=0.05, correction="none")
    assert all(p.verdict == v.verdict for p, v in zip(plain, verdicts, strict=True)
               if v.verdict != "inconclusive")


def test_one_example_is_inconclusive_with_a_reason() -> None:
    verdict = verdict_at(bootstrap_means([0.4]), 0.1, 0.95, 1.0, min_n=2)
    assert verdict.verdict == "inconclusive" and "fewer than 2" in verdict.reason


def test_default_tolerance_is_a_share_of_the_originals_spread() -> None:
    # sd (n - 1) of 1, 2, 3, 4 is sqrt(5/3) = 1.2910
    assert default_tolerance([1, 2, 3, 4]) == pytest.approx(0.2 * math.sqrt(5 / 3))
    assert default_tolerance([1, 2, 3, 4], 0.5) == pytest.approx(0.5 * math.sqrt(5 / 3))
    assert default_tolerance([5.0, 5.0, 5.0]) == pytest.approx(5e-6)  # constant: the floor


def test_relative_change_is_a_ratio_of_means_inside_the_range() -> None:
    original = np.array([10.0, 20.0, 30.0, 40.0])
    change, low, high = ratio_interval(original, original / 2, 0.95)  # type: ignore[misc]
    assert (change, low, high) == pytest.approx((-0.5, -0.5, -0.5))
    # deleting everything: -100%, never beyond
    change, low, high = ratio_interval(original, np.zeros(4), 0.95)  # type: ignore[misc]
    assert (change, low, high) == pytest.approx((-1.0, -1.0, -1.0))
    # a ratio of means, not a mean of ratios: (1 + 30) / (1 + 10) - 1
    change, _, _ = ratio_interval(np.array([1.0, 10.0]), np.array([1.0, 30.0]), 0.95)  # type: ignore[misc]
    assert change == pytest.approx(31 / 11 - 1)
    # a negative score has no meaningful zero: no percentage
    assert ratio_interval(np.array([-3.0, -2.0]), np.array([-4.0, -3.0]), 0.95) is None


def test_each_test_states_the_smallest_change_it_could_detect_at_its_n() -> None:
    """The smallest detectable change: (z(1 - alpha/2) + z(0.8)) x the bootstrap SE, the SE
    close to the plug-in standard error of a mean, sd / sqrt(n) (scipy's normal quantiles as
    the reference)."""
    differences = np.linspace(-1.0, 3.0, 100)
    boot = bootstrap_means(differences, n_boot=20000, seed=3)
    verdict = verdict_at(boot, 0.5, 0.99, claim_pvalue(boot, 0.5))
    plug_in = differences.std(ddof=0) / np.sqrt(differences.size)
    assert verdict.se == pytest.approx(plug_in, rel=0.03)
    factor = stats.norm.ppf(0.995) + stats.norm.ppf(0.8)
    assert verdict.mde == pytest.approx(factor * verdict.se, rel=1e-9)
    assert verdict.mde_beyond_tolerance == pytest.approx(0.5 + factor * verdict.se, rel=1e-9)
    # four times the examples, half the smallest detectable change
    wide = bootstrap_means(np.repeat(differences, 4), n_boot=20000, seed=3)
    assert verdict_at(wide, 0.5, 0.99, 1.0).mde == pytest.approx(verdict.mde / 2, rel=0.05)
    assert set(verdict.to_dict()) >= {"se", "mde", "mde_beyond_tolerance"}


def test_resampled_means_are_numpys_whole_matrix_means_without_the_matrix() -> None:
    """The bootstrap's means and ratio interval are the numbers of numpy's whole (B x n)
    gather of its default int64 draws, to the last bit, without holding either: at 1,000
    examples and 2,000 resamples those draws are 16 MB and the gathered values another 16 MB
    (two more for a ratio of means), the peak of a 1,000-example run's analyses."""
    import tracemalloc

    rng = np.random.default_rng(7)
    original = rng.uniform(1.0, 5.0, 1000)
    variant = original * rng.uniform(0.5, 1.1, 1000)
    # reference: numpy's whole-matrix gather of the same seeded draws
    index = np.random.default_rng(3).integers(0, 1000, (2000, 1000))
    g_means, v_means = original[index].mean(axis=1), variant[index].mean(axis=1)
    low, high = np.quantile(v_means / g_means, [0.025, 0.975])
    del index
    draws = 2000 * 1000 * 4  # int32: numpy's int64 draws, the same values
    tracemalloc.start()
    try:
        boot = bootstrap_means(original, n_boot=2000, seed=3)
        one = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        got = ratio_interval(original, variant, 0.95, n_boot=2000, seed=3)
        ratio = tracemalloc.get_traced_memory()[1] - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert np.array_equal(boot.means, g_means)
    assert got == (float(variant.mean() / original.mean() - 1), float(low - 1),
                   float(high - 1))
    assert one < 1.5 * draws and ratio < 1.5 * draws  # the draws and a block, no gather
