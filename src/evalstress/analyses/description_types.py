"""One judge, its criteria at every level of detail, side by side (paper 000, figures 4a and 8).

Paper 000 asks whether a judge evaluates better when its criteria say more. It runs the same
judge with each criterion written at five levels of detail (default, simplified, term, detailed,
list) and, in its discussion, with the term alone and with no criterion at all, then compares
(figure 4a) how much scores move on the aspects a perturbation should move (S_T) and on those it
should leave alone (S_F), and (figure 8) how strongly the levels' scores correlate with each
other. This analysis reads a score table holding one judge per level and returns, per level:

- S_T: the number of directional items (evaluator aspect x perturbation x severity), the share
  that pass the directional test of `analyses.confusion`, and the five-number summary of their
  mean score changes (original - perturbed, positive = scored worse): figure 4a's boxes;
- S_F: the same for the invariance items, with the share that fail (confusion);
- aspect similarity: the mean off-diagonal Pearson correlation between the judge's aspects
  (figure 4b: the vaguer the criteria, the more alike the aspects' scores);
- and the level x level Pearson matrix over every (text, aspect) both levels scored (figure 8).

`levels` maps evaluator labels to levels; without it, judges are found in the run's signatures
(their `level` parameter) and must not differ in anything else: the comparison is of one judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.confusion import ConfusionItem, criteria_confusion, matrix_of
from evalstress.analyses.registry import register_analysis
from evalstress.analyses.stats import clean
from evalstress.core.records import CORPUS
from evalstress.criteria import LEVELS
from evalstress.engine.result import RunResult

#: Where each level sits in paper 000's order of detail, most detailed first.
LEVEL_ORDER = ("list", "detailed", "default", "simplified", "term", "term-only", "empty")
UNITS = ["example_id", "perturbation", "severity", "seed", "aspect"]


@dataclass
class Spread:
    """Five-number summary of item changes (a box of figure 4a); None fields when empty."""

    n: int
    minimum: float | None
    q1: float | None
    median: float | None
    q3: float | None
    maximum: float | None
    mean: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
        if not x.size:
            return cls(0, None, None, None, None, None, None)
        low, q1, median, q3, high = (clean(float(v)) for v in
                                     np.percentile(x, [0, 25, 50, 75, 100]))
        return cls(int(x.size), low, q1, median, q3, high, clean(float(x.mean())))


@dataclass
class LevelRow:
    level: str
    evaluator: str
    directional: Spread
    directional_pass_rate: float | None
    invariance: Spread
    confusion_rate: float | None
    aspect_similarity: float | None  # mean off-diagonal inter-aspect Pearson
    scored: int  # ok scores of this judge
    missing: int  # missing scores of this judge


@dataclass
class DescriptionTypesResult:
    rows: list[LevelRow]
    levels: list[str]
    correlation: list[list[float | None]]  # level x level Pearson, in `levels` order
    pairs: list[list[int]]  # how many (text, aspect) scores each correlation rests on
    alpha: float
    min_effect: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"analysis": "description-types",
                "method": {"directional": "share of S_T items passing the directional test",
                           "invariance": "share of S_F items failing the invariance test",
                           "change": "per item: mean of (original - perturbed), positive = "
                                     "scored worse",
                           "aspect_similarity": "mean off-diagonal Pearson between aspects",
                           "correlation": "Pearson between levels over (text, aspect) scores",
                           "alpha": self.alpha, "min_effect": self.min_effect},
                "rows": [asdict(r) for r in self.rows],
                "levels": self.levels,
                "correlation": [[clean(v) for v in row] for row in self.correlation],
                "pairs": self.pairs,
                "notes": self.notes}


def judge_levels(signatures: Mapping[str, Any]) -> dict[str, str]:
    """Evaluator label -> criteria level for the judges of a run, checking they are one judge."""
    found: dict[str, str] = {}
    rest: dict[str, str] = {}
    for label, signature in signatures.items():
        params = dict((signature or {}).get("params") or {})
        level = params.pop("level", None)
        if level not in LEVELS:
            continue
        found[label] = str(level)
        rest[label] = repr(sorted(params.items()))
    if len(set(rest.values())) > 1:
        raise ValueError("description-types compares one judge at several criteria levels, but "
                         "these judges differ in more than the level: "
                         f"{', '.join(sorted(rest))}")
    levels = list(found.values())
    if len(set(levels)) != len(levels):
        raise ValueError("description-types: two judges share a criteria level "
                         f"({', '.join(sorted(found))})")
    return found


def _ordered(levels: Mapping[str, str]) -> list[tuple[str, str]]:
    """(level, evaluator) pairs from most to least detailed."""
    return sorted(((lv, ev) for ev, lv in levels.items()),
                  key=lambda p: LEVEL_ORDER.index(p[0]) if p[0] in LEVEL_ORDER else 99)


def description_types(table: pd.DataFrame, levels: Mapping[str, str], *,
                      aspect_map: Mapping[str, str] | None = None, alpha: float = 0.05,
                      min_effect: float = 0.3, n_boot: int = 1000,
                      seed: int = 0) -> DescriptionTypesResult:
    """Compare one judge's levels of criteria detail (see the module docstring)."""
    notes: list[str] = []
    if len(levels) < 2:
        raise ValueError("description-types needs the same judge at two or more criteria "
                         f"levels; found {len(levels)}")
    unknown = sorted(set(levels) - set(table["evaluator"].unique()))
    if unknown:
        raise ValueError(f"description-types: no scores for evaluator(s) {', '.join(unknown)}")
    pairs = _ordered(levels)
    chosen = table[table["evaluator"].isin(list(levels))]
    confusion = criteria_confusion(chosen, aspect_map=aspect_map, alpha=alpha,
                                   min_effect=min_effect, n_boot=n_boot, seed=seed)
    notes.extend(confusion.notes)
    items: dict[str, list[ConfusionItem]] = {}
    for item in confusion.items:
        items.setdefault(item.evaluator, []).append(item)
    scored = chosen[chosen["example_id"] != CORPUS]
    rows = []
    for level, evaluator in pairs:
        mine = items.get(evaluator, [])
        direct = [i for i in mine if i.test == "directional"]
        invar = [i for i in mine if i.test == "invariance"]
        judged_d = [i for i in direct if i.passed is not None]
        judged_i = [i for i in invar if i.passed is not None]
        own = scored[scored["evaluator"] == evaluator]
        rows.append(LevelRow(
            level, evaluator, Spread.of([i.change for i in direct if i.change is not None]),
            (sum(bool(i.passed) for i in judged_d) / len(judged_d)) if judged_d else None,
            Spread.of([i.change for i in invar if i.change is not None]),
            (sum(not i.passed for i in judged_i) / len(judged_i)) if judged_i else None,
            _aspect_similarity(own), int((own["status"] == "ok").sum()),
            int((own["status"] != "ok").sum())))
    matrix, counts = _level_matrix(scored, pairs)
    if any(r.scored == 0 for r in rows):
        notes.append("a level has no usable score: its row and correlations are empty")
    return DescriptionTypesResult(rows, [lv for lv, _ in pairs], matrix, counts, alpha,
                                  min_effect, notes)


def _aspect_similarity(rows: pd.DataFrame) -> float | None:
    ok = rows[rows["status"] == "ok"]
    wide = ok.pivot_table(index=UNITS[:-1], columns="aspect", values="score", aggfunc="mean")
    if wide.shape[1] < 2:
        return None
    values = matrix_of("level", wide).values
    off = [v for i, line in enumerate(values) for j, v in enumerate(line)
           if i != j and v is not None]
    return clean(float(np.mean(off))) if off else None


def _level_matrix(rows: pd.DataFrame, pairs: list[tuple[str, str]]
                  ) -> tuple[list[list[float | None]], list[list[int]]]:
    ok = rows[rows["status"] == "ok"]
    wide = ok.pivot_table(index=UNITS, columns="evaluator", values="score", aggfunc="mean")
    wide = wide.reindex(columns=[ev for _, ev in pairs])
    matrix = matrix_of("levels", wide).values
    data = wide.to_numpy(dtype=float)
    counts = [[int((np.isfinite(data[:, i]) & np.isfinite(data[:, j])).sum())
               for j in range(len(pairs))] for i in range(len(pairs))]
    # a level without scores correlates with nothing, itself included
    return [[v if counts[i][j] else None for j, v in enumerate(line)]
            for i, line in enumerate(matrix)], counts


@register_analysis("description-types", ("levels",))
def _registered(run: RunResult, options: Mapping[str, Any]) -> DescriptionTypesResult:
    levels = options.get("levels") or judge_levels(run.signatures)
    picked = {k: options[k] for k in ("aspect_map", "alpha", "min_effect", "n_boot", "seed")
              if options.get(k) is not None}
    return description_types(run.table, dict(levels), **picked)

