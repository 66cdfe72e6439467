"""Blind-spot tests of paper 002 (sec. 2 and 5.5): rank and monotonic tests over noise ratio.

For each evaluator aspect and perturbation, and each severity: the mean score over examples for
each seed, then mean and standard deviation over seeds. The gold score is the mean on the
original hypotheses of the same examples (paired: an example a perturbation skipped does not
count on either side). Scores where lower is better are compared with the sign flipped.

- rank test: every severity scores below gold by more than the tolerance;
- monotonic test: ordered by noise ratio, starting from gold at ratio 0, no step rises by more
  than the tolerance.
The tolerance is `max(abs_tol, rel_tol * |gold|)`; both are written into every result.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.runner import CORPUS
from evalstress.scoretable import ScoreTable, perturbation_groups

COLUMNS = ("example_id", "perturbation", "severity", "severity_rank", "seed", "noise_ratio",
           "score", "higher_is_better", "status")


@dataclass
class SeverityPoint:
    severity: str
    noise_ratio: float
    mean: float  # mean over seeds of the per-seed mean score
    std: float  # standard deviation over seeds
    gold: float  # gold mean over the same examples
    delta: float  # mean - gold
    n_examples: int
    n_seeds: int
    n_missing: int


@dataclass
class BlindspotRow:
    evaluator: str
    aspect: str
    perturbation: str
    higher_is_better: bool
    gold: float
    points: list[SeverityPoint]
    tolerance: float
    rank_pass: bool
    monotonic_pass: bool
    n_skipped: int = 0

    @property
    def passed(self) -> bool:
        return self.rank_pass and self.monotonic_pass

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["passed"] = self.passed
        return out


@dataclass
class BlindspotResult:
    rows: list[BlindspotRow]
    rel_tol: float
    abs_tol: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis": "blindspot",
            "tolerance": {"rel_tol": self.rel_tol, "abs_tol": self.abs_tol,
                          "rule": "tol = max(abs_tol, rel_tol * |gold|)"},
            "tests": {
                "rank": "every severity scores below gold by more than tol",
                "monotonic": "ordered by noise ratio from gold, no step rises by more than tol",
            },
            "rows": [r.to_dict() for r in self.rows],
            "notes": self.notes,
        }

    def failures(self) -> list[BlindspotRow]:
        return [r for r in self.rows if not r.passed]


def _sign(higher_is_better: bool) -> float:
    return 1.0 if higher_is_better else -1.0


def blindspot(table: pd.DataFrame | ScoreTable, *, rel_tol: float = 0.01, abs_tol: float = 0.0,
              skips: pd.DataFrame | None = None) -> BlindspotResult:
    """Run the rank and monotonic tests on a score table (see module docstring).

    `table` is a DataFrame or a Parquet-backed ScoreTable (read one evaluator aspect at a time);
    `skips` has one row per skip, or a `count` column per perturbation and reason."""
    rows: list[BlindspotRow] = []
    if table.empty:
        return BlindspotResult(rows, rel_tol, abs_tol, ["the score table is empty"])
    skip_counts: dict[str, int] = {}
    if skips is not None and not skips.empty:
        sizes = (skips.groupby("perturbation")["count"].sum() if "count" in skips
                 else skips.groupby("perturbation").size())
        skip_counts = {str(k): int(v) for k, v in sizes.items()}
    for (evaluator, aspect), gold_rows, noised in perturbation_groups(table, COLUMNS):
        gold_by_example = gold_rows.set_index("example_id")["score"]
        for perturbation, pgroup in noised:
            higher = bool((gold_rows if not gold_rows.empty else pgroup)
                          ["higher_is_better"].iloc[0])
            points = _points(pgroup, gold_by_example)
            if not points:
                continue
            gold = float(np.mean([p.gold for p in points]))
            tol = max(abs_tol, rel_tol * abs(gold))
            sign = _sign(higher)
            rank_pass = all(sign * p.delta < -tol for p in points)
            ordered = sorted(points, key=lambda p: p.noise_ratio)
            # paired deltas, so each step compares against gold on the same examples
            deltas = [0.0] + [sign * p.delta for p in ordered]
            monotonic_pass = all(b <= a + tol for a, b in itertools.pairwise(deltas))
            rows.append(BlindspotRow(str(evaluator), str(aspect), str(perturbation), higher, gold,
                                     points, tol, rank_pass, monotonic_pass,
                                     skip_counts.get(str(perturbation), 0)))
    return BlindspotResult(rows, rel_tol, abs_tol)


def _points(pgroup: pd.DataFrame, gold_by_example: pd.Series) -> list[SeverityPoint]:
    points = []
    for (_, severity), sgroup in pgroup.groupby(["severity_rank", "severity"], sort=True):
        per_seed_means: list[float] = []
        per_seed_gold: list[float] = []
        examples: set[str] = set()
        missing = int((sgroup["status"] != "ok").sum())
        for _, seed_group in sgroup.groupby("seed"):
            ok = seed_group[seed_group["status"] == "ok"]
            if ok.empty:
                continue
            if (ok["example_id"] == CORPUS).all():
                gold_vals = gold_by_example.reindex([CORPUS]).dropna()
                vals = ok["score"]
            else:
                gold_vals = gold_by_example.reindex(ok["example_id"])
                keep = gold_vals.notna().to_numpy()
                vals = ok["score"][keep]
                gold_vals = gold_vals[keep]
            if vals.empty or gold_vals.empty:
                continue
            per_seed_means.append(float(vals.mean()))
            per_seed_gold.append(float(gold_vals.mean()))
            examples.update(ok["example_id"])
        if not per_seed_means:
            continue
        means = np.array(per_seed_means)
        golds = np.array(per_seed_gold)
        points.append(SeverityPoint(
            severity=str(severity),
            noise_ratio=float(sgroup["noise_ratio"].mean()),
            mean=float(means.mean()),
            std=float(means.std(ddof=0)),
            gold=float(golds.mean()),
            delta=float((means - golds).mean()),
            n_examples=len(examples),
            n_seeds=len(per_seed_means),
            n_missing=missing,
        ))
    return points
