"""Blind-spot tests of paper 002 (sec. 2 and 5.5): rank and monotonic tests over noise ratio.

For each evaluator aspect and perturbation, and each severity: the mean score over examples for
each seed, then mean and standard deviation over seeds. The gold score is the mean on the
original hypotheses of the same examples (paired: an example a perturbation skipped does not
count on either side). Scores where lower is better are compared with the sign flipped.

- rank test: every severity scores below gold by more than the tolerance;
- monotonic test: ordered by noise ratio, starting from gold at ratio 0, no step rises by more
  than the tolerance.
The tolerance is `max(abs_tol, rel_tol * |gold|)`; both are written into every result.

A row whose data cannot carry a verdict is INCONCLUSIVE instead of pass/fail: more than
`max_missing` of its scores (gold and variants) are missing, or a severity has no score at all.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.runner import CORPUS, ORIGINAL

MAX_MISSING = 0.5  # share of missing scores above which a row is inconclusive


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
    n_scores: int = 0  # score rows of this row: gold and variants
    n_missing: int = 0  # of them, missing
    n_empty_severities: int = 0  # severities where every score is missing
    max_missing: float = MAX_MISSING

    @property
    def passed(self) -> bool:
        return self.rank_pass and self.monotonic_pass

    @property
    def inconclusive_reason(self) -> str | None:
        """Why the data cannot support a pass or a fail, or None when it can."""
        if self.n_empty_severities:
            return f"{self.n_empty_severities} severities have no score at all"
        if self.n_scores and self.n_missing / self.n_scores > self.max_missing:
            return (f"{self.n_missing} of {self.n_scores} scores are missing "
                    f"(more than {self.max_missing:.0%})")
        return None

    @property
    def verdict(self) -> str:
        """pass, fail, or inconclusive when too many scores are missing."""
        if self.inconclusive_reason:
            return "inconclusive"
        return "pass" if self.passed else "fail"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not math.isfinite(self.gold):
            out["gold"] = None
        out["passed"] = self.passed
        out["verdict"] = self.verdict
        out["inconclusive_reason"] = self.inconclusive_reason
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


def blindspot(table: pd.DataFrame, *, rel_tol: float = 0.01, abs_tol: float = 0.0,
              skips: pd.DataFrame | None = None,
              max_missing: float = MAX_MISSING) -> BlindspotResult:
    """Run the rank and monotonic tests on a score table (see module docstring)."""
    rows: list[BlindspotRow] = []
    if table.empty:
        return BlindspotResult(rows, rel_tol, abs_tol, ["the score table is empty"])
    skip_counts: dict[str, int] = {}
    if skips is not None and not skips.empty:
        skip_counts = {str(k): int(v) for k, v in skips.groupby("perturbation").size().items()}
    for (evaluator, aspect), group in table.groupby(["evaluator", "aspect"], sort=False):
        higher = bool(group["higher_is_better"].iloc[0])
        gold_rows = group[group["perturbation"] == ORIGINAL]
        gold_by_example = gold_rows.set_index("example_id")["score"]
        noised = group[group["perturbation"] != ORIGINAL]
        for perturbation, pgroup in noised.groupby("perturbation", sort=False):
            points = _points(pgroup, gold_by_example)
            if not points:  # every score missing: keep the row, inconclusive, so it is seen
                ok_gold = gold_rows.loc[gold_rows["status"] == "ok", "score"]
                rows.append(BlindspotRow(
                    str(evaluator), str(aspect), str(perturbation), higher,
                    float(ok_gold.mean()) if len(ok_gold) else math.nan, [], 0.0, False, False,
                    skip_counts.get(str(perturbation), 0), len(pgroup),
                    int((pgroup["status"] != "ok").sum()), int(pgroup["severity"].nunique()),
                    max_missing))
                continue
            gold = float(np.mean([p.gold for p in points]))
            tol = max(abs_tol, rel_tol * abs(gold))
            sign = _sign(higher)
            rank_pass = all(sign * p.delta < -tol for p in points)
            ordered = sorted(points, key=lambda p: p.noise_ratio)
            # paired deltas, so each step compares against gold on the same examples
            deltas = [0.0] + [sign * p.delta for p in ordered]
            monotonic_pass = all(b <= a + tol for a, b in itertools.pairwise(deltas))
            gold_part = gold_rows[gold_rows["example_id"].isin(pgroup["example_id"])]
            n_scores = len(pgroup) + len(gold_part)
            n_missing = int((pgroup["status"] != "ok").sum() + (gold_part["status"] != "ok").sum())
            empty = int(pgroup["severity"].nunique()) - len(points)
            rows.append(BlindspotRow(str(evaluator), str(aspect), str(perturbation), higher, gold,
                                     points, tol, rank_pass, monotonic_pass,
                                     skip_counts.get(str(perturbation), 0), n_scores, n_missing,
                                     empty, max_missing))
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
