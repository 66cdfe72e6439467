"""The criteria method's sequential rule: an item's PASS or FAIL settled before the last example.

The criteria analysis (`analyses.confusion`, paper 000) gives each item (evaluator aspect x
perturbation x severity) a binary verdict from the examples it scored: a directional item
(the aspect should move) PASSES when the one-sided Wilcoxon test is significant at `alpha` and
the rank-biserial r reaches `min_effect`; an invariance item (the aspect should stay) FAILS
when the two-sided test is significant and |r| reaches `min_effect`. Both verdicts read "the
item shows an effect" (E) against "it does not": E is a directional PASS and an invariance
FAIL, and an item without evidence gets the other verdict.

After each look of the sequential design (`analyses.sequential_verdicts`, kind "criteria") an
item settles when the examples so far already decide what the exhaustive analysis would say:

- E settles when the final analysis's own test on the examples seen is significant at `alpha`
  AND the repeated interval of r lies beyond `min_effect` (directional: its low end at or above
  it; invariance: wholly above it or wholly below -min_effect);
- not-E settles when that interval lies on the other side (directional: its high end below
  `min_effect`; invariance: inside (-min_effect, min_effect)), once the examples seen hold as
  many nonzero differences as the test needs to reach `alpha` at all (`nonzero_needed`: r
  leaves zeros out, so ten unchanged examples give an interval of no width that says nothing
  of a change in one example of ten);
- futility settles not-E when the chance that the exhaustive analysis on every example shows
  E is below `futility`: with enough nonzero differences, if the current r and share of
  nonzero differences hold (`effect_chance`); with fewer, the predictive chance that every
  example together holds enough of them (`reach_chance`).

The repeated interval is r +- z(1 - a_k/2) x the bootstrap standard error of r (examples
resampled, r recomputed per resample, an all-zero resample counting as r = 0), a_k the look's
O'Brien-Fleming share split over the tested items, as for the other kinds. A settled item's
verdict is the one the final analysis gives on the same examples (the significance is that
analysis's own test, and the point r lies inside its interval), so a unit that stops at that
look reports it; the interval at a_k makes the exhaustive analysis on every example land on the
same side of `min_effect` with chance at least 1 - a_k.

Futility's projection: the final r is normal around the current r with the variance the
unseen examples add, se^2 n (N - n) / N^2 (the blind-spot design's projection); the final test
is significant when r clears z / sqrt(3 n' (n' + 1) / (2 (2 n' + 1))), the signed-rank
statistic's normal form written in r (R+ - n'(n'+1)/4 = r n'(n'+1)/4), n' the nonzero
differences projected to N examples; with n' too few for any sign pattern to reach `alpha`
(2^-n' one-sided, 2^(1-n') two-sided) E is out of reach. Below the count the test needs, the
share of examples that change gets a uniform prior updated by the n seen, and the unseen
examples' nonzero count is beta-binomial (a predictive probability).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

from evalstress.analyses.stats import rank_biserial, resample_index, wilcoxon_test

RULE = ("after each look, per item: E (directional PASS, invariance FAIL) settles when the "
        "analysis's Wilcoxon test on the examples seen is significant at alpha and r +- "
        "z(1 - a_k/2) x its bootstrap standard error over examples lies beyond min_effect; "
        "not-E settles when that interval lies short of min_effect (invariance: inside "
        "(-min_effect, min_effect)) and the examples hold the nonzero differences the test "
        "needs to reach alpha; futility settles not-E when the chance that the exhaustive "
        "analysis shows E (if the current r holds; below that count, the predictive chance "
        "that enough examples change) is below `futility`; a_k = this "
        "look's O'Brien-Fleming share of interim_alpha divided by the number of tested items; "
        "items with no test settle at once; units open at the last look: the exhaustive "
        "analysis")


def bootstrap_rank_biserial(differences: np.ndarray, *, n_boot: int, seed: Any) -> np.ndarray:
    """The matched-pairs rank-biserial r of B resamples of the examples (zeros dropped inside
    each resample as `stats.rank_biserial` drops them; an all-zero resample gives 0)."""
    from scipy import stats as sps

    d = np.asarray(differences, dtype=float)
    rng = np.random.default_rng(seed)
    x = d[resample_index(rng, d.size, n_boot)]
    # zeros take the lowest (tied) ranks: less their count, a nonzero's rank among nonzeros
    ranks = sps.rankdata(np.abs(x), axis=1) - (x == 0).sum(axis=1, keepdims=True)
    positive = np.where(x > 0, ranks, 0.0).sum(axis=1)
    negative = np.where(x < 0, ranks, 0.0).sum(axis=1)
    total = positive + negative
    return np.divide(positive - negative, total, out=np.zeros_like(total), where=total > 0)


def nonzero_needed(alpha: float, two_sided: bool) -> int:
    """The fewest nonzero differences with which the signed-rank test can reach `alpha` at all:
    all of one sign gives p = 2^-k one-sided, 2^(1-k) two-sided (5 and 6 at 0.05)."""
    k = 1
    while 2.0 ** -k * (2 if two_sided else 1) >= alpha:
        k += 1
    return k


def reach_chance(nonzero: int, n: int, total: int, needed: int) -> float:
    """The chance that all `total` examples hold at least `needed` nonzero differences when
    `nonzero` of the n seen do: the unseen count is beta-binomial, the share of examples that
    change having a uniform prior (its posterior Beta(nonzero + 1, n - nonzero + 1))."""
    from scipy import stats as sps

    if nonzero >= needed:
        return 1.0
    if n >= total:
        return 0.0
    return float(sps.betabinom.sf(needed - nonzero - 1, total - n, nonzero + 1,
                                  n - nonzero + 1))


def significant_r(nonzero: float, alpha: float, two_sided: bool) -> float:
    """The smallest r at which the signed-rank test on `nonzero` differences is significant at
    `alpha` (normal form); above 1 when no sign pattern of that many can be."""
    if nonzero < 1 or 2.0 ** -nonzero * (2 if two_sided else 1) >= alpha:
        return math.inf
    z = NormalDist().inv_cdf(1 - (alpha / 2 if two_sided else alpha))
    return z / math.sqrt(3 * nonzero * (nonzero + 1) / (2 * (2 * nonzero + 1)))


def effect_chance(test: str, r: float, se: float, n: int, nonzero: int, total: int,
                  alpha: float, min_effect: float) -> float:
    """The chance that the exhaustive analysis on `total` examples shows an effect (directional
    PASS, invariance FAIL), if the n seen show its r, spread and share of nonzero differences."""
    if n >= total:
        return 1.0
    two_sided = test == "invariance"
    threshold = max(min_effect, significant_r(total * nonzero / n, alpha, two_sided))
    if not math.isfinite(threshold) or threshold > 1:
        return 0.0
    spread = se * math.sqrt(n * (total - n)) / total
    if spread <= 0:
        return 1.0 if (abs(r) if two_sided else r) >= threshold else 0.0
    norm = NormalDist(r, spread)
    chance = 1 - norm.cdf(threshold)
    return min(1.0, chance + norm.cdf(-threshold)) if two_sided else chance


def decide_item(differences: np.ndarray, test: str, *, level: float, total: int, alpha: float,
                min_effect: float, futility: float, n_boot: int, seed: Any
                ) -> dict[str, Any] | None:
    """An item's settled verdict after a look, with what settled it; None while it stays open
    (see the module docstring). `level` is the look's share a_k for this item."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    n = int(d.size)
    r = rank_biserial(d) or 0.0
    boot = bootstrap_rank_biserial(d, n_boot=n_boot, seed=seed)
    se = float(boot.std(ddof=1)) if boot.size >= 2 else 0.0
    z = NormalDist().inv_cdf(1 - level / 2)
    low, high = r - z * se, r + z * se
    two_sided = test == "invariance"
    pvalue = wilcoxon_test(d, alternative="two-sided" if two_sided else "greater").pvalue
    significant = pvalue is not None and pvalue < alpha
    record = {"test": test, "n": n, "r": r, "low": low, "high": high,
              "pvalue": pvalue, "level": 1 - level, "min_effect": min_effect}
    if two_sided:
        effect = significant and (low >= min_effect or high <= -min_effect)
        none = -min_effect < low and high < min_effect
    else:
        effect = significant and low >= min_effect
        none = high < min_effect
    verdict = {"directional": ("pass", "fail"), "invariance": ("fail", "pass")}[test]
    nonzero = int(np.count_nonzero(d))
    # with fewer nonzero differences than the test needs, r (and its bootstrap) says nothing
    # of the examples that change: none of 10 moving still leaves room for 1 in 10 that does
    needed = nonzero_needed(alpha, two_sided)
    if effect or (none and nonzero >= needed):
        return {"verdict": verdict[0] if effect else verdict[1], "reason": "settled", **record}
    chance = (effect_chance(test, r, se, n, nonzero, total, alpha, min_effect)
              if nonzero >= needed else reach_chance(nonzero, n, total, needed))
    if chance < futility:
        return {"verdict": verdict[1], "reason": "futility", "effect_chance": chance, **record}
    return None
