"""Four-way verdicts decided by intervals, shared by every method that asks "does the score move?".

A test is one oriented paired difference per example (positive = the variant scored worse; seeds
averaged inside their example, see `analyses.paired`) and a tolerance `delta > 0`, the smallest
change that counts. Its interval is a percentile bootstrap of the mean difference that resamples
EXAMPLES (seeded numpy Generator). The verdict is read off that interval:

- detects: the whole interval lies above +delta (the variant scores worse by more than delta);
- blind: the whole interval lies inside (-delta, +delta) (equivalence shown, as in TOST);
- reversed: the whole interval lies below -delta (the damaged text scores better);
- inconclusive: none of these; `n_to_settle` says how many examples would settle it.

Correction for the number of tests. Each test gets one p-value: the smallest a at which the
equal-tailed (1 - a) interval clears a decision boundary, i.e. 2 x min(share of bootstrap means
at or below +delta, share at or above -delta, larger of the shares beyond either boundary), each
share counted as (1 + k) / (1 + B). Holm's and Benjamini-Hochberg's procedures over all tests of a
result both reject exactly the p-values at or below one threshold, `alpha_eff` (Holm:
alpha / (m - k) with k rejections; BH: k alpha / m, alpha / m when none). Every test's interval
is then reported at level 1 - alpha_eff, and its verdict read off that interval, so the printed
interval always supports the verdict; a claim also needs p <= alpha_eff (the two can part only
at the edges: interpolated quantiles, or B too small to show so small a p, when the test stays
inconclusive and says so).

A claim can only be wrong when the interval misses the true mean, so each test's chance of a
false claim is at most alpha_eff (bootstrap coverage permitting); Holm bounds the chance of any
false claim in the result by alpha, BH the expected share of false claims.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from evalstress.analyses.stats import resample_index, resampled_means

Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bh", "none")
VERDICTS = ("detects", "blind", "reversed", "inconclusive")
N_BOOT = 2000
TOL_SHARE = 0.2  # default tolerance: this share of the originals' standard deviation
TOL_FLOOR = 1e-6  # relative floor when the originals do not vary (a constant score)
#: fewest examples whose percentile bootstrap interval decides a test: below it the resamples
#: take too few distinct values and the interval is too narrow (n = 3 has 10 distinct means)
MIN_N = 10
INTERVAL = "percentile bootstrap of the mean, resampling examples"
#: the most examples `n_to_settle` names: beyond it the effect is too small for any study to
#: settle and the 1/sqrt(n) extrapolation from the current interval means little; a test at
#: the cap reads "100,000 or more" (`settle_text`)
SETTLE_CAP = 100_000
POWER = 0.8  # of the smallest detectable change
MDE_RULE = ("the smallest true mean change a test of this n finds with 80% power: "
            "(z(1 - alpha_eff/2) + z(0.80)) x the bootstrap standard error of the mean "
            "change (mde: told apart from no change); mde_beyond_tolerance = tolerance + mde "
            "(called 'detects')")


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def benjamini_hochberg(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def adjust(pvalues: Sequence[float] | np.ndarray, correction: str) -> np.ndarray:
    """Adjusted p-values under `correction` (holm, bh or none)."""
    if correction == "holm":
        return holm(pvalues)
    if correction == "bh":
        return benjamini_hochberg(pvalues)
    if correction == "none":
        return np.minimum(np.asarray(pvalues, dtype=float), 1.0)
    raise ValueError(f"correction '{correction}' is unknown; choose one of {', '.join(CORRECTIONS)}")


def effective_alpha(pvalues: Sequence[float] | np.ndarray, alpha: float, correction: str) -> float:
    """The one per-test level at which `correction` rejects: p <= alpha_eff exactly when the
    adjusted p <= alpha (see the module docstring)."""
    p = np.sort(np.asarray(pvalues, dtype=float))
    m = p.size
    if m == 0 or correction == "none":
        adjust([], correction)  # an unknown name is still an error
        return alpha
    k = int(np.count_nonzero(adjust(p, correction) <= alpha))
    if correction == "holm":
        return alpha / (m - k) if k < m else alpha
    return k * alpha / m if k else alpha / m


@dataclass
class Boot:
    """The bootstrap distribution of one test's mean difference."""

    differences: np.ndarray  # oriented, one per example
    means: np.ndarray  # B resampled means

    @property
    def n(self) -> int:
        return int(self.differences.size)


def bootstrap_means(differences: Sequence[float] | np.ndarray, *, n_boot: int = N_BOOT,
                    seed: int | Sequence[int] = 0) -> Boot:
    """Resample the examples B times (numpy Generator seeded with `seed`); finite values only."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return Boot(d, np.empty(0))
    rng = np.random.default_rng(seed)
    return Boot(d, resampled_means(d, resample_index(rng, d.size, n_boot)))


def claim_pvalue(boot: Boot, delta: float, min_n: int = MIN_N) -> float:
    """The test's p-value: the smallest a at which the (1 - a) equal-tailed interval clears a
    boundary (1 below `min_n` examples: such a test cannot claim anything)."""
    if boot.n < max(2, min_n):
        return 1.0
    b = boot.means.size

    def share(count: int) -> float:
        return (1 + count) / (1 + b)

    detects = share(int(np.count_nonzero(boot.means <= delta)))
    reverse = share(int(np.count_nonzero(boot.means >= -delta)))
    blind = max(share(int(np.count_nonzero(boot.means <= -delta))),
                share(int(np.count_nonzero(boot.means >= delta))))
    return min(1.0, 2 * min(detects, reverse, blind))


def percentile_interval(boot: Boot, level: float) -> tuple[float, float] | None:
    """Equal-tailed percentile interval at `level`; None with fewer than 2 examples."""
    if boot.n < 2:
        return None
    tail = (1 - level) / 2
    low, high = np.quantile(boot.means, [tail, 1 - tail])
    return float(low), float(high)


def decide(low: float, high: float, delta: float) -> str:
    """detects, blind, reversed or inconclusive from an interval and the tolerance."""
    if low > delta:
        return "detects"
    if high < -delta:
        return "reversed"
    if -delta < low and high < delta:
        return "blind"
    return "inconclusive"


def n_to_settle(estimate: float, low: float, high: float, n: int, delta: float) -> int | None:
    """Examples at which the interval, its half-width shrinking as 1/sqrt(n) around the current
    estimate, would clear the nearest boundary, at most SETTLE_CAP; None ("never") on a
    boundary."""
    half = (high - low) / 2
    room = min(abs(estimate - delta), abs(estimate + delta))
    if room == 0 or not math.isfinite(room):
        return None
    if half <= room:
        return n
    return min(SETTLE_CAP, math.ceil(n * (half / room) ** 2))


def settle_text(need: int | None) -> str:
    """An undecided test's examples to settle it, in words: 'about 740 examples would settle
    it', '100,000 or more examples: the effect is too small to settle', or never."""
    if need is None:
        return "no sample size would settle it: an estimate sits on the tolerance"
    if need >= SETTLE_CAP:
        return f"{SETTLE_CAP:,} or more examples: the effect is too small to settle"
    return f"about {need:,} examples would settle it"


@dataclass
class Verdict:
    """One test's outcome, as written into results.json."""

    verdict: str  # detects | blind | reversed | inconclusive
    estimate: float | None  # mean oriented difference
    low: float | None
    high: float | None
    level: float  # of the interval: 1 - alpha_eff
    delta: float
    n: int
    pvalue: float
    n_to_settle: int | None = None  # inconclusive only; None = never (or not inconclusive)
    reason: str = ""
    se: float | None = None  # bootstrap standard error of the mean difference
    mde: float | None = None  # smallest detectable change at this n (`minimum_detectable`)
    mde_beyond_tolerance: float | None = None  # delta + mde: the smallest called "detects"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("estimate", "low", "high", "se", "mde", "mde_beyond_tolerance"):
            value = out[key]
            out[key] = value if value is not None and math.isfinite(value) else None
        return out


def standard_error(boot: Boot) -> float | None:
    """The bootstrap standard error of the mean: the spread of the resampled means."""
    return float(boot.means.std(ddof=1)) if boot.n >= 2 and boot.means.size >= 2 else None


def minimum_detectable(se: float | None, level: float, power: float = POWER) -> float | None:
    """The smallest true mean change a two-sided test at `level` (1 - alpha) detects with
    `power`, its estimate normal with standard error `se`: (z(1 - alpha/2) + z(power)) x se."""
    if se is None or not math.isfinite(se):
        return None
    z = NormalDist()
    return (z.inv_cdf(1 - (1 - level) / 2) + z.inv_cdf(power)) * se


def verdict_at(boot: Boot, delta: float, level: float, pvalue: float,
               min_n: int = MIN_N) -> Verdict:
    """The verdict of one test at an interval level fixed by the correction, with the
    smallest change it could detect at its n; inconclusive below `min_n` examples, its
    interval still shown."""
    found = _verdict_at(boot, delta, level, pvalue, min_n)
    found.se = standard_error(boot)
    found.mde = minimum_detectable(found.se, level)
    found.mde_beyond_tolerance = None if found.mde is None else delta + found.mde
    return found


def _verdict_at(boot: Boot, delta: float, level: float, pvalue: float, min_n: int) -> Verdict:
    if boot.n < 2:
        return Verdict("inconclusive", float(boot.differences.mean()) if boot.n else None,
                       None, None, level, delta, boot.n, pvalue, None,
                       "fewer than 2 examples: nothing to resample")
    estimate = float(boot.differences.mean())
    interval = percentile_interval(boot, level)
    assert interval is not None
    low, high = interval
    verdict = decide(low, high, delta)
    if boot.n < min_n:
        need = n_to_settle(estimate, low, high, boot.n, delta)
        return Verdict("inconclusive", estimate, low, high, level, delta, boot.n, pvalue,
                       None if need is None else max(min_n, need),
                       f"fewer than {min_n} examples: too few for a bootstrap interval to "
                       "decide")
    if verdict != "inconclusive" and pvalue > 1 - level + 1e-12:
        # the interval clears a boundary but the resamples cannot show p <= alpha_eff (the
        # smallest p of B resamples is 2 / (B + 1)): the correction has the last word
        return Verdict("inconclusive", estimate, low, high, level, delta, boot.n, pvalue, None,
                       f"p = {pvalue:.2g} from {boot.means.size} resamples is above the "
                       f"corrected level {1 - level:.2g}: more resamples (n_boot) may decide")
    need = n_to_settle(estimate, low, high, boot.n, delta) if verdict == "inconclusive" else None
    return Verdict(verdict, estimate, low, high, level, delta, boot.n, pvalue, need)


def decide_all(boots: Sequence[Boot], deltas: Sequence[float], *, alpha: float = 0.05,
               correction: str = "bh", min_n: int = MIN_N) -> tuple[list[Verdict], float]:
    """Verdicts of a result's tests, corrected together; returns them and alpha_eff."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie between 0 and 1, got {alpha}")
    for delta in deltas:
        if not delta > 0:
            raise ValueError(f"the tolerance must be above 0, got {delta}")
    pvalues = [claim_pvalue(b, d, min_n) for b, d in zip(boots, deltas, strict=True)]
    alpha_eff = effective_alpha(pvalues, alpha, correction)
    return ([verdict_at(b, d, 1 - alpha_eff, p, min_n)
             for b, d, p in zip(boots, deltas, pvalues, strict=True)], alpha_eff)


def default_tolerance(originals: Sequence[float] | np.ndarray, share: float = TOL_SHARE) -> float:
    """`share` of the standard deviation of the original scores over examples; when they do not
    vary (a constant score, one example), TOL_FLOOR x max(1, |mean|)."""
    x = np.asarray(originals, dtype=float)
    x = x[np.isfinite(x)]
    spread = float(x.std(ddof=1)) if x.size >= 2 else 0.0
    floor = TOL_FLOOR * max(1.0, abs(float(x.mean())) if x.size else 1.0)
    return max(share * spread, floor)


def ratio_interval(original: np.ndarray, variant: np.ndarray, level: float, *,
                   n_boot: int = N_BOOT, seed: int | Sequence[int] = 0
                   ) -> tuple[float, float, float] | None:
    """Relative change variant/original - 1 as a ratio of means, with its percentile interval
    over resampled examples: (estimate, low, high). Only for scores with a meaningful zero and
    no negative value, so the change cannot fall below -100%; None otherwise or when the
    originals' mean is 0."""
    g = np.asarray(original, dtype=float)
    v = np.asarray(variant, dtype=float)
    keep = np.isfinite(g) & np.isfinite(v)
    g, v = g[keep], v[keep]
    if g.size < 2 or (g < 0).any() or (v < 0).any() or g.mean() <= 0:
        return None
    rng = np.random.default_rng(seed)
    index = resample_index(rng, g.size, n_boot)
    gm = resampled_means(g, index)
    ok = gm > 0
    if not ok.any():
        return None
    ratios = resampled_means(v, index)[ok] / gm[ok]
    tail = (1 - level) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return float(v.mean() / g.mean() - 1), float(low - 1), float(high - 1)
