"""Statistics shared by the analyses: Wilcoxon tests, p-value combination, D scores, bootstrap
confidence intervals and correlations.

Every choice that changes a number is a named argument and is written into the results:

- Wilcoxon signed-rank (`wilcoxon_test`): differences exactly 0 are dropped before ranking
  (`zero_method="wilcox"`, scipy's default and what paper 003 ran; "pratt" and "zsplit" are
  offered); tied |differences| get mid-ranks. The p-value is computed *exactly* when no zeros
  and no ties remain and n <= 50; with zeros or ties and n <= 13 by full enumeration of all
  2^n sign flips (an exact conditional test; scipy's `PermutationMethod` with enough resamples
  enumerates them all); otherwise by the normal approximation with tie and zero corrections and
  no continuity correction (scipy defaults). This is scipy 1.17's "auto" rule, fixed here so a
  scipy upgrade cannot change results silently. When every difference is 0 there is no evidence
  of any shift: the p-value is 1 (flagged `all_zero`), not an error.
- Combination of p-values (`combine_paper`): exactly paper 003's formula,
  p = 1 / sum_j (w_j / p_j), with w_j = 1 (no weights) or the expert weights. Note it is *not*
  the harmonic mean itself (that would be M / sum 1/p_j): the paper's unweighted p is the
  harmonic mean divided by M. `hmp_wilson` gives Wilson's (2019) asymptotically exact p-value
  of the weighted harmonic mean p instead, from the Landau distribution.
- D = log_0.05(p) (`discernment`): 1 at p = 0.05, 0 at p = 1, higher is better.
- Ceiling of D (`discernment_ceiling`): with n pairs the smallest one-sided p the signed-rank
  test can return is 2^-n (exact test, n distinct positive differences), so D <= n ln 2 / ln 20
  at alpha = 0.05. Under the rules above this bounds every sample of n pairs: zeros are
  dropped (the exact minimum is 2^-(n - zeros)); ties, where enumerated, still leave one sign
  vector of 2^n at the top; the normal approximation (n > 13 with ties or zeros) gives a larger
  p than 2^-n. The bound is thus an upper bound on D, reached exactly without zeros or ties.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

# scipy.stats is imported where it is used: its import is slow (bench/README.md, "Figures behind
# the code"), and a command that never tests anything (--help, a dry run) should not pay it

Alternative = Literal["greater", "less", "two-sided"]
ZeroMethod = Literal["wilcox", "pratt", "zsplit"]
CorrelationMethod = Literal["pearson", "spearman", "kendall"]
CORRELATIONS: tuple[CorrelationMethod, ...] = ("pearson", "spearman", "kendall")

EXACT_MAX_N = 50  # exact null distribution without ties or zeros up to this many pairs
ENUMERATE_MAX_N = 13  # with ties or zeros, enumerate all 2^n sign flips up to this many pairs


@dataclass
class WilcoxonResult:
    """One signed-rank test on paired differences (first minus second)."""

    statistic: float | None  # sum of the ranks of positive differences (R+)
    pvalue: float | None
    n: int  # pairs tested (after missing values were excluded)
    n_zero: int  # pairs whose difference is exactly 0
    n_tied: int  # nonzero |differences| that share their value with another
    method: str  # exact | enumeration | normal | none
    zero_method: str
    alternative: str
    all_zero: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return array[np.isfinite(array)]


def wilcoxon_test(differences: Sequence[float] | np.ndarray, *,
                  alternative: Alternative = "greater",
                  zero_method: ZeroMethod = "wilcox") -> WilcoxonResult:
    """Signed-rank test that the differences are centred above 0 (alternative="greater").

    Non-finite differences (a missing score on either side) are dropped; count them before
    calling. See the module docstring for the zero, tie and method rules.
    """
    from scipy import stats

    d = _finite(differences)
    n = int(d.size)
    n_zero = int(np.count_nonzero(d == 0))
    nonzero = np.abs(d[d != 0])
    _, counts = np.unique(nonzero, return_counts=True)
    n_tied = int(counts[counts > 1].sum())
    if n == 0:
        return WilcoxonResult(None, None, 0, 0, 0, "none", zero_method, alternative,
                              note="no pairs to test")
    if n_zero == n:
        return WilcoxonResult(0.0, 1.0, n, n_zero, 0, "none", zero_method, alternative,
                              all_zero=True, note="every difference is 0: no shift, p = 1")
    method: Any
    if n_zero == 0 and n_tied == 0 and n <= EXACT_MAX_N:
        method, label = "exact", "exact"
    elif n <= ENUMERATE_MAX_N:
        method, label = stats.PermutationMethod(n_resamples=2 ** n + 1), "enumeration"
    else:
        method, label = "asymptotic", "normal"
    result = stats.wilcoxon(d, zero_method=zero_method, alternative=alternative, method=method,
                            correction=False)
    statistic = _r_plus(d, zero_method)
    return WilcoxonResult(statistic, float(result.pvalue), n, n_zero, n_tied, label, zero_method,
                          alternative)


def _r_plus(d: np.ndarray, zero_method: str) -> float:
    """R+ as scipy ranks it (zeros dropped for "wilcox"), reported whatever the alternative."""
    from scipy import stats

    values = d[d != 0] if zero_method == "wilcox" else d
    ranks = stats.rankdata(np.abs(values))
    r_plus = float(ranks[values > 0].sum())
    if zero_method == "zsplit":
        r_plus += float(ranks[values == 0].sum()) / 2
    return r_plus


def rank_biserial(differences: Sequence[float] | np.ndarray) -> float | None:
    """Matched-pairs rank-biserial correlation (R+ - R-) / (R+ + R-) over nonzero differences.

    A scale-free effect size in [-1, 1]: +1 when every nonzero difference is positive. None when
    no difference is nonzero.
    """
    from scipy import stats

    d = _finite(differences)
    d = d[d != 0]
    if d.size == 0:
        return None
    ranks = stats.rankdata(np.abs(d))
    total = float(ranks.sum())
    return float((ranks[d > 0].sum() - ranks[d < 0].sum()) / total)


def cohens_dz(differences: Sequence[float] | np.ndarray) -> float | None:
    """Mean difference over the standard deviation of the differences (paired Cohen's d)."""
    d = _finite(differences)
    if d.size < 2:
        return None
    sd = float(d.std(ddof=1))
    if sd == 0:
        return None
    return float(d.mean() / sd)


def combine_paper(pvalues: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """Paper 003's combined p: 1 / sum_j (w_j / p_j), w_j = 1 without expert weights.

    Zero weights drop a p-value. Raises ValueError on an empty input or all-zero weights.
    """
    p = np.asarray(pvalues, dtype=float)
    w = np.ones_like(p) if weights is None else np.asarray(weights, dtype=float)
    if p.size == 0 or p.shape != w.shape:
        raise ValueError("combine_paper needs as many weights as p-values, and at least one")
    if np.any(w < 0) or not np.any(w > 0):
        raise ValueError("weights must be non-negative with at least one positive")
    if np.any((p <= 0) | (p > 1)):
        raise ValueError(f"p-values must lie in (0, 1]: {p.tolist()}")
    return float(min(1.0, 1.0 / float(np.sum(w / p))))


def hmp_wilson(pvalues: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """Wilson's asymptotically exact p-value of the weighted harmonic mean p-value.

    HMP = sum(w) / sum(w / p) with weights summing to 1 (equal by default); under the null
    1/HMP follows a Landau (stable, alpha = 1, beta = 1) law with location
    log L + 1 + digamma(1) - log(2/pi) and scale pi/2 (Wilson 2019; harmonicmeanp). The p-value
    is sum(w) * P(Landau > 1/HMP), capped at 1.
    """
    from scipy import stats
    from scipy.special import digamma

    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        raise ValueError("hmp_wilson needs at least one p-value")
    w = np.full(p.size, 1.0 / p.size) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != p.shape or np.any(w < 0) or not np.any(w > 0):
        raise ValueError("weights must be non-negative, one per p-value, at least one positive")
    if np.any((p <= 0) | (p > 1)):
        raise ValueError(f"p-values must lie in (0, 1]: {p.tolist()}")
    w_sum = float(w.sum())
    hmp = w_sum / float(np.sum(w / p))
    size = p.size
    location = math.log(size) + 1 + float(digamma(1)) - math.log(2 / math.pi)
    tail = float(stats.levy_stable.sf(1.0 / hmp, 1.0, 1.0, loc=location, scale=math.pi / 2))
    return float(min(1.0, w_sum * tail))


def discernment(p: float | None, alpha: float = 0.05) -> float | None:
    """D = log_alpha(p): 1 at p = alpha, 0 at p = 1; None for a missing p."""
    if p is None or not math.isfinite(p):
        return None
    if p <= 0:
        return math.inf
    return math.log(p) / math.log(alpha)


def discernment_ceiling(n: int, alpha: float = 0.05) -> float:
    """The largest D a one-sided signed-rank test on n pairs can give: log_alpha(2^-n)."""
    return max(n, 0) * math.log(2) / math.log(1 / alpha)


def pairs_for_discernment(d: float, alpha: float = 0.05) -> int:
    """The fewest pairs whose ceiling reaches D = d: the smallest n with 2^-n <= alpha^d (5 for
    D = 1 and 9 for D = 2 at alpha = 0.05)."""
    return max(1, math.ceil(d * math.log(1 / alpha) / math.log(2) - 1e-12))


def bootstrap_ci(statistic: Callable[[np.ndarray], float], n_units: int, *, n_boot: int = 1000,
                 level: float = 0.95, seed: int = 0) -> tuple[float | None, float | None]:
    """Percentile interval of `statistic(indices)` over resamples of n_units with replacement.

    Resamples whose statistic is not finite (e.g. a constant column) are dropped; None when
    fewer than half of them are usable.
    """
    if n_units < 2 or n_boot < 1:
        return None, None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        value = statistic(rng.integers(0, n_units, n_units))
        if value is not None and math.isfinite(value):
            values.append(value)
    if len(values) < n_boot / 2:
        return None, None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def resample_index(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """B resamples of n positions: numpy's default int64 draws (the same stream, the same
    values) held as int32, half the memory, where n allows."""
    return rng.integers(0, n, (n_boot, n), dtype=np.int32 if n < 2**31 else np.int64)


#: resamples gathered at a time by `resampled_means`
GATHER_ROWS = 256


def resampled_means(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """`values[index].mean(axis=1)`, the same numbers, gathered GATHER_ROWS resamples at a
    time: the whole (B x n) matrix of gathered values was the largest allocation of a
    1,000-example run's analyses (three of them for a ratio of means)."""
    means = np.empty(index.shape[0])
    for start in range(0, index.shape[0], GATHER_ROWS):
        means[start:start + GATHER_ROWS] = values[index[start:start + GATHER_ROWS]].mean(axis=1)
    return means


def mean_ci(values: Sequence[float] | np.ndarray, *, n_boot: int = 1000, level: float = 0.95,
            seed: int = 0) -> tuple[float | None, float | None]:
    """Bootstrap percentile interval of a mean (vectorised)."""
    x = _finite(values)
    if x.size < 2:
        return None, None
    rng = np.random.default_rng(seed)
    means = resampled_means(x, resample_index(rng, x.size, n_boot))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def correlation(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                method: CorrelationMethod) -> float | None:
    """Pearson, Spearman or Kendall tau-b (scipy); None when undefined (constant input, n < 3)."""
    from scipy import stats

    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    if method == "pearson":
        value = stats.pearsonr(a, b).statistic
    elif method == "spearman":
        value = stats.spearmanr(a, b).statistic
    elif method == "kendall":
        # the statistic alone: an exact p-value (scipy's default for small n) costs 100x
        value = stats.kendalltau(a, b, method="asymptotic").statistic
    else:
        raise ValueError(f"unknown correlation '{method}'; choose {', '.join(CORRELATIONS)}")
    value = float(value)
    return value if math.isfinite(value) else None


def clean(value: float | None) -> float | None:
    """A float for JSON: NaN and infinities become None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


@contextlib.contextmanager
def quiet_empty_means() -> Iterator[None]:
    """Silence numpy's 'mean of empty slice' warnings inside: the correlations and the
    agreement block leave such cells NaN on purpose (a system or item without scores)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
