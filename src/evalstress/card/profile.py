"""How far the evaluator's score moves under each perturbation, with intervals: the numbers the
card's tables and findings quote beside the analyses' verdicts.

Every figure comes from the paired differences of `analyses.paired` (one pair per example:
its original against its variant, the seeds averaged), oriented so that a positive change
means the variant scored worse. Per (aspect, perturbation, severity): the mean change with a
seeded bootstrap 95% interval, the relative change as a ratio of means (mean variant / mean
original - 1, turned so that positive = scored worse) with its interval bootstrapped over
examples (`analyses.verdicts.ratio_interval`: numerator and denominator resampled together, so
a score bounded at 0 never loses more than 100%; none for a score with negative values, whose
zero means nothing), the rank-biserial effect size and a one-sided Wilcoxon p (H1: the variant
scores worse).

The sensitivity profile (paper 000's view for a single-score metric): for each quality aspect
of the hierarchy, how much the score moves under the perturbations aimed at that aspect (the
attack's target in the expectation table, read through `analyses.expectations`), pooled over
those perturbations at their heaviest severity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.expectations import expectation_for
from evalstress.analyses.paired import PairedSet, paired_sets
from evalstress.analyses.stats import (
    clean,
    discernment_ceiling,
    rank_biserial,
    wilcoxon_test,
)
from evalstress.analyses.verdicts import (
    bootstrap_means,
    minimum_detectable,
    percentile_interval,
    ratio_interval,
    standard_error,
)
from evalstress.core.scoretable import ScoreTable
from evalstress.criteria import aspects
from evalstress.perturb.base import registry as perturbations

#: bootstrap resamples and seed of every interval on the card
N_BOOT = 1000
SEED = 0


def relative_drop(originals: np.ndarray, variants: np.ndarray, higher_is_better: bool,
                  clusters: np.ndarray | None = None, level: float = 0.95
                  ) -> tuple[float | None, float | None, float | None]:
    """The relative change as a drop (positive = scored worse) with its interval: the ratio of
    means bootstrapped over examples, turned to the metric's direction; (None, None, None) for
    a score without a meaningful zero. `clusters` (an example id per pair) makes pairs of one
    example one unit of the resampling (a pooled set: the per-example sums keep the ratio)."""
    g = np.asarray(originals, dtype=float)
    v = np.asarray(variants, dtype=float)
    if clusters is not None and len(clusters) == g.size:
        frame = pd.DataFrame({"id": clusters, "g": g, "v": v}).groupby("id", sort=True).sum()
        g, v = frame["g"].to_numpy(dtype=float), frame["v"].to_numpy(dtype=float)
    found = ratio_interval(g, v, level, n_boot=N_BOOT, seed=SEED)
    if found is None:
        return None, None, None
    change, low, high = found
    if higher_is_better:  # a fall of the score is the drop
        change, low, high = -change, -high, -low
    return clean(change + 0.0), clean(low + 0.0), clean(high + 0.0)


def change_figures(differences: np.ndarray, originals: np.ndarray,
                   variants: np.ndarray | None = None, higher_is_better: bool = True,
                   clusters: np.ndarray | None = None) -> dict[str, Any]:
    """Mean change and its interval in the score's units (percentile bootstrap over examples)
    with its standard error and smallest detectable change (`verdicts.minimum_detectable`, at
    95% and 80% power), the means of both sides, the relative drop (`relative_drop`; none
    without `variants`), effect and p."""
    d = np.asarray(differences, dtype=float)
    g = np.asarray(originals, dtype=float)
    change = float(d.mean()) if d.size else None
    boot = bootstrap_means(d, n_boot=N_BOOT, seed=SEED)
    low, high = percentile_interval(boot, 0.95) or (None, None)
    se = standard_error(boot)
    test = wilcoxon_test(d, alternative="greater") if d.size else None
    relative: tuple[float | None, float | None, float | None] = (None, None, None)
    if variants is not None and d.size:
        relative = relative_drop(g, np.asarray(variants, dtype=float), higher_is_better,
                                 clusters)
    return {"n": int(d.size), "change": clean(change), "ci_low": clean(low),
            "ci_high": clean(high), "se": clean(se),
            "mde": clean(minimum_detectable(se, 0.95)),
            "mean_original": clean(float(np.mean(np.abs(g)))) if d.size else None,
            "gold": clean(float(g.mean())) if d.size else None,
            "mean": clean(float(np.mean(variants))) if variants is not None and d.size
            else None,
            "higher_is_better": higher_is_better,
            "relative_change": relative[0], "relative_ci_low": relative[1],
            "relative_ci_high": relative[2], "rank_biserial": clean(rank_biserial(d)),
            "pvalue": clean(test.pvalue) if test is not None else None}


def figures_of(paired: PairedSet) -> dict[str, Any]:
    """`change_figures` of one paired set."""
    return change_figures(paired.differences, paired.original, paired.variant,
                          paired.higher_is_better)


def paired_rows(table: pd.DataFrame | ScoreTable, *, by_task: bool = False
                ) -> list[dict[str, Any]]:
    """One row of change figures per (aspect, [task], perturbation, severity)."""
    rows = []
    for paired in paired_sets(table, by_task=by_task):
        rows.append({"aspect": paired.aspect, **({"task": paired.task} if by_task else {}),
                     "perturbation": paired.perturbation, "severity": paired.severity,
                     "severity_rank": paired.severity_rank, "n_missing": paired.n_missing,
                     **figures_of(paired)})
    return rows


#: the blind-spot row's keys a card keeps beside the decisive verdict
STATISTICAL = ("higher_is_better", "rank_strict_pass", "monotonic_strict_pass",
               "rank_tolerant_pass", "monotonic_tolerant_pass", "tolerant_tolerance", "outcome",
               "monotonic_outcome", "n_to_settle", "delta", "delta_rule", "steps",
               "blind_up_to", "detects_from")


def blindspot_rows(analysis: Mapping[str, Any], changes: Sequence[Mapping[str, Any]]
                   ) -> list[dict[str, Any]]:
    """The blind-spot analysis's verdicts per (aspect, perturbation), each with its severities'
    change figures (the analysis's own delta per severity kept beside them)."""
    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in changes:
        by_key.setdefault((str(row["aspect"]), str(row["perturbation"])), []).append(row)
    out = []
    for row in analysis.get("rows") or []:
        points = {str(p["severity"]): p for p in row.get("points") or []}
        severities = []
        for change in sorted(by_key.get((row["aspect"], row["perturbation"]), []),
                             key=lambda r: r["severity_rank"]):
            point = points.get(str(change["severity"]), {})
            severities.append({**{k: v for k, v in change.items()
                                  if k not in ("aspect", "perturbation")},
                               "noise_ratio": point.get("noise_ratio"),
                               "delta": point.get("delta"), "mean": point.get("mean"),
                               "gold": point.get("gold"), "test": point.get("test"),
                               "relative": point.get("relative")})
        out.append({"aspect": row["aspect"], "perturbation": row["perturbation"],
                    "verdict": row.get("verdict"), "rank_pass": row.get("rank_pass"),
                    "monotonic_pass": row.get("monotonic_pass"), "gold": row.get("gold"),
                    "tolerance": row.get("tolerance"),
                    "inconclusive_reason": row.get("inconclusive_reason"),
                    # paper 002's strict verdict and the tolerant one, beside the four-way
                    # verdict from intervals (analyses.blindspot_stats)
                    **{key: row.get(key) for key in STATISTICAL if key in row},
                    "severities": severities})
    return out


def discernment_units(analysis: Mapping[str, Any], changes: Sequence[Mapping[str, Any]]
                      ) -> list[dict[str, Any]]:
    """DHP's units (task, perturbation, minor/major) with D and p, per evaluator aspect, beside
    the change figures of the same pairs."""
    by_key = {(str(r["aspect"]), str(r["task"]), str(r["perturbation"]), str(r["severity"])): r
              for r in changes}
    out = []
    for unit in analysis.get("units") or []:
        for test in unit.get("tests") or []:
            key = (str(test["aspect"]), str(unit["task"]), str(unit["perturbation"]),
                   str(unit["severity"]))
            change = by_key.get(key, {})
            out.append({"aspect": test["aspect"], "task": unit["task"],
                        "perturbation": unit["perturbation"], "severity": unit["severity"],
                        "level": unit.get("level"), "d": clean(test.get("d")),
                        "d_unit": clean(unit.get("d")),
                        "d_ceiling": discernment_ceiling(int(test.get("n") or 0),
                                                         float(analysis.get("alpha") or 0.05)),
                        "pvalue": clean((test.get("wilcoxon") or {}).get("pvalue")),
                        **{k: v for k, v in change.items()
                           if k not in ("aspect", "task", "perturbation", "severity", "pvalue")}})
    return out


def aimed_at(perturbation: str) -> list[str]:
    """The quality aspects a perturbation is aimed at: its attack's target in the expectation
    table, else the most specific aspects it declares it damages (none of whose descendants it
    also declares)."""
    row = expectation_for(perturbation)
    if row is not None and row.target:
        return [row.target]
    cls = perturbations().get(perturbation)
    if cls is None:
        return []
    known = aspects()
    damaged = [a for a in cls.damages if a in known]
    parents = {known[a].parent for a in damaged}
    return [a for a in damaged if a not in parents]


def sensitivity_profile(table: pd.DataFrame | ScoreTable,
                        quality: Mapping[str, str | None]) -> dict[str, Any]:
    """Per evaluator aspect and quality aspect of the hierarchy: the change under the
    perturbations aimed at that quality aspect, pooled over them at their heaviest severity;
    beside it every (perturbation, severity) row. `quality` maps the evaluator's aspects to
    the quality aspect each stands for (shown, not used to pick rows)."""
    rows: list[dict[str, Any]] = []
    heaviest: dict[tuple[str, str], PairedSet] = {}
    for paired in paired_sets(table):
        targets = aimed_at(paired.perturbation)
        rows.append({"aspect": paired.aspect, "aimed_at": targets,
                     "perturbation": paired.perturbation, "severity": paired.severity,
                     "severity_rank": paired.severity_rank, "n_missing": paired.n_missing,
                     **figures_of(paired)})
        key = (paired.aspect, paired.perturbation)
        if key not in heaviest or paired.severity_rank > heaviest[key].severity_rank:
            heaviest[key] = paired
    evaluator_aspects = sorted({a for a, _ in heaviest} | set(quality))
    profile = []
    for aspect in evaluator_aspects:
        for target in aspects():
            chosen = [p for (a, _), p in sorted(heaviest.items())
                      if a == aspect and target in aimed_at(p.perturbation)]
            if not chosen:
                profile.append({"aspect": aspect, "quality_aspect": target, "probed": False,
                                "perturbations": [], "n": 0})
                continue
            differences = np.concatenate([p.differences for p in chosen])
            originals = np.concatenate([p.original for p in chosen])
            variants = np.concatenate([p.variant for p in chosen])
            ids = [p.example_ids for p in chosen]
            clusters = (np.concatenate([np.asarray(i, dtype=str) for i in ids])
                        if all(i is not None for i in ids) else None)
            profile.append({"aspect": aspect, "quality_aspect": target, "probed": True,
                            "perturbations": [f"{p.perturbation}@{p.severity}" for p in chosen],
                            **change_figures(differences, originals, variants,
                                             chosen[0].higher_is_better, clusters)})
    return {"stands_for": dict(quality), "aspects": profile, "rows": rows,
            "pooling": "per quality aspect: the pairs of every perturbation aimed at it, each "
                       "at its heaviest severity, pooled (an example counts once per "
                       "perturbation)"}
