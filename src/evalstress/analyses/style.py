"""Response style (paper 003, sec. 2): how each evaluator spreads its scores, on the originals
and on the perturbed texts.

Two evaluators can rank texts alike and still use the scale differently (one gives 4-5 to
everything, another uses the whole range); the discernment tests are rank-based for that
reason. This analysis shows the distributions themselves: summary statistics, and a histogram
(value counts when an aspect uses at most `max_discrete` distinct values, as a 1-5 judge does;
otherwise `bins` equal-width bins over the range shared by originals and variants).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.stats import clean
from evalstress.core.records import ORIGINAL
from evalstress.core.scoretable import ScoreTable, frame_or_groups


@dataclass
class Distribution:
    n: int
    n_missing: int
    mean: float | None
    std: float | None
    minimum: float | None
    q25: float | None
    median: float | None
    q75: float | None
    maximum: float | None
    counts: list[int]  # per histogram bin / distinct value


@dataclass
class StyleRow:
    evaluator: str
    aspect: str
    higher_is_better: bool
    discrete: bool
    edges: list[float]  # bin edges, or the distinct values when discrete
    original: Distribution
    perturbed: Distribution
    by_perturbation: dict[str, Distribution]


@dataclass
class StyleResult:
    rows: list[StyleRow]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def fix(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: fix(v) for k, v in value.items()}
            if isinstance(value, list):
                return [fix(v) for v in value]
            return clean(value) if isinstance(value, float) else value

        return {"analysis": "style", "rows": [fix(asdict(r)) for r in self.rows],
                "notes": self.notes}


def _distribution(values: pd.Series, n_missing: int, edges: np.ndarray,
                  discrete: bool) -> Distribution:
    x = values.to_numpy(dtype=float)
    if x.size == 0:
        return Distribution(0, n_missing, None, None, None, None, None, None, None,
                            [0] * (len(edges) if discrete else max(len(edges) - 1, 0)))
    if discrete:
        counts = [int(np.count_nonzero(x == v)) for v in edges]
    else:
        counts = [int(c) for c in np.histogram(x, bins=edges)[0]]
    q = np.percentile(x, [0, 25, 50, 75, 100])
    return Distribution(int(x.size), n_missing, float(x.mean()), float(x.std(ddof=0)),
                        float(q[0]), float(q[1]), float(q[2]), float(q[3]), float(q[4]), counts)


def response_style(table: pd.DataFrame | ScoreTable, *, bins: int = 10,
                   max_discrete: int = 11) -> StyleResult:
    """Score distributions per evaluator aspect on originals and on perturbed texts."""
    rows: list[StyleRow] = []
    if table.empty:
        return StyleResult(rows, ["the score table is empty"])
    for (evaluator, aspect), group in frame_or_groups(
            table, ["evaluator", "aspect"], ["perturbation", "score", "status", "higher_is_better"]):
        ok = group[group["status"] == "ok"]
        values = ok["score"].to_numpy(dtype=float)
        distinct = np.unique(values)
        discrete = 0 < distinct.size <= max_discrete
        if discrete:
            edges = distinct
        elif values.size:
            low, high = float(values.min()), float(values.max())
            edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
        else:
            edges = np.array([])
        is_orig = group["perturbation"] == ORIGINAL

        def dist(mask: pd.Series, edges: np.ndarray = edges, discrete: bool = discrete,
                 group: pd.DataFrame = group) -> Distribution:
            part = group[mask]
            return _distribution(part.loc[part["status"] == "ok", "score"],
                                 int((part["status"] != "ok").sum()), edges, discrete)

        by_pert = {str(p): dist(group["perturbation"] == p)
                   for p in group.loc[~is_orig, "perturbation"].unique()}
        rows.append(StyleRow(str(evaluator), str(aspect), bool(group["higher_is_better"].iloc[0]),
                             bool(discrete), [float(e) for e in edges], dist(is_orig),
                             dist(~is_orig), by_pert))
    return StyleResult(rows)
