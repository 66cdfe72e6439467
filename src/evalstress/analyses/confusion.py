"""Criteria confusion (paper 000, sec. 3 and 5): does an evaluator move what it should, and
only that?

Each evaluator aspect is mapped to a quality aspect (`analyses.paired.quality_aspect`). For a
perturbation, the expectation matrix (criteria/expectations.yaml: Table 21, or the fallback from
the perturbation's metadata) splits quality aspects into S_T (should move: the expectation and
the humans agree) and S_F (should stay: both agree it should not). Per item (evaluator aspect x
perturbation x severity):

- change = mean over examples of (original - perturbed), oriented so positive = scored worse;
  a seeded bootstrap percentile interval of that mean; the matched-pairs rank-biserial
  correlation r (scale-free effect size) and Cohen's d_z.
- directional test (S_T): one-sided Wilcoxon, H1 original > perturbed. PASS when
  p < alpha and r >= min_effect; otherwise FAIL (the evaluator misses the damage).
- invariance test (S_F): two-sided Wilcoxon. FAIL (confusion: it moved what it should not)
  when p < alpha and |r| >= min_effect; otherwise PASS. A pass means no significant,
  non-negligible change was detected, not that the change is proven to be zero; read the CI.
- aspects in neither set (disputed or undetermined) are reported without a verdict.
Defaults: alpha = 0.05, min_effect = 0.3 (a moderate rank-biserial effect); no correction
for multiple comparisons (the counts are descriptive; the thresholds are in every result).

Beside the tests: the inter-aspect correlation matrix (Pearson) of the evaluator's scores over
all scored texts, and, where examples carry human scores, the humans' matrix. Under the card's
sequential design (`matrices_over="common"`) a unit stops scoring once its items settle, so
all scored texts would over-represent the units that stayed open: the matrices then take only
the examples every unit scored (each example's original and all its variants).

LLM-written variants nothing verified (`analyses.trust`: their attack's checks measured below
the precision floor, no verifier) are left out of the tests and the matrices unless `trust`
keeps them; every item counts the pairs behind it that come from an attack below the floor
(`n_below_floor`) and, when unverified variants were kept, those that rest on them
(`n_unverified`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.expectations import expectation_for
from evalstress.analyses.paired import paired_sets, quality_aspect
from evalstress.analyses.stats import (
    clean,
    cohens_dz,
    correlation,
    mean_ci,
    rank_biserial,
    wilcoxon_test,
)
from evalstress.analyses.trust import VariantTrust
from evalstress.core.records import CORPUS
from evalstress.core.scoretable import ScoreTable, frame_or_groups
from evalstress.core.strict import unknown_name_error
from evalstress.criteria import Expectation

#: which texts the inter-aspect matrices take: every scored text, or the examples every unit
#: scored (a sequential design's run)
MATRICES_OVER = ("all", "common")


@dataclass
class ConfusionItem:
    evaluator: str
    aspect: str  # the evaluator's aspect
    quality_aspect: str
    perturbation: str
    severity: str
    test: str  # directional | invariance | none
    expectation_source: str  # table21 | metadata
    n: int
    n_missing: int
    change: float | None
    ci_low: float | None
    ci_high: float | None
    pvalue: float | None
    rank_biserial: float | None
    cohens_dz: float | None
    passed: bool | None  # None when no verdict (no test or nothing to test)
    n_below_floor: int = 0  # pairs whose variants come from an attack below the floor
    n_unverified: int = 0  # pairs whose variants nothing verified (kept on request)


@dataclass
class ConfusionSummary:
    evaluator: str
    directional_tests: int
    directional_passed: int
    invariance_tests: int
    invariance_failed: int

    @property
    def miss_rate(self) -> float | None:
        """Share of S_T items the evaluator fails to move."""
        if not self.directional_tests:
            return None
        return 1 - self.directional_passed / self.directional_tests

    @property
    def confusion_rate(self) -> float | None:
        """Share of S_F items the evaluator moves although it should not."""
        if not self.invariance_tests:
            return None
        return self.invariance_failed / self.invariance_tests

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "miss_rate": clean(self.miss_rate),
                "confusion_rate": clean(self.confusion_rate)}


@dataclass
class AspectMatrix:
    """A correlation matrix between named score columns."""

    name: str
    labels: list[str]
    values: list[list[float | None]]
    n: int
    method: str = "pearson"


@dataclass
class ConfusionResult:
    items: list[ConfusionItem]
    summaries: list[ConfusionSummary]
    matrices: list[AspectMatrix]
    alpha: float
    min_effect: float
    notes: list[str] = field(default_factory=list)
    trust: VariantTrust = field(default_factory=VariantTrust)

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis": "criteria-confusion",
            "thresholds": {
                "alpha": self.alpha, "min_effect": self.min_effect,
                "directional": "pass iff one-sided Wilcoxon p < alpha and rank-biserial r >= "
                               "min_effect",
                "invariance": "fail iff two-sided Wilcoxon p < alpha and |r| >= min_effect",
                "change": "mean of (original - perturbed), oriented: positive = scored worse",
            },
            "items": [{k: clean(v) if isinstance(v, float) else v for k, v in asdict(i).items()}
                      for i in self.items],
            "summaries": [s.to_dict() for s in self.summaries],
            "matrices": [asdict(m) for m in self.matrices],
            "notes": self.notes,
            "trust": self.trust.to_dict(),
        }


def criteria_confusion(table: pd.DataFrame | ScoreTable, *, aspect_map: Mapping[str, str] | None = None,
                       alpha: float = 0.05, min_effect: float = 0.3, n_boot: int = 1000,
                       seed: int = 0,
                       human: pd.DataFrame | None = None,
                       trust: VariantTrust | None = None,
                       matrices_over: str = "all") -> ConfusionResult:
    """Directional and invariance tests plus inter-aspect matrices (see module docstring).

    `human`, if given, has one row per example and one column per human-scored aspect.
    `trust` says which LLM-written perturbations are unverified (left out unless it includes
    them) or below the precision floor. `matrices_over`: "all" scored texts, or only the
    examples every unit scored ("common", for a run whose units stopped early).
    """
    if matrices_over not in MATRICES_OVER:
        raise unknown_name_error("matrices_over", matrices_over, MATRICES_OVER,
                                 "criteria-confusion")
    trust = trust or VariantTrust()
    items: list[ConfusionItem] = []
    notes: list[str] = []
    unmapped: set[str] = set()
    unknown: set[str] = set()
    used: set[str] = set()
    for ps in paired_sets(table):
        if not trust.keeps(ps.perturbation):
            continue
        used.add(ps.perturbation)
        quality = quality_aspect(ps.evaluator, ps.aspect, aspect_map)
        if quality is None:
            unmapped.add(f"{ps.evaluator}/{ps.aspect}")
            continue
        row = expectation_for(ps.perturbation)
        if row is None:
            unknown.add(ps.perturbation)
            continue
        test = test_of(quality, row)
        d = ps.differences
        low, high = mean_ci(d, n_boot=n_boot, seed=seed)
        pvalue, passed = None, None
        if test != "none" and d.size:
            alternative = "greater" if test == "directional" else "two-sided"
            w = wilcoxon_test(d, alternative=alternative)  # type: ignore[arg-type]
            pvalue = w.pvalue
            r = rank_biserial(d) or 0.0
            if pvalue is not None:
                significant = pvalue < alpha
                if test == "directional":
                    passed = significant and r >= min_effect
                else:
                    passed = not (significant and abs(r) >= min_effect)
        items.append(ConfusionItem(
            ps.evaluator, ps.aspect, quality, ps.perturbation, ps.severity, test, row.source,
            int(d.size), ps.n_missing, float(d.mean()) if d.size else None, low, high, pvalue,
            rank_biserial(d), cohens_dz(d), passed, *trust.counts(ps.perturbation, int(d.size))))
    if unmapped:
        notes.append(f"no quality aspect for {', '.join(sorted(unmapped))}: left out (pass "
                     "aspect_map, e.g. {'bleu': 'overall'})")
    if unknown:
        notes.append(f"no expectation for {', '.join(sorted(unknown))}: left out")
    set_aside = trust.note(used)
    if set_aside:
        notes.append(set_aside)
    left_out = {p for p in trust.unverified if not trust.keeps(p)}
    return ConfusionResult(items, _summaries(items),
                           inter_aspect_matrices(table, human, left_out,
                                                 common=matrices_over == "common"),
                           alpha, min_effect, notes, trust)


def test_of(quality: str, row: Expectation) -> str:
    """An item's test: directional when its quality aspect should move under the perturbation
    (S_T), invariance when it should stay (S_F), none when neither."""
    if quality in row.should_move:
        return "directional"
    return "invariance" if quality in row.should_stay else "none"


def item_test(evaluator: str, aspect: str, perturbation: str,
              aspect_map: Mapping[str, str] | None = None) -> str:
    """The test the analysis gives an evaluator aspect under a perturbation; none when the
    aspect maps to no quality aspect or the perturbation has no expectation (left out)."""
    quality = quality_aspect(evaluator, aspect, aspect_map)
    row = expectation_for(perturbation)
    return "none" if quality is None or row is None else test_of(quality, row)


def _summaries(items: Sequence[ConfusionItem]) -> list[ConfusionSummary]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for item in items:
        c = counts[item.evaluator]
        if item.passed is None:
            continue
        if item.test == "directional":
            c[0] += 1
            c[1] += int(item.passed)
        elif item.test == "invariance":
            c[2] += 1
            c[3] += int(not item.passed)
    return [ConfusionSummary(name, *c) for name, c in counts.items()]


def inter_aspect_matrices(table: pd.DataFrame | ScoreTable,
                          human: pd.DataFrame | None = None,
                          left_out: set[str] | None = None,
                          common: bool = False) -> list[AspectMatrix]:
    """Pearson correlation between the aspects of each multi-aspect evaluator over all texts
    it scored (originals and variants, but those of the `left_out` perturbations; `common`:
    only of the examples that have a text of every unit), and between the human aspects when
    given."""
    out = []
    units = ["example_id", "perturbation", "severity", "seed"]
    for (evaluator,), rows in frame_or_groups(table, ["evaluator"],
                                              [*units, "aspect", "score", "status"]):
        group = rows[(rows["example_id"] != CORPUS) & (rows["status"] == "ok")
                     & ~rows["perturbation"].isin(sorted(left_out or ()))]
        if common:
            group = group[group["example_id"].isin(common_examples(group))]
        wide = group.pivot_table(index=units, columns="aspect", values="score", aggfunc="mean")
        if wide.shape[1] >= 2:
            out.append(matrix_of(str(evaluator), wide))
    if human is not None and human.shape[1] >= 2:
        out.append(matrix_of("human", human))
    return out


def common_examples(rows: pd.DataFrame) -> list[str]:
    """The examples with a text of every (perturbation, severity) unit the rows hold (the
    original counted as one): those a sequential design scored before any unit stopped."""
    pairs = rows[["example_id", "perturbation", "severity"]].drop_duplicates()
    units = pairs.groupby("example_id").size()
    return [str(e) for e in units.index[units == len(pairs[["perturbation", "severity"]]
                                                     .drop_duplicates())]]


def matrix_of(name: str, wide: pd.DataFrame, method: str = "pearson") -> AspectMatrix:
    """Pairwise-complete correlation matrix of the columns of `wide`."""
    labels = [str(c) for c in wide.columns]
    values: list[list[float | None]] = []
    for a in wide.columns:
        line: list[float | None] = []
        for b in wide.columns:
            x = wide[a].to_numpy(dtype=float)
            y = wide[b].to_numpy(dtype=float)
            line.append(1.0 if a == b else correlation(x, y, method))  # type: ignore[arg-type]
        values.append(line)
    complete = int(np.isfinite(wide.to_numpy(dtype=float)).all(axis=1).sum())
    return AspectMatrix(name, labels, values, complete, method)
