import itertools
import json

import numpy as np
import pytest
from scipy import stats

from evalstress.analyses.stats import (
    bootstrap_ci,
    combine_paper,
    correlation,
    discernment,
    discernment_ceiling,
    hmp_wilson,
    mean_ci,
    pairs_for_discernment,
    rank_biserial,
    wilcoxon_test,
)


def brute_force_p(d: np.ndarray) -> float:
    """Exact one-sided p of R+ by enumerating every sign assignment (mid-ranks, zeros dropped)."""
    d = d[d != 0]
    ranks = stats.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    hits = total = 0
    for signs in itertools.product([0, 1], repeat=d.size):
        total += 1
        hits += ranks[np.array(signs, dtype=bool)].sum() >= observed - 1e-9
    return hits / total


def test_exact_method_matches_scipy_without_ties():
    d = np.array([1.5, -0.2, 2.3, 0.7, 3.1, -0.9, 1.1, 0.4, 2.6, 1.9, -0.05, 0.8])
    res = wilcoxon_test(d)
    ref = stats.wilcoxon(d, alternative="greater", method="exact")
    assert res.method == "exact"
    assert res.pvalue == pytest.approx(ref.pvalue)
    assert res.statistic == pytest.approx(ref.statistic)


def test_ties_and_zeros_with_small_n_enumerate_all_sign_flips():
    d = np.array([1.0, 1.0, 2.0, -1.0, 0.0, 2.0, 3.0, 1.0])  # judge-like integer differences
    res = wilcoxon_test(d)
    assert res.method == "enumeration"
    assert (res.n, res.n_zero, res.n_tied) == (8, 1, 6)
    assert res.pvalue == pytest.approx(brute_force_p(d))


def test_large_samples_use_the_normal_approximation_with_tie_correction():
    rng = np.random.default_rng(3)
    d = rng.integers(-1, 3, 80).astype(float)
    res = wilcoxon_test(d)
    ref = stats.wilcoxon(d, alternative="greater", method="asymptotic", correction=False)
    assert res.method == "normal"
    assert res.pvalue == pytest.approx(ref.pvalue)


def test_all_zero_differences_give_p_one_and_d_zero():
    res = wilcoxon_test([0.0, 0.0, 0.0, 0.0])
    assert res.all_zero and res.pvalue == 1.0
    assert discernment(res.pvalue) == 0.0


def test_missing_differences_are_dropped_and_no_pairs_is_missing():
    res = wilcoxon_test([1.0, np.nan, 2.0, 3.0])
    assert res.n == 3
    empty = wilcoxon_test([np.nan])
    assert empty.pvalue is None and empty.n == 0 and discernment(empty.pvalue) is None


def test_paper_combination_by_hand():
    assert combine_paper([0.1, 0.2]) == pytest.approx(1 / 15)
    assert combine_paper([0.1, 0.2], [0.4, 0.6]) == pytest.approx(1 / 7)
    assert combine_paper([0.5, 0.02], [0.0, 1.0]) == pytest.approx(0.02)
    assert combine_paper([0.9, 0.9]) == pytest.approx(0.45)
    with pytest.raises(ValueError):
        combine_paper([0.1, 0.2], [0.0, 0.0])


def test_discernment_score_by_hand():
    assert discernment(0.05) == pytest.approx(1.0)
    assert discernment(0.0025) == pytest.approx(2.0)
    assert discernment(1 / 15) == pytest.approx(np.log(15) / np.log(20))


def test_wilson_hmp_is_calibrated_under_the_null():
    rng = np.random.default_rng(0)
    ps = np.array([hmp_wilson(rng.uniform(size=100)) for _ in range(1500)])
    assert np.mean(ps <= 0.05) == pytest.approx(0.05, abs=0.015)
    assert np.mean(ps <= 0.5) == pytest.approx(0.5, abs=0.04)


def test_wilson_hmp_equal_weights_default_and_small_p_dominates():
    p = [0.001, 0.5, 0.7, 0.9]
    assert hmp_wilson(p) == pytest.approx(hmp_wilson(p, [0.25] * 4))
    assert hmp_wilson(p) < 0.01 < hmp_wilson([0.3, 0.5, 0.7, 0.9])


def test_rank_biserial_by_hand():
    assert rank_biserial([1.0, 2.0, -3.0]) == pytest.approx((1 + 2 - 3) / 6)
    assert rank_biserial([0.0, 0.0]) is None


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_correlation_matches_scipy(method):
    x = [1.0, 2.0, 2.0, 4.0, 5.0, 3.5]
    y = [2.0, 1.0, 3.0, 5.0, 4.0, 4.0]
    ref = {"pearson": stats.pearsonr, "spearman": stats.spearmanr,
           "kendall": stats.kendalltau}[method](x, y).statistic
    assert correlation(x, y, method) == pytest.approx(ref)
    assert correlation([1, 1, 1], [1, 2, 3], method) is None


def test_bootstrap_intervals_are_seeded():
    x = np.arange(30, dtype=float)
    assert mean_ci(x, seed=4) == mean_ci(x, seed=4)
    low, high = mean_ci(x, seed=4)
    assert low < x.mean() < high
    ci = bootstrap_ci(lambda idx: float(x[idx].mean()), x.size, n_boot=200, seed=1)
    assert ci == bootstrap_ci(lambda idx: float(x[idx].mean()), x.size, n_boot=200, seed=1)


def test_a_means_interval_is_numpys_whole_matrix_percentiles_without_the_matrix() -> None:
    """mean_ci gathers its resamples in blocks; its interval is still the percentiles of
    numpy's whole (B x n) gather of the same seeded draws."""
    x = np.random.default_rng(11).normal(2.0, 1.0, 1000)
    index = np.random.default_rng(5).integers(0, x.size, (1000, x.size))
    expected = np.percentile(x[index].mean(axis=1), [2.5, 97.5])
    assert mean_ci(x, seed=5) == pytest.approx(tuple(expected), rel=1e-12)


def test_wilcoxon_result_serializes():
    res = wilcoxon_test([1.0, 2.0, 3.0])
    assert json.loads(json.dumps(res.to_dict()))["method"] == "exact"


def test_the_ceiling_of_d_for_n_pairs_by_hand():
    # D = log_0.05(2^-n) = n ln 2 / ln 20: 12 ln 2 / ln 20 = 8.3178 / 2.9957 = 2.7765,
    # 3 ln 2 / ln 20 = 2.0794 / 2.9957 = 0.6941, 4 pairs 0.9255, 5 pairs 1.1569
    assert discernment_ceiling(12) == pytest.approx(2.7765, abs=1e-4)
    assert discernment_ceiling(3) == pytest.approx(0.6941, abs=1e-4)
    assert discernment_ceiling(4) < 1 < discernment_ceiling(5)
    assert discernment_ceiling(8) < 2 < discernment_ceiling(9)  # 1.851 and 2.082
    assert discernment_ceiling(0) == 0.0
    # D = 1 needs 2^-n <= 0.05: n >= log2(20) = 4.32, so 5; D = 2 needs 2^-n <= 0.0025:
    # n >= log2(400) = 8.64, so 9; at alpha = 0.01, D = 1 needs n >= log2(100) = 6.64, so 7
    assert (pairs_for_discernment(1.0), pairs_for_discernment(2.0)) == (5, 9)
    assert pairs_for_discernment(1.0, alpha=0.01) == 7


@pytest.mark.parametrize("n", [1, 3, 5, 12, 20])
def test_the_ceiling_is_scipys_exact_p_of_n_distinct_positive_differences(n):
    d = np.arange(1, n + 1, dtype=float)  # all positive, no ties: R+ is the largest possible
    exact = stats.wilcoxon(d, alternative="greater", method="exact").pvalue
    assert exact == pytest.approx(2.0 ** -n)
    assert discernment(exact) == pytest.approx(discernment_ceiling(n))
    assert discernment(wilcoxon_test(d).pvalue) == pytest.approx(discernment_ceiling(n))


@pytest.mark.parametrize("d", [
    [1.0] * 6,  # ties only: enumerated, still one sign vector of 2^6 at the top
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],  # a zero, dropped: the exact minimum is 2^-5
    [1.0, 1.0, 2.0, 2.0, 3.0] * 3,  # 15 tied pairs: the normal approximation
    list(np.arange(1.0, 61.0)),  # 60 pairs without ties: the normal approximation
])
def test_zeros_and_ties_never_let_d_pass_the_ceiling_of_n(d):
    n = len(d)
    assert discernment(wilcoxon_test(np.array(d)).pvalue) <= discernment_ceiling(n) + 1e-9
