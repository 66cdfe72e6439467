"""Agreement of an evaluator with human raters: Kendall's tau-b and Krippendorff's alpha
(ordinal) at item and system level, the share of human-ordered pairs it orders the same way,
and the raters' agreement among themselves beside it.

The data is a grid of items (documents) x outputs (systems), NaN where a score is missing:
the evaluator's score of each output and the human score (the mean of the raters where the
data gives several, as SummEval's published scores are the mean of three experts).

Levels, and the unit each interval resamples:
- item: tau-b across the outputs of each item, averaged over items (SummEval's "summary
  level"); the bootstrap draws items whole, with all their outputs. Data with one output per
  item (each example rated on its own) has no "within an item": tau-b is then taken across
  the items, and the bootstrap draws items.
- system: each system's mean over the items, then tau-b across the systems; the bootstrap
  draws items and recomputes the system means from each resample (the systems are the fixed
  set under study, the items the sample).

Alpha, an evaluator against humans: a metric's scores live on another scale than the
humans' 1-5, so alpha on the raw values would measure the distance between two scales, not
agreement. Both sides are first replaced by their ranks (average ranks for ties): within the
item at item level, across the systems at system level, across the items where each item has
one output; alpha (ordinal metric, the evaluator and the humans as two coders, the outputs as
units) is then computed on those ranks. Ordinal alpha reads a value only through its place in
the pooled order, so the rule treats a metric and a 1-5 judge alike. A side that ties every
output of an item ranks nothing there (the item is left out, as tau-b leaves it out): its
ranks would all sit at the middle, which alpha would read as near to anything. The raters among
themselves get the same rule, so the two lines compare.

Every statistic gets a p-value against "no agreement (0)" from its bootstrap distribution,
2 x the smaller share of resamples on either side of 0 (each counted (1 + k) / (1 + B)), and
Holm's correction over all the tests of one evaluator, level and statistic (its aspects x the
human aspects): each is reported with its 95% interval and with its interval at the corrected
level 1 - alpha_eff, from which its verdict is read (agrees: above 0; disagrees: below 0;
inconclusive: holds 0, with the items that would settle it at the same spread).

Pairs: outputs of the same item that the humans rate differently (ties left out) are pairs
with a known human preference; the accuracy is the share the evaluator orders the same way
(its own ties count as misses), with a Wilson interval and, beside it, a percentile interval
that draws items: pairs of one item share their item, so Wilson's, which treats them as
independent, is too narrow.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.stats import clean, quiet_empty_means
from evalstress.analyses.verdicts import MIN_N, effective_alpha, n_to_settle
from evalstress.core.proportions import wilson

LEVELS = ("item", "system")
STATISTICS = ("tau_b", "alpha")
N_BOOT = 2000
ALPHA = 0.05
#: tau-b rows are computed in blocks of at most this many pair cells (memory stays small)
PAIR_CELLS = 4_000_000
ONE_SCORE = "not available: the data gives one (averaged) score per output"
PAIRS_DERIVED = ("pairs derived from the human scores: two outputs of one item the humans rate "
                 "differently, ties left out")


def human_ratings(value: Any) -> list[float]:
    """The raters' scores of one output on one aspect: a number is one (possibly averaged)
    score, a list holds one per rater, in the raters' order (e.g. {"coherence": [2, 3, 3]});
    what is not a finite number (n/a, NaN, a flag) is NaN, so the raters keep their places."""
    items = value if isinstance(value, list | tuple) else [value]
    out = []
    for item in items:
        try:
            number = math.nan if isinstance(item, bool) else float(item)
        except (TypeError, ValueError):
            number = math.nan
        out.append(number if math.isfinite(number) else math.nan)
    return out


def is_rating(value: Any) -> bool:
    """Whether a field holds human scores: a number, or a list of numbers (one per rater)."""
    if isinstance(value, bool | str):
        return False
    if isinstance(value, list | tuple):
        return bool(value) and all(isinstance(v, int | float) and not isinstance(v, bool)
                                   for v in value)
    return isinstance(value, int | float)


def rating_mean(ratings: Sequence[float]) -> float | None:
    """The mean of the raters' finite scores (the human score the evaluator is compared
    with); None when there is none."""
    finite = [r for r in ratings if math.isfinite(r)]
    return sum(finite) / len(finite) if finite else None


def rating_rows(doc_id: Any, system_id: Any, given: Mapping[str, Sequence[float]]
                ) -> list[dict[str, Any]]:
    """Long rows (doc_id, system_id, human, rater, rating) of one output's raters, the
    `ratings` frame of `agreement`."""
    return [{"doc_id": doc_id, "system_id": system_id, "human": aspect, "rater": rater,
             "rating": value} for aspect, values in given.items()
            for rater, value in enumerate(values) if math.isfinite(value)]


def tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of two (B, n) arrays over the positions where both are
    finite (scipy's kendalltau with nan_policy='omit'); NaN where a row is constant or has
    fewer than 2 such positions."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[1], k=1)
    out = np.full(x.shape[0], np.nan)
    if i.size == 0:
        return out
    step = max(1, PAIR_CELLS // i.size)
    for start in range(0, x.shape[0], step):
        bx, by = x[start:start + step], y[start:start + step]
        ok = np.isfinite(bx) & np.isfinite(by)
        valid = ok[:, i] & ok[:, j]
        with np.errstate(invalid="ignore"):
            sx = np.where(valid, np.sign(bx[:, i] - bx[:, j]), 0.0)
            sy = np.where(valid, np.sign(by[:, i] - by[:, j]), 0.0)
        den = np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + step] = np.where(den > 0, (sx * sy).sum(axis=1) / den, np.nan)
    return out


def mean_pair_tau(values: np.ndarray) -> np.ndarray:
    """Tau-b of (B, n, C) coders' values, averaged over the pairs of coders (one pair: the
    evaluator and the humans)."""
    pairs = list(itertools.combinations(range(values.shape[-1]), 2))
    taus = np.stack([tau_b(values[..., a], values[..., b]) for a, b in pairs])
    with np.errstate(invalid="ignore"), quiet_empty_means():
        return np.nanmean(taus, axis=0)


def ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (1 = lowest) along the second-to-last axis of (..., n, C), per coder,
    among the finite values; NaN stays NaN. A coder that ties every unit there ranks nothing
    (NaN): its ranks would all sit at the middle, which ordinal alpha reads as close to every
    other value, a spurious agreement (tau-b leaves such an item out the same way)."""
    from scipy.stats import rankdata

    out = np.asarray(rankdata(values, axis=-2, nan_policy="omit"), dtype=float)
    with np.errstate(invalid="ignore"), quiet_empty_means():
        constant = ~(np.nanmax(out, axis=-2) > np.nanmin(out, axis=-2))
    return np.where(constant[..., None, :], np.nan, out)


def rank_codes(rank_values: np.ndarray) -> np.ndarray:
    """Average ranks (multiples of 1/2 from 1) as integer codes 0, 1, ...; -1 where missing."""
    codes = np.full(rank_values.shape, -1, dtype=np.int64)
    ok = np.isfinite(rank_values)
    codes[ok] = np.rint(2 * rank_values[ok]).astype(np.int64) - 2
    return codes


def ordinal_alpha(codes: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Krippendorff's alpha, ordinal metric, of (B, U, C) integer value codes (-1 missing;
    codes order the values), each unit weighted by (B, U) `weights` (how often a resample drew
    it; default 1). Equals `krippendorff.alpha(..., level_of_measurement="ordinal")`.

    The ordinal distance of values c <= k is (sum of n_g for g from c to k - (n_c + n_k)/2)^2,
    which is (m_k - m_c)^2 with m_c = n_1 + ... + n_c - n_c / 2 (the value's mid-point in the
    pooled order). Alpha is then 1 - (n - 1) sum_u sum_{i!=j} (m_ui - m_uj)^2 / (m_u - 1)
    over 2 n sum_c n_c (m_c - mean m)^2: linear in the units, no value x value table."""
    codes = np.asarray(codes, dtype=np.int64)
    b = codes.shape[0] if weights is None else max(codes.shape[0], weights.shape[0])
    w = (np.ones((b, codes.shape[1])) if weights is None
         else np.broadcast_to(weights, (b, codes.shape[1])).astype(float))
    v = max(1, int(codes.max()) + 1) if codes.size else 1  # every code missing: undefined
    step = max(1, 2_000_000 // max(1, codes.shape[1] * codes.shape[2]))
    return np.concatenate([
        _alpha_block(np.broadcast_to(codes, (b, *codes.shape[1:]))[start:start + step],
                     w[start:start + step], v)
        for start in range(0, b, step)]) if b else np.empty(0)


def _alpha_block(codes: np.ndarray, w: np.ndarray, v: int) -> np.ndarray:
    b = codes.shape[0]
    present = codes >= 0
    m_u = present.sum(axis=2)
    pairable = (m_u >= 2)[..., None] & present  # a unit with one value has no pair
    counts = np.zeros((b, v))
    rows = np.broadcast_to(np.arange(b)[:, None, None], codes.shape)
    np.add.at(counts, (rows[pairable], codes[pairable]),
              np.broadcast_to(w[..., None], codes.shape)[pairable])
    n = counts.sum(axis=1)
    mid = np.cumsum(counts, axis=1) - counts / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_mid = (counts * mid).sum(axis=1) / n
        expected = 2 * n * (counts * (mid - mean_mid[:, None]) ** 2).sum(axis=1)
        at = np.take_along_axis(mid, np.where(pairable, codes, 0).reshape(b, -1), axis=1
                                ).reshape(codes.shape)
        at = np.where(pairable, at, 0.0)
        # over ordered pairs of a unit's values: sum (a_i - a_j)^2 = 2 (k sum a^2 - (sum a)^2)
        spread = 2 * (m_u * (at ** 2).sum(axis=2) - at.sum(axis=2) ** 2)
        observed = (w * np.where(m_u >= 2, spread / np.maximum(m_u - 1, 1), 0.0)).sum(axis=1)
        return np.where((expected > 0) & (n > 1), 1 - (n - 1) * observed / expected, np.nan)


def package_alpha(values: np.ndarray) -> float | None:
    """Krippendorff's alpha (ordinal) of (U, C) values by the `krippendorff` package, the
    reference: the point value every row reports; None where undefined."""
    import krippendorff

    data = np.asarray(values, dtype=float).T
    pairable = (np.isfinite(data).sum(axis=0) >= 2)
    data = data[:, pairable]
    if data.size == 0 or np.unique(data[np.isfinite(data)]).size < 2:
        return None
    out = float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
    return out if math.isfinite(out) else None


@dataclass
class Estimate:
    """A statistic's value and its bootstrap distribution (B resamples)."""

    value: float | None
    boot: np.ndarray
    n: int


def draw_weights(draws: np.ndarray, d: int) -> np.ndarray:
    """(B, D): how often each resample drew each item."""
    weights = np.zeros((draws.shape[0], d))
    np.add.at(weights, (np.repeat(np.arange(draws.shape[0]), draws.shape[1]), draws.ravel()),
              1.0)
    return weights


def estimates(grid: np.ndarray, draws: np.ndarray) -> dict[tuple[str, str], Estimate]:
    """Tau-b and alpha of (D, S, C) coders' values at item and system level (see the module
    docstring), resampling the items by `draws` (B, D). A cell counts where at least two
    coders scored it (the evaluator and the humans: both); a grid of one output per item has
    no system level."""
    enough = np.isfinite(grid).sum(axis=2) >= 2
    grid = np.where(enough[..., None], grid, np.nan)
    d, s, _ = grid.shape
    if s == 1:  # one output per item: across the items, the items drawn
        flat, resampled = grid[:, 0, :], grid[draws, 0, :]
        n = int(enough.sum())
        return {("item", "tau_b"): Estimate(clean(mean_pair_tau(flat[None])[0]),
                                            mean_pair_tau(resampled), n),
                ("item", "alpha"): Estimate(package_alpha(ranks(flat)),
                                            ordinal_alpha(rank_codes(ranks(resampled))), n)}
    per_item = mean_pair_tau(grid)
    defined = np.isfinite(per_item)
    within = ranks(grid)  # (D, S, C), ranks within each item
    with np.errstate(invalid="ignore"), quiet_empty_means():
        taus = np.nanmean(np.where(defined[draws], per_item[draws], np.nan), axis=1)
        means = np.nanmean(grid, axis=0)  # (S, C): each system's mean over the items
        resampled = np.nanmean(grid[draws], axis=1)  # (B, S, C), from each resample
    n_sys = int((np.isfinite(means).sum(axis=1) >= 2).sum())
    return {
        ("item", "tau_b"): Estimate(float(per_item[defined].mean()) if defined.any() else None,
                                    taus, int(defined.sum())),
        ("item", "alpha"): Estimate(
            package_alpha(within.reshape(d * s, -1)),
            ordinal_alpha(rank_codes(within).reshape(1, d * s, -1),
                          np.repeat(draw_weights(draws, d), s, axis=1)),
            int((np.isfinite(within).sum(axis=2) >= 2).any(axis=1).sum())),  # items ranked
        ("system", "tau_b"): Estimate(clean(mean_pair_tau(means[None])[0]),
                                      mean_pair_tau(resampled), n_sys),
        ("system", "alpha"): Estimate(package_alpha(ranks(means)),
                                      ordinal_alpha(rank_codes(ranks(resampled))), n_sys)}


def zero_pvalue(boot: np.ndarray, n: int) -> float:
    """Two-sided bootstrap p-value of 'no agreement (0)'; 1 below MIN_N units."""
    finite = boot[np.isfinite(boot)]
    if n < MIN_N or finite.size < boot.size / 2:
        return 1.0
    below = (1 + np.count_nonzero(finite <= 0)) / (1 + finite.size)
    above = (1 + np.count_nonzero(finite >= 0)) / (1 + finite.size)
    return float(min(1.0, 2 * min(below, above)))


def percentiles(boot: np.ndarray, level: float) -> tuple[float | None, float | None]:
    finite = boot[np.isfinite(boot)]
    if finite.size < max(2, boot.size / 2):
        return None, None
    tail = (1 - level) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


@dataclass
class AgreementRow:
    evaluator: str
    aspect: str
    human: str
    level: str  # item | system
    statistic: str  # tau_b | alpha
    value: float | None
    ci_low: float | None  # 95%
    ci_high: float | None
    n: int  # items (item level) or systems (system level)
    unit: str  # what n counts
    pvalue: float
    conf: float  # level of the corrected interval, 1 - alpha_eff
    low: float | None  # the corrected interval
    high: float | None
    verdict: str  # agrees | disagrees | inconclusive
    n_to_settle: int | None = None
    items: int = 0  # items drawn by the bootstrap


@dataclass
class PairRow:
    evaluator: str
    aspect: str
    human: str
    pairs: int
    agree: int
    evaluator_ties: int
    accuracy: float | None
    ci_low: float | None  # Wilson
    ci_high: float | None
    source: str = PAIRS_DERIVED
    item_low: float | None = None  # percentile bootstrap drawing items (derived pairs)
    item_high: float | None = None


@dataclass
class AgreementResult:
    rows: list[AgreementRow]
    pairs: list[PairRow]
    human_human: list[AgreementRow]
    human_human_note: str
    items: int
    systems: int
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis": "agreement",
            "method": {
                "item": "tau-b across each item's outputs, mean over items (one output per "
                        "item: across the items); the bootstrap draws items whole",
                "system": "tau-b across the systems' means over the items; the bootstrap "
                          "draws items and recomputes the system means",
                "alpha": "Krippendorff's alpha, ordinal, on ranks: within the item (item "
                         "level), across the systems (system level); evaluator and humans "
                         "are the two coders, the outputs the units",
                "interval": f"95% percentile bootstrap, {self.n_boot} resamples of items, "
                            f"seed {self.seed}",
                "correction": "Holm over the tests of each evaluator, level and statistic "
                              "(its aspects x the human aspects); conf, low and high give the "
                              "corrected interval the verdict is read from",
                "pairs": PAIRS_DERIVED + "; accuracy: the share the evaluator orders the "
                         "same way (its ties count as misses), Wilson 95% interval (pairs "
                         "of one item are not independent: too narrow) and item_low/high, "
                         "the 95% percentile interval that draws items",
            },
            "items": self.items, "systems": self.systems,
            "rows": [_row_dict(r) for r in self.rows],
            "pairs": [_row_dict(r) for r in self.pairs],
            "human_human": [_row_dict(r) for r in self.human_human],
            "human_human_note": self.human_human_note,
            "notes": self.notes,
        }


def _row_dict(row: Any) -> dict[str, Any]:
    return {k: clean(v) if isinstance(v, float) else v for k, v in asdict(row).items()}


def corrected(tests: Sequence[tuple[Mapping[str, str], Estimate]], level: str,
              statistic: str, unit: str, items: int) -> list[AgreementRow]:
    """The rows of one family (one level and statistic), Holm-corrected together."""
    drawn = [e.n if level == "item" else items for _, e in tests]  # the units resampled
    pvalues = [zero_pvalue(e.boot, n) for (_, e), n in zip(tests, drawn, strict=True)]
    alpha_eff = effective_alpha(pvalues, ALPHA, "holm") if tests else ALPHA
    rows = []
    for (names, est), p, n in zip(tests, pvalues, drawn, strict=True):
        low95, high95 = percentiles(est.boot, 0.95)
        low, high = percentiles(est.boot, 1 - alpha_eff)
        verdict, need = "inconclusive", None
        # read off the corrected interval, as printed (p only sets Holm's level); below
        # MIN_N units drawn no interval decides
        if low is not None and high is not None and est.value is not None and n >= MIN_N:
            verdict = ("agrees" if low > 0 else "disagrees" if high < 0 else "inconclusive")
        if verdict == "inconclusive" and est.value is not None and low is not None \
                and high is not None:
            need = n_to_settle(est.value, low, high, max(n, 1), 0.0)
            need = None if need is None else max(MIN_N, need)
        rows.append(AgreementRow(names["evaluator"], names["aspect"], names["human"], level,
                                 statistic, est.value, low95, high95, est.n, unit, p,
                                 1 - alpha_eff, low, high, verdict, need, items))
    return rows


def derived_pairs(metric: np.ndarray, human: np.ndarray, draws: np.ndarray) -> PairRow:
    """The pairs of outputs within each item that the humans rate differently: how many, how
    many the evaluator orders the same way, its ties; Wilson's interval of the share, and a
    percentile interval that draws items (`draws`), whose pairs are not independent."""
    i, j = np.triu_indices(metric.shape[1], k=1)
    ok = np.isfinite(metric) & np.isfinite(human)
    valid = ok[:, i] & ok[:, j]
    with np.errstate(invalid="ignore"):
        sh = np.sign(human[:, i] - human[:, j])
        sm = np.sign(metric[:, i] - metric[:, j])
    ordered = valid & (sh != 0)
    per_item, agree_item = ordered.sum(axis=1), (ordered & (sm == sh)).sum(axis=1)
    pairs, agree = int(per_item.sum()), int(agree_item.sum())
    low, high = wilson(agree, pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = agree_item[draws].sum(axis=1) / per_item[draws].sum(axis=1)
    item_low, item_high = percentiles(boot, 0.95)
    return PairRow("", "", "", pairs, agree, int((ordered & (sm == 0)).sum()),
                   agree / pairs if pairs else None, low, high, item_low=item_low,
                   item_high=item_high)


def preference_accuracy(chosen: Sequence[float], rejected: Sequence[float],
                        evaluator: str = "", aspect: str = "", human: str = "preference",
                        source: str = "pairs with a human preference, given by the data"
                        ) -> PairRow:
    """Accuracy on explicit preference pairs: the evaluator's score of the output the humans
    chose against the one they rejected (its ties count as misses), Wilson interval."""
    a, b = np.asarray(chosen, dtype=float), np.asarray(rejected, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    pairs, agree, ties = int(ok.sum()), int((a[ok] > b[ok]).sum()), int((a[ok] == b[ok]).sum())
    low, high = wilson(agree, pairs)
    return PairRow(evaluator, aspect, human, pairs, agree, ties,
                   agree / pairs if pairs else None, low, high, source)


def agreement(scores: pd.DataFrame, human: pd.DataFrame, ratings: pd.DataFrame | None = None,
              *, n_boot: int = N_BOOT, seed: int = 0) -> AgreementResult:
    """The agreement block (see the module docstring).

    `scores`: doc_id, system_id, evaluator, aspect, score (NaN = missing). `human`: doc_id,
    system_id and one column per human aspect (the raters' mean). `ratings` (optional): doc_id,
    system_id, human, rater, rating: the raters' own scores, for the agreement among them.
    """
    human = human.set_index(["doc_id", "system_id"]).sort_index()
    docs = list(dict.fromkeys(human.index.get_level_values(0)))
    systems = list(dict.fromkeys(human.index.get_level_values(1)))
    full = pd.MultiIndex.from_product([docs, systems], names=["doc_id", "system_id"])
    shape = (len(docs), len(systems))
    draws = np.random.default_rng(seed).integers(0, len(docs), (n_boot, len(docs)))
    wide = (scores.groupby(["doc_id", "system_id", "evaluator", "aspect"], sort=False)
            ["score"].mean().unstack(["evaluator", "aspect"]))
    #: one family per evaluator, level and statistic: its aspects x the human aspects
    families: dict[tuple[str, str, str], list[tuple[dict[str, str], Estimate]]] = {}
    pairs = []
    for column in wide.columns:
        names = {"evaluator": str(column[0]), "aspect": str(column[1])}
        metric = wide[column].reindex(full).to_numpy(dtype=float).reshape(shape)
        for h in (str(c) for c in human.columns):
            hum = human[h].reindex(full).to_numpy(dtype=float).reshape(shape)
            for key, est in estimates(np.stack([metric, hum], axis=2), draws).items():
                families.setdefault((names["evaluator"], *key), []).append(
                    ({**names, "human": h}, est))
            if len(systems) > 1:  # outputs of one input: a pair has a human preference
                pair = derived_pairs(metric, hum, draws)
                pair.evaluator, pair.aspect, pair.human = names["evaluator"], names["aspect"], h
                pairs.append(pair)
    units = {"item": "items", "system": "systems"}
    rows = [r for (_, level, stat), tests in families.items()
            for r in corrected(tests, level, stat, units[level], len(docs))]
    between, note = raters_agreement(ratings, docs, systems, draws)
    notes = [] if len(systems) > 1 else [
        "no pairs: each item has one output, so no two outputs of one input can be compared"]
    return AgreementResult(rows, pairs, between, note, len(docs),
                           len(systems) if len(systems) > 1 else 0, n_boot, seed, notes)


def raters_agreement(ratings: pd.DataFrame | None, docs: Sequence[Any], systems: Sequence[Any],
                     draws: np.ndarray) -> tuple[list[AgreementRow], str]:
    """The raters among themselves, per human aspect, under the same rule (tau-b averaged
    over pairs of raters; alpha with every rater a coder); the note says when the data gives
    one score per output."""
    if ratings is None or ratings.empty or ratings["rater"].nunique() < 2:
        return [], ONE_SCORE
    full = pd.MultiIndex.from_product([docs, systems], names=["doc_id", "system_id"])
    out = []
    for h, part in ratings.groupby("human", sort=False):
        wide = part.pivot_table(index=["doc_id", "system_id"], columns="rater",
                                values="rating", aggfunc="mean").reindex(full)
        grid = wide.to_numpy(dtype=float).reshape(len(docs), len(systems), -1)
        for (level, stat), est in estimates(grid, draws).items():
            low95, high95 = percentiles(est.boot, 0.95)
            out.append(AgreementRow(f"{grid.shape[2]} raters", "", str(h), level, stat,
                                    est.value, low95, high95, est.n,
                                    "items" if level == "item" else "systems",
                                    zero_pvalue(est.boot, est.n if level == "item"
                                                else len(docs)), 0.95, low95, high95,
                                    "", None, len(docs)))
    return out, ""
