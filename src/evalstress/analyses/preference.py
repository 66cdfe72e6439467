"""Agreement of an evaluator with explicit human preferences: pairs of outputs of one input,
and the output people preferred (`core.preferences`).

The evaluator's pick of each pair comes from one of two readings:
- scores: a pointwise evaluator scores both outputs; the higher score is its pick (the lower
  one where lower is better), equal scores a tie;
- pairwise: a judge is shown the pair in both orders; a verdict that holds in both is its
  pick, a verdict that changes with the order is a flip.

Accuracy is the share of the pairs people did not call a tie that the evaluator picks as they
did. Its own ties and flips count as misses (a judge that follows the slot has no
preference); a pair it gave no answer for is left out and counted. Beside Wilson's 95%
interval, which treats the pairs as independent, a percentile bootstrap draws items (the
inputs the pairs belong to) with all their pairs: pairs of one input are not independent, so
Wilson's is too narrow wherever an item holds several.

Each test gets a p-value against chance (0.5) from its bootstrap distribution, and Holm's
correction runs over the tests of one evaluator (its aspects x the human aspects x the
readings); the verdict is read off the corrected item interval: agrees (above 0.5), disagrees
(below: it prefers what people reject), else inconclusive with the items that would settle it
at the same spread. Below MIN_N items nothing is decided.

Where the data gives the raters' votes, their agreement among themselves stands beside it:
Krippendorff's alpha (nominal: a, b, tie; raters as coders, pairs as units) with a percentile
interval drawing items, and the share of rater pairs that chose alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from evalstress.analyses.agreement import draw_weights, percentiles
from evalstress.analyses.stats import clean
from evalstress.analyses.verdicts import MIN_N, effective_alpha, n_to_settle
from evalstress.core.proportions import wilson

N_BOOT = 2000
ALPHA = 0.05
CHANCE = 0.5
#: the codes of the choices in the raters' alpha
CODES = {"a": 0, "b": 1, "tie": 2}
READINGS = {"scores": "the evaluator scores both outputs; the higher score is its pick",
            "pairwise": "the judge compares the two outputs, asked in both orders; a verdict "
                        "that changes with the order is a flip and counts as a miss"}


def pick_from_scores(score_a: float | None, score_b: float | None,
                     higher_is_better: bool = True) -> str | None:
    """'a', 'b' or 'tie' from the two outputs' scores; None where either is missing."""
    if score_a is None or score_b is None or not (math.isfinite(score_a)
                                                  and math.isfinite(score_b)):
        return None
    if score_a == score_b:
        return "tie"
    return "a" if (score_a > score_b) == higher_is_better else "b"


def pick_from_verdicts(ab: str | None, ba: str | None) -> str | None:
    """The judge's pick from its verdicts with a shown first and with b shown first ('a',
    'b' or 'tie' each): the verdict where both agree, 'flip' where they differ, None where
    either is missing."""
    if ab is None or ba is None:
        return None
    return ab if ab == ba else "flip"


@dataclass
class PreferenceTest:
    """One evaluator aspect against one human aspect, by one reading: its pick and the human
    preference of each pair, and the pair's item."""

    evaluator: str
    aspect: str
    human: str
    reading: str  # scores | pairwise
    picks: Sequence[str | None]  # a | b | tie | flip | None (no answer)
    humans: Sequence[str]  # a | b | tie
    items: Sequence[str]


@dataclass
class PreferenceRow:
    evaluator: str
    aspect: str
    human: str
    reading: str
    pairs: int  # pairs counted: people preferred one output, the evaluator answered
    agree: int
    evaluator_ties: int
    flips: int  # pairwise: verdicts that changed with the order (misses)
    missing: int  # pairs without an answer, left out
    human_ties: int  # pairs people called a tie, left out
    items: int  # items holding the counted pairs (the unit the bootstrap draws)
    accuracy: float | None
    ci_low: float | None  # Wilson 95%
    ci_high: float | None
    item_low: float | None  # 95% percentile interval drawing items
    item_high: float | None
    pvalue: float
    conf: float  # the corrected interval's level, 1 - alpha_eff
    low: float | None  # the corrected item interval the verdict is read from
    high: float | None
    verdict: str  # agrees | disagrees | inconclusive
    n_to_settle: int | None = None


@dataclass
class RaterRow:
    human: str
    raters: int  # the most votes any pair has
    pairs: int  # pairs with at least two votes
    alpha: float | None  # Krippendorff, nominal
    ci_low: float | None  # 95% percentile, items drawn
    ci_high: float | None
    agreement: float | None  # share of rater pairs choosing alike, mean over pairs


@dataclass
class PreferenceResult:
    rows: list[PreferenceRow]
    raters: list[RaterRow]
    pairs: int
    items: int
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis": "preference",
            "pairs": self.pairs, "items": self.items,
            "method": {
                "readings": {k: v for k, v in READINGS.items()
                             if any(r.reading == k for r in self.rows)},
                "accuracy": "the share of pairs people did not call a tie that the evaluator "
                            "picks as they did; its ties and flips count as misses, pairs "
                            "without an answer are left out",
                "interval": f"Wilson 95% (pairs as independent) and a 95% percentile "
                            f"bootstrap drawing items with all their pairs ({self.n_boot} "
                            f"resamples, seed {self.seed})",
                "correction": "Holm over the tests of each evaluator (its aspects x the human "
                              "aspects x the readings); the verdict is read off the "
                              "corrected item interval against chance (0.5)",
                "raters": "Krippendorff's alpha (nominal: a, b, tie) of the raters' votes, "
                          "items drawn; and the share of rater pairs that chose alike",
            },
            "rows": [_plain(r) for r in self.rows],
            "raters": [_plain(r) for r in self.raters],
            "notes": self.notes,
        }


def _plain(row: Any) -> dict[str, Any]:
    return {k: clean(v) if isinstance(v, float) else v for k, v in asdict(row).items()}


def chance_pvalue(boot: np.ndarray, n: int) -> float:
    """Two-sided bootstrap p-value of 'accuracy is chance (0.5)'; 1 below MIN_N items."""
    finite = boot[np.isfinite(boot)]
    if n < MIN_N or finite.size < boot.size / 2:
        return 1.0
    below = (1 + np.count_nonzero(finite <= CHANCE)) / (1 + finite.size)
    above = (1 + np.count_nonzero(finite >= CHANCE)) / (1 + finite.size)
    return float(min(1.0, 2 * min(below, above)))


@dataclass
class Counted:
    """One test's counts, per pair and per item, before the correction."""

    test: PreferenceTest
    agree: int
    pairs: int
    ties: int
    flips: int
    missing: int
    human_ties: int
    items: int
    boot: np.ndarray


def count(test: PreferenceTest, index: Mapping[str, int], draws: np.ndarray) -> Counted:
    """The counts of one test and its bootstrap distribution (items drawn by `draws`)."""
    picks = np.array([p or "" for p in test.picks], dtype=object)
    humans = np.array(list(test.humans), dtype=object)
    answered = np.array([p is not None for p in test.picks], dtype=bool)
    decided = humans != "tie"
    counted = decided & answered
    hits = counted & (picks == humans)
    where = np.array([index[i] for i in test.items], dtype=int)
    n_item = np.bincount(where[counted], minlength=len(index)).astype(float)
    agree_item = np.bincount(where[hits], minlength=len(index)).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = agree_item[draws].sum(axis=1) / n_item[draws].sum(axis=1)
    return Counted(test, int(hits.sum()), int(counted.sum()),
                   int((counted & (picks == "tie")).sum()),
                   int((counted & (picks == "flip")).sum()), int((decided & ~answered).sum()),
                   int((~decided).sum()), int((n_item > 0).sum()), boot)


def corrected_rows(tests: Sequence[Counted]) -> list[PreferenceRow]:
    """The rows of one evaluator's tests, Holm-corrected together."""
    pvalues = [chance_pvalue(c.boot, c.items) for c in tests]
    alpha_eff = effective_alpha(pvalues, ALPHA, "holm") if tests else ALPHA
    rows = []
    for c, p in zip(tests, pvalues, strict=True):
        accuracy = c.agree / c.pairs if c.pairs else None
        ci_low, ci_high = wilson(c.agree, c.pairs)
        item_low, item_high = percentiles(c.boot, 0.95)
        low, high = percentiles(c.boot, 1 - alpha_eff)
        verdict, need = "inconclusive", None
        if accuracy is not None and low is not None and high is not None:
            if c.items >= MIN_N:
                verdict = ("agrees" if low > CHANCE else "disagrees" if high < CHANCE
                           else "inconclusive")
            if verdict == "inconclusive":
                need = n_to_settle(accuracy - CHANCE, low - CHANCE, high - CHANCE,
                                   max(c.items, 1), 0.0)
                need = None if need is None else max(MIN_N, need)
        t = c.test
        rows.append(PreferenceRow(t.evaluator, t.aspect, t.human, t.reading, c.pairs, c.agree,
                                  c.ties, c.flips, c.missing, c.human_ties, c.items, accuracy,
                                  ci_low, ci_high, item_low, item_high, p, 1 - alpha_eff, low,
                                  high, verdict, need))
    return rows


def nominal_alpha(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Krippendorff's alpha, nominal, of (U, V) counts of each value in each unit, the units
    weighted by (B, U) `weights`: 1 - (n - 1) D_o / (n^2 - sum_c n_c^2), with D_o the sum over
    units of (m_u^2 - sum_c n_uc^2) / (m_u - 1); units with fewer than two values left out.
    Equals `krippendorff.alpha(..., level_of_measurement="nominal")` at weight 1."""
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m, weights = counts[pairable], m[pairable], weights[:, pairable]
    n_c = weights @ counts  # (B, V)
    n = n_c.sum(axis=1)
    unit = (m ** 2 - (counts ** 2).sum(axis=1)) / np.maximum(m - 1, 1)
    observed = weights @ unit
    expected = n ** 2 - (n_c ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((expected > 0) & (n > 1), 1 - (n - 1) * observed / expected, np.nan)


def rater_row(human: str, votes: Sequence[Sequence[str | None]], items: Sequence[str],
              index: Mapping[str, int], draws: np.ndarray) -> RaterRow:
    """The raters among themselves on one human aspect (votes: one tuple per pair)."""
    counts = np.zeros((len(votes), len(CODES)))
    for u, given in enumerate(votes):
        for v in given:
            if v is not None:
                counts[u, CODES[v]] += 1
    m = counts.sum(axis=1)
    pairable = m >= 2
    weights = draw_weights(draws, len(index))[:, [index[i] for i in items]]
    point = nominal_alpha(counts, np.ones((1, len(votes))))[0]
    boot = nominal_alpha(counts, weights)
    low, high = percentiles(boot, 0.95)
    with np.errstate(invalid="ignore", divide="ignore"):
        alike = ((counts * (counts - 1)).sum(axis=1) / (m * (m - 1)))[pairable]
    return RaterRow(human, int(max((len(v) for v in votes), default=0)), int(pairable.sum()),
                    clean(float(point)), low, high,
                    float(alike.mean()) if alike.size else None)


def preference_agreement(tests: Sequence[PreferenceTest],
                         votes: Mapping[str, Sequence[Sequence[str | None]]] | None = None,
                         items: Sequence[str] = (), *, n_boot: int = N_BOOT, seed: int = 0
                         ) -> PreferenceResult:
    """The preference block (see the module docstring). `items`: each pair's item, in the
    pairs' order (as every test lists them); `votes`: per human aspect, each pair's votes."""
    order = list(dict.fromkeys(items or (tests[0].items if tests else ())))
    index = {item: i for i, item in enumerate(order)}
    draws = np.random.default_rng(seed).integers(0, max(1, len(order)), (n_boot, len(order)))
    by_evaluator: dict[str, list[Counted]] = {}
    for test in tests:
        by_evaluator.setdefault(test.evaluator, []).append(count(test, index, draws))
    rows = [r for counted in by_evaluator.values() for r in corrected_rows(counted)]
    pairs = len(items) if items else (len(tests[0].items) if tests else 0)
    raters = [rater_row(h, given, items, index, draws) for h, given in (votes or {}).items()
              if sum(1 for v in given if sum(x is not None for x in v) >= 2) > 0]
    notes = [] if raters else ["the raters among themselves: not available: the data gives "
                               "one preference per pair (no votes)"]
    return PreferenceResult(rows, raters, pairs, len(order), n_boot, seed, notes)
