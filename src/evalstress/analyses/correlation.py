"""Correlation between an evaluator and human scores, at segment and system level.

Input: evaluator scores and human scores keyed by (doc_id, system_id). Three levels:

- `segment-doc` (SummEval's "summary-level" convention): for each document, the correlation
  across its system outputs; then the mean over documents. Documents whose scores are constant
  on either side (correlation undefined) are left out and counted.
- `segment-global`: one correlation over all (document, system) pairs.
- `system`: mean score per system over documents, then the correlation across systems.

Pearson, Spearman and Kendall tau-b come from scipy.stats. Confidence intervals are seeded
bootstrap percentile intervals that resample *documents* (with replacement) for every level:
documents are the sampling unit of the data, and the systems are a fixed set under study
(`system_resample="systems"` resamples systems instead). Missing scores are excluded pairwise
and counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from evalstress.analyses.agreement import agreement, human_ratings, rating_mean, rating_rows
from evalstress.analyses.confusion import AspectMatrix, matrix_of
from evalstress.analyses.stats import (
    CORRELATIONS,
    CorrelationMethod,
    clean,
    correlation,
    quiet_empty_means,
)
from evalstress.core.records import ORIGINAL
from evalstress.core.scoretable import ScoreTable

LEVELS = ("segment-doc", "segment-global", "system")


@dataclass
class CorrelationRow:
    evaluator: str
    aspect: str
    human: str
    level: str
    method: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int  # documents (segment-doc), pairs (segment-global) or systems (system)
    n_missing: int  # (doc, system) pairs without both scores
    n_undefined: int = 0  # documents whose correlation is undefined (segment-doc)


@dataclass
class CorrelationResult:
    rows: list[CorrelationRow]
    matrix: AspectMatrix | None
    n_boot: int
    level: float
    seed: int
    system_resample: str
    notes: list[str] = field(default_factory=list)
    #: the agreement block (`analyses.agreement`) of the same scores, when it was asked for
    agreement: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **({"agreement": self.agreement} if self.agreement is not None else {}),
            "analysis": "correlation",
            "method": {
                "levels": {
                    "segment-doc": "per-document correlation across systems, mean over documents",
                    "segment-global": "one correlation over all (document, system) pairs",
                    "system": "mean per system over documents, correlation across systems",
                },
                "ci": f"{self.level:.0%} bootstrap percentile, {self.n_boot} resamples, seed "
                      f"{self.seed}; resampling documents (system level: {self.system_resample})",
                "kendall": "tau-b",
            },
            "rows": [{k: clean(v) if isinstance(v, float) else v for k, v in asdict(r).items()}
                     for r in self.rows],
            "matrix": asdict(self.matrix) if self.matrix else None,
            "notes": self.notes,
        }

    def table(self, level: str = "system", method: str = "kendall") -> pd.DataFrame:
        """Evaluator aspect x human aspect values for one level and method."""
        frame = pd.DataFrame([asdict(r) for r in self.rows])
        if frame.empty:
            return frame
        frame = frame[(frame["level"] == level) & (frame["method"] == method)]
        frame["metric"] = frame["evaluator"] + "/" + frame["aspect"]
        return frame.pivot(index="metric", columns="human", values="value")


def _vector_corr(x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    """Row-wise correlation of two (B, n) arrays; NaN where undefined."""
    from scipy import stats

    if method == "spearman":
        x = np.asarray(stats.rankdata(x, axis=1), dtype=float)
        y = np.asarray(stats.rankdata(y, axis=1), dtype=float)
    if method in ("pearson", "spearman"):
        xc = x - x.mean(axis=1, keepdims=True)
        yc = y - y.mean(axis=1, keepdims=True)
        den = np.sqrt((xc ** 2).sum(axis=1) * (yc ** 2).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, (xc * yc).sum(axis=1) / den, np.nan)
    return tau_b_rows(x, y)


#: tau-b rows are computed in blocks of at most this many pair cells (memory stays small)
PAIR_CELLS = 4_000_000


def tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of two (B, n) arrays, NaN where a row is constant.

    tau-b = sum over pairs i<j of sign(x_i - x_j) sign(y_i - y_j), divided by the square root
    of the pairs untied in x times the pairs untied in y. Computed on all pairs at once, it
    equals scipy's `kendalltau` (which also works out a p-value the bootstrap does not need,
    exactly for small n: thousands of times slower on a bootstrap of 16 systems)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[1], k=1)
    out = np.empty(x.shape[0])
    step = max(1, PAIR_CELLS // max(1, i.size))
    for start in range(0, x.shape[0], step):
        sx = np.sign(x[start:start + step, i] - x[start:start + step, j])
        sy = np.sign(y[start:start + step, i] - y[start:start + step, j])
        den = np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + step] = np.where(den > 0, (sx * sy).sum(axis=1) / den, np.nan)
    return out


def _interval(values: np.ndarray, level: float, n_boot: int) -> tuple[float | None, float | None]:
    finite = values[np.isfinite(values)]
    if finite.size < n_boot / 2:
        return None, None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def human_correlation(scores: pd.DataFrame, human: pd.DataFrame, *,
                      methods: Sequence[CorrelationMethod] = CORRELATIONS,
                      levels: Sequence[str] = LEVELS, n_boot: int = 1000, ci: float = 0.95,
                      seed: int = 0,
                      system_resample: Literal["documents", "systems"] = "documents",
                      ) -> CorrelationResult:
    """Correlate every evaluator aspect with every human aspect (see the module docstring).

    `scores`: columns doc_id, system_id, evaluator, aspect, score (NaN = missing).
    `human`: columns doc_id, system_id and one column per human aspect.
    """
    for level in levels:
        if level not in LEVELS:
            raise ValueError(f"unknown level '{level}'; choose from {', '.join(LEVELS)}")
    human = human.set_index(["doc_id", "system_id"]).sort_index()
    human_aspects = [str(c) for c in human.columns]
    docs = list(dict.fromkeys(human.index.get_level_values(0)))
    systems = list(dict.fromkeys(human.index.get_level_values(1)))
    full = pd.MultiIndex.from_product([docs, systems], names=["doc_id", "system_id"])
    rows: list[CorrelationRow] = []
    rng_seed = np.random.default_rng(seed)
    doc_draws = rng_seed.integers(0, len(docs), (n_boot, len(docs)))
    sys_draws = np.random.default_rng(seed + 1).integers(0, len(systems), (n_boot, len(systems)))
    wide_metric = (scores.groupby(["doc_id", "system_id", "evaluator", "aspect"], sort=False)
                   ["score"].mean().unstack(["evaluator", "aspect"]))
    for column in wide_metric.columns:
        evaluator, aspect = str(column[0]), str(column[1])
        metric = np.asarray(wide_metric[column].reindex(full).to_numpy(dtype=float)
                            ).reshape(len(docs), len(systems))
        for h in human_aspects:
            hum = human[h].reindex(full).to_numpy(dtype=float).reshape(len(docs), len(systems))
            both = np.isfinite(metric) & np.isfinite(hum)
            n_missing = int(both.size - both.sum())
            for method in methods:
                for level in levels:
                    rows.append(_one(evaluator, aspect, h, level, method, metric, hum, both,
                                     n_missing, doc_draws, sys_draws, system_resample, ci,
                                     n_boot))
    wide_human = human.copy()
    for column in wide_metric.columns:
        wide_human[f"{column[0]}/{column[1]}"] = wide_metric[column].reindex(human.index)
    matrix = matrix_of("human and evaluator aspects (segment pairs)", wide_human)
    return CorrelationResult(rows, matrix, n_boot, ci, seed, system_resample)


def _one(evaluator: str, aspect: str, human: str, level: str, method: str, metric: np.ndarray,
         hum: np.ndarray, both: np.ndarray, n_missing: int, doc_draws: np.ndarray,
         sys_draws: np.ndarray, system_resample: str, ci: float,
         n_boot: int) -> CorrelationRow:
    if level == "segment-doc":
        per_doc = np.array([
            np.nan if both[i].sum() < 3 or (c := correlation(
                metric[i][both[i]], hum[i][both[i]], method)) is None  # type: ignore[arg-type]
            else c for i in range(metric.shape[0])], dtype=np.float64)
        defined = np.isfinite(per_doc)
        value = float(np.nanmean(per_doc)) if defined.any() else None
        with np.errstate(invalid="ignore"):
            boot = (np.nanmean(np.where(defined[doc_draws], per_doc[doc_draws], np.nan), axis=1)
                    if defined.any() else np.full(n_boot, np.nan))
        low, high = _interval(boot, ci, n_boot)
        return CorrelationRow(evaluator, aspect, human, level, method, value, low, high,
                              int(defined.sum()), n_missing, int((~defined).sum()))
    if level == "segment-global":
        x, y = metric[both], hum[both]
        value = correlation(x, y, method)  # type: ignore[arg-type]
        # resample documents: every pair of a drawn document enters, NaN pairs dropped
        idx = np.arange(metric.size).reshape(metric.shape)
        boot = np.empty(n_boot)
        flat_m, flat_h, flat_ok = metric.ravel(), hum.ravel(), both.ravel()
        for b in range(n_boot):
            cells = idx[doc_draws[b]].ravel()
            cells = cells[flat_ok[cells]]
            boot[b] = _vector_corr(flat_m[cells][None], flat_h[cells][None], method)[0] \
                if cells.size >= 3 else np.nan
        low, high = _interval(boot, ci, n_boot)
        return CorrelationRow(evaluator, aspect, human, level, method, value, low, high,
                              int(both.sum()), n_missing)
    # system level: mean per system over the documents where both scores exist
    m = np.where(both, metric, np.nan)
    h = np.where(both, hum, np.nan)
    with np.errstate(invalid="ignore"), quiet_empty_means():
        sys_m, sys_h = np.nanmean(m, axis=0), np.nanmean(h, axis=0)
    value = correlation(sys_m, sys_h, method)  # type: ignore[arg-type]
    with np.errstate(invalid="ignore"), quiet_empty_means():
        if system_resample == "systems":
            bm, bh = sys_m[sys_draws], sys_h[sys_draws]
        else:
            bm = np.nanmean(m[doc_draws], axis=1)
            bh = np.nanmean(h[doc_draws], axis=1)
    boot = _vector_corr(bm, bh, method)
    low, high = _interval(boot, ci, n_boot)
    return CorrelationRow(evaluator, aspect, human, level, method, value, low, high,
                          int(np.isfinite(sys_m).sum()), n_missing)


def finite_or_none(value: Any) -> float | None:
    """A number as a finite float, else None (a human score of 'n/a', NaN or inf)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def run_correlation(table: pd.DataFrame | ScoreTable, examples: Sequence[Any], *, human_key: str = "human",
                    **kwargs: Any) -> CorrelationResult:
    """Correlation analysis of a stress-test run: originals against `meta[human_key]` scores
    (a number per aspect, or a list of the raters' numbers, averaged), with the agreement
    block (`analyses.agreement`) beside it.

    Each example is a document with one system ("hypothesis"), so only `segment-global` is
    defined; examples without human scores are left out.
    """
    records, ratings = [], []
    for example in examples:
        scores = (example.meta or {}).get(human_key)
        if isinstance(scores, dict):
            given = {str(k): human_ratings(v) for k, v in scores.items()}
            records.append({"doc_id": example.id, "system_id": "hypothesis",
                            **{k: rating_mean(v) for k, v in given.items()}})
            ratings.extend(rating_rows(example.id, "hypothesis", given))
    if not records:
        return CorrelationResult([], None, 0, 0.95, 0, "documents",
                                 [f"no example has human scores in meta['{human_key}']"])
    human = pd.DataFrame.from_records(records)
    columns = ["example_id", "evaluator", "aspect", "score", "status"]
    originals = (table.read(columns, where={"perturbation": ORIGINAL})
                 if isinstance(table, ScoreTable)
                 else table[table["perturbation"] == ORIGINAL])
    scores = pd.DataFrame({
        "doc_id": originals["example_id"], "system_id": "hypothesis",
        "evaluator": originals["evaluator"], "aspect": originals["aspect"],
        "score": originals["score"].where(originals["status"] == "ok")})
    kwargs.setdefault("levels", ("segment-global",))
    result = human_correlation(scores, human, **kwargs)
    result.agreement = agreement(
        scores, human, pd.DataFrame.from_records(ratings) if ratings else None,
        **{k: kwargs[k] for k in ("n_boot", "seed") if k in kwargs}).to_dict()
    return result
