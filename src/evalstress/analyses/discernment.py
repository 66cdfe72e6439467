"""Discernment of hierarchical perturbations (paper 003, sec. 3.3).

For each evaluator, task and perturbation unit (perturbation x severity):
1. one-sided Wilcoxon signed-rank test per evaluator aspect, H1: original scores greater than
   perturbed (sign flipped for lower-is-better scores); pairing as in `analyses.paired`;
2. combined p over the aspects exactly as the paper writes it, p = 1 / sum_j 1/p_j, and with
   expert weights p^EW = 1 / sum_j EW_j / p_j; optionally Wilson's asymptotically exact HMP;
3. D = log_0.05(p), D^EW = log_0.05(p^EW); D = 1 is the significance threshold;
4. per severity group (minor / major when the severities are labels, and "all"):
   D_avg, the mean over levels (character, word, sentence) of the mean D within each level,
   so every level counts equally whatever its number of perturbations; D_min, the minimum.
   A unit of severity `default` (a perturbation paper 003 applies at one degree only, such as
   QA's random answer) belongs to the minor and the major group alike, so neither group loses
   that level.

Expert weights come per task and perturbation ({task or "*": {perturbation: {aspect: weight}}},
normalised to sum 1): a mapping, a YAML file of that shape (under `tasks:`), or `builtin`, the
weights shipped in criteria/expert_weights.yaml (this project's votes for paper 003's task
metrics; the paper gives its survey only as a chart). A weight's name matches an evaluator
aspect directly or through the aspect aliases (consistency -> faithfulness, accuracy ->
adequacy, ...), else the evaluator's aspects that stand for its nearest ancestor in the aspect
tree (an overall score covers fluency), shared equally; a score that names no quality aspect
(BLEU, ROUGE-L) stands for overall quality here, so a one-score metric gets the whole weight
and D^EW = D, as paper 003 has for its one-metric QA task. Without weights for a unit the
default is derived from paper 000's expectation data: equal weight on every evaluator aspect
whose quality aspect the perturbation should move (the S_T cells of Table 21, or the
perturbation's declared damages and their ancestors), zero elsewhere. When no aspect
qualifies, D^EW is missing with that reason.

LLM-written variants nothing verified (`analyses.trust`) are left out unless `trust` keeps them;
each unit counts the pairs behind it from an attack below the precision floor (`n_below_floor`)
and those resting on unverified variants kept on request (`n_unverified`).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from evalstress.analyses.expectations import expectation_for, perturbation_level
from evalstress.analyses.paired import paired_sets, quality_aspect
from evalstress.analyses.stats import (
    WilcoxonResult,
    clean,
    combine_paper,
    discernment,
    discernment_ceiling,
    hmp_wilson,
    pairs_for_discernment,
    wilcoxon_test,
)
from evalstress.analyses.trust import VariantTrust
from evalstress.core.data import TASKS
from evalstress.core.scoretable import ScoreTable
from evalstress.core.userfile import parse_user_yaml
from evalstress.criteria import ancestors
from evalstress.perturb.common import DEFAULT_LEVEL

LEVELS = ("char", "word", "sentence")
#: the root of the aspect tree: what a score that names no narrower aspect stands for
OVERALL = "overall"
SEVERITY_LABELS = ("minor", "major")

ExpertWeights = Mapping[str, Mapping[str, Mapping[str, float]]]
#: a unit's weight_source when no expert weights cover it (the fallback, marked in reports)
DEFAULT_SOURCE = "default: paper 000 expectations (equal weight on aspects it should move)"


@dataclass
class AspectTest:
    aspect: str
    n: int
    n_missing: int
    n_seeds: int
    mean_difference: float | None  # mean of (original - perturbed), oriented
    wilcoxon: WilcoxonResult
    d: float | None  # log_0.05 of this aspect's own p
    #: the largest D a test on `n` pairs can give (`stats.discernment_ceiling`): an upper bound
    d_ceiling: float = 0.0


@dataclass
class DiscernmentUnit:
    evaluator: str
    task: str
    perturbation: str
    severity: str
    level: str | None
    tests: list[AspectTest]
    p: float | None
    p_ew: float | None
    d: float | None
    d_ew: float | None
    weights: dict[str, float]
    weight_source: str
    p_hmp: float | None = None
    d_hmp: float | None = None
    note: str = ""
    n_below_floor: int = 0  # pairs whose variants come from an attack below the floor
    n_unverified: int = 0  # pairs whose variants nothing verified (kept on request)
    #: the largest combined D its aspects' sample sizes allow: each aspect at p = 2^-n_j,
    #: combined as the unit's p is (so M aspects of n pairs reach (n ln 2 + ln M) / ln 20)
    d_ceiling: float | None = None

    @property
    def significant(self) -> bool:
        return self.d is not None and self.d >= 1


@dataclass
class DiscernmentSummary:
    evaluator: str
    task: str
    group: str  # "minor", "major" or "all"
    d_avg: float | None
    d_min: float | None
    d_avg_ew: float | None
    d_min_ew: float | None
    d_min_at: str | None
    d_min_ew_at: str | None
    level_weights: dict[str, float]  # weight of each unit of a level in D_avg
    units_per_level: dict[str, int]
    n_units: int
    n_excluded: int  # units without a combined p (no testable pairs) or without a level
    #: units whose n cannot reach D = 1 (d_ceiling below 1): "too few examples", left out of
    #: D_avg and D_min, which they would pull down whatever the evaluator does
    n_too_few: int = 0


@dataclass
class DiscernmentResult:
    units: list[DiscernmentUnit]
    summaries: list[DiscernmentSummary]
    alpha: float
    zero_method: str
    hmp: bool
    notes: list[str] = field(default_factory=list)
    trust: VariantTrust = field(default_factory=VariantTrust)

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis": "discernment",
            "method": {
                "test": "one-sided Wilcoxon signed-rank per aspect, H1: original > perturbed",
                "zero_method": self.zero_method,
                "combination": "p = 1 / sum_j (w_j / p_j) (paper 003); w_j = 1 or expert weights",
                "hmp_wilson": self.hmp,
                "score": f"D = log_{self.alpha}(p); D >= 1 <=> p <= {self.alpha}",
                "d_avg": "mean over levels (char, word, sentence) of the mean D of each level; "
                         "D_avg and D_min leave out units whose ceiling is below D = 1 (too few "
                         "examples, n_too_few)",
                "pairing": "per example, variant scores averaged over seeds",
                "ceiling": "d_ceiling = n ln 2 / ln(1/alpha): the D of p = 2^-n, the smallest "
                           "one-sided p of n pairs (exact test, no zeros or ties; zeros and "
                           "ties only raise the smallest p, so it is an upper bound); a test "
                           f"needs {pairs_for_discernment(1.0, self.alpha)} pairs to reach "
                           f"D = 1 and {pairs_for_discernment(2.0, self.alpha)} for D = 2",
            },
            "threshold": 1.0,
            "alpha": self.alpha,
            "units": [_clean_dict(asdict(u)) for u in self.units],
            "summaries": [_clean_dict(asdict(s)) for s in self.summaries],
            "notes": self.notes,
            "trust": self.trust.to_dict(),
        }


def _clean_dict(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean_dict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_dict(v) for v in value]
    if isinstance(value, float):
        return clean(value)
    return value


def level_weighted_mean(values: Mapping[str, list[float]]) -> tuple[float | None, dict[str, float]]:
    """Paper 003's D_avg: equal total weight per level, equal weight within a level.

    Returns the average and the weight each unit of a level receives (1 / (L * n_level)).
    """
    present = {lvl: v for lvl, v in values.items() if v}
    if not present:
        return None, {}
    share = 1.0 / len(present)
    weights = {lvl: share / len(v) for lvl, v in present.items()}
    total = sum(weights[lvl] * sum(v) for lvl, v in present.items())
    return float(total), weights


def default_weights(perturbation: str, evaluator: str, evaluator_aspects: list[str],
                    aspect_map: Mapping[str, str] | None) -> dict[str, float]:
    """Equal weights on the evaluator aspects the expectation data says the perturbation moves."""
    row = expectation_for(perturbation)
    if row is None:
        return {}
    chosen = [a for a in evaluator_aspects
              if weighed_as(evaluator, a, aspect_map) in row.should_move]
    return {a: 1.0 / len(chosen) for a in chosen} if chosen else {}


BUILTIN_WEIGHTS = "builtin"
#: Product tasks without a row of their own in the built-in weights read these tasks' rows.
WEIGHT_TASK = {"dialogue": "summarization", "data-to-text": "summarization",
               "open-ended": "summarization"}


@dataclass(frozen=True)
class LoadedWeights:
    """Expert weights with where they came from and the extra aspect aliases of their file."""

    table: ExpertWeights
    source: str
    aliases: Mapping[str, str] = field(default_factory=dict)


def load_expert_weights(spec: ExpertWeights | str | Path | None) -> LoadedWeights | None:
    """A mapping as given, `builtin` (criteria/expert_weights.yaml), or a YAML file path."""
    if spec is None or (isinstance(spec, Mapping) and not spec):
        return None
    if isinstance(spec, Mapping):
        return LoadedWeights(_checked(spec, "expert_weights"), "user")
    if str(spec) == BUILTIN_WEIGHTS:
        text = (resources.files("evalstress") / "criteria" / "expert_weights.yaml").read_text(
            "utf-8")
        where, source = "criteria/expert_weights.yaml", (
            "builtin: criteria/expert_weights.yaml (this project's votes, not the paper's survey)")
    else:
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"expert_weights: '{spec}' is neither '{BUILTIN_WEIGHTS}' nor a "
                             "YAML file")
        text, where, source = path.read_text(encoding="utf-8"), str(path), f"file: {path}"
    try:
        raw = parse_user_yaml(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: invalid YAML ({exc})") from None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("tasks"), Mapping):
        raise ValueError(f"{where}: expected a mapping with a 'tasks:' mapping of "
                         "{task: {perturbation: {aspect: weight}}}")
    aliases = raw.get("aliases") or {}
    if not isinstance(aliases, Mapping):
        raise ValueError(f"{where}: field 'aliases' must map names to aspects")
    return LoadedWeights(_checked(raw["tasks"], where), source,
                         {str(k): str(v) for k, v in aliases.items()})


def _checked(table: Mapping[str, Any], where: str) -> dict[str, dict[str, dict[str, float]]]:
    """The table with every weight a number, or an error naming the field."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for task, rows in table.items():
        if task != "*" and task not in TASKS:
            close = difflib.get_close_matches(str(task), TASKS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(f"{where}: unknown task '{task}'{hint}; known: "
                             f"{', '.join(TASKS)} or '*'")
        if not isinstance(rows, Mapping):
            raise ValueError(f"{where}: field '{task}' must map perturbations to weights")
        out[str(task)] = {}
        for pert, weights in rows.items():
            if not isinstance(weights, Mapping) or not weights:
                raise ValueError(f"{where}: field '{task}.{pert}' must map aspects to weights")
            try:
                out[str(task)][str(pert)] = {str(a): float(w) for a, w in weights.items()}
            except (TypeError, ValueError):
                raise ValueError(f"{where}: field '{task}.{pert}': weights must be "
                                 "numbers") from None
    return out


def weighed_as(evaluator: str, aspect: str, aspect_map: Mapping[str, str] | None,
               aliases: Mapping[str, str] | None = None) -> str:
    """The quality aspect an evaluator's aspect takes expert weight for: the one it stands for
    (`quality_aspect`, or the weights file's aliases), else `overall`: a metric's own score
    (bleu, rougeL) claims the text's whole quality, as the one metric of paper 003's QA task,
    where D^EW = D."""
    return ((aliases or {}).get(aspect) or quality_aspect(evaluator, aspect, aspect_map)
            or OVERALL)


def _match_weights(weights: Mapping[str, float], evaluator: str, tested: list[str],
                   aspect_map: Mapping[str, str] | None,
                   aliases: Mapping[str, str]) -> dict[str, float]:
    """Weights keyed by the evaluator's own aspect names.

    A weight named like a tested aspect goes to it; otherwise to the tested aspects that stand
    for its quality aspect or, when none does, for the nearest ancestor of it that one does
    (aspects.yaml: an overall score covers fluency, coherence, ...), shared equally among them
    (`weighed_as`). A weight on a metric no tested aspect covers is dropped.
    """
    stands = {a: weighed_as(evaluator, a, aspect_map, aliases) for a in tested}
    out: dict[str, float] = {}
    for name, weight in weights.items():
        if name in tested:
            out[name] = out.get(name, 0.0) + weight
            continue
        target = aliases.get(name) or quality_aspect(evaluator, name, aspect_map)
        for scope in (target, *ancestors(target)) if target is not None else ():
            match = [a for a in tested if stands[a] == scope]
            if match:
                for a in match:
                    out[a] = out.get(a, 0.0) + weight / len(match)
                break
    return out


def _user_weights(expert_weights: ExpertWeights | None, task: str,
                  perturbation: str) -> dict[str, float] | None:
    if not expert_weights:
        return None
    for key in dict.fromkeys((task, WEIGHT_TASK.get(task, task), "*")):
        per_task = expert_weights.get(key)
        if per_task and perturbation in per_task:
            raw = {str(a): float(w) for a, w in per_task[perturbation].items()}
            if any(w < 0 for w in raw.values()) or sum(raw.values()) <= 0:
                raise ValueError(f"expert_weights['{key}']['{perturbation}']: weights must be "
                                 "non-negative with a positive sum")
            total = sum(raw.values())
            return {a: w / total for a, w in raw.items()}
    return None


def discernment_analysis(table: pd.DataFrame | ScoreTable, *,
                         expert_weights: ExpertWeights | str | Path | None = None,
                         aspect_map: Mapping[str, str] | None = None,
                         level_map: Mapping[str, str] | None = None, alpha: float = 0.05,
                         zero_method: str = "wilcox", hmp: bool = False,
                         by_task: bool = True,
                         trust: VariantTrust | None = None) -> DiscernmentResult:
    """Run the DHP statistics on a score table (see the module docstring)."""
    trust = trust or VariantTrust()
    notes: list[str] = []
    loaded = load_expert_weights(expert_weights)
    grouped: dict[tuple[str, str, str, str], list[Any]] = defaultdict(list)
    for ps in paired_sets(table, by_task=by_task):
        if trust.keeps(ps.perturbation):
            grouped[(ps.evaluator, ps.task, ps.perturbation, ps.severity)].append(ps)
    if not grouped:
        notes.append("no paired segment-level scores: nothing to test")
    units: list[DiscernmentUnit] = []
    defaulted: dict[str, set[str]] = defaultdict(set)  # perturbation -> tasks without a row
    for (evaluator, task, pert, severity), sets in grouped.items():
        tests = []
        for ps in sets:
            w = wilcoxon_test(ps.differences, alternative="greater",
                              zero_method=zero_method)  # type: ignore[arg-type]
            mean = float(np.mean(ps.differences)) if ps.differences.size else None
            tests.append(AspectTest(ps.aspect, int(ps.differences.size), ps.n_missing,
                                    ps.n_seeds, mean, w, discernment(w.pvalue, alpha),
                                    discernment_ceiling(int(ps.differences.size), alpha)))
        usable = [t for t in tests if t.wilcoxon.pvalue is not None]
        level = perturbation_level(pert, dict(level_map) if level_map else None)
        note = ""
        p = combine_paper([t.wilcoxon.pvalue for t in usable]) if usable else None  # type: ignore[misc]
        if not usable:
            note = "no aspect had a testable pair"
        weights = _user_weights(loaded.table if loaded else None, task, pert)
        source = loaded.source if loaded else "user"
        if weights is not None and loaded is not None:
            weights = _match_weights(weights, evaluator, [t.aspect for t in tests], aspect_map,
                                     loaded.aliases)
        if weights is None:
            weights = default_weights(pert, evaluator, [t.aspect for t in tests], aspect_map)
            source = DEFAULT_SOURCE
            defaulted[pert].add(task)
        p_ew = None
        if usable and weights:
            w_vec = [weights.get(t.aspect, 0.0) for t in usable]
            if any(x > 0 for x in w_vec):
                p_ew = combine_paper([t.wilcoxon.pvalue for t in usable],  # type: ignore[misc]
                                     w_vec)
        if usable and p_ew is None:
            note = (note + "; " if note else "") + (
                "no expert weight on a tested aspect: D^EW undefined (give expert_weights or an "
                "aspect_map)")
        p_h = None
        if hmp and usable:
            p_h = hmp_wilson([t.wilcoxon.pvalue for t in usable])  # type: ignore[misc]
        units.append(DiscernmentUnit(
            evaluator, task, pert, severity, level, tests, p, p_ew, discernment(p, alpha),
            discernment(p_ew, alpha), weights, source, p_h, discernment(p_h, alpha), note,
            *trust.counts(pert, max((t.n for t in tests), default=0)),
            combined_ceiling([t.n for t in usable], alpha)))
    if defaulted:
        named = "; ".join(f"{pert} ({', '.join(sorted(tasks))})"
                          for pert, tasks in sorted(defaulted.items()))
        notes.append(f"no expert weights for {named}: their D^EW uses default weights derived "
                     "from paper 000's expectation matrix (Table 21) and the aspect hierarchy, "
                     "not expert votes (weight_source of each unit; give expert_weights rows)")
    unweighed = sorted({f"{u.evaluator} on {u.perturbation}" for u in units
                        if u.p is not None and u.p_ew is None})
    if unweighed:
        notes.append(f"D^EW undefined for {', '.join(unweighed)}: no expert weight falls on an "
                     "aspect the evaluator scores (give expert_weights or an aspect_map)")
    missing_level = sorted({u.perturbation for u in units if u.level is None})
    if missing_level:
        notes.append(f"no level known for {', '.join(missing_level)}: left out of D_avg "
                     "(give level_map)")
    set_aside = trust.note({u.perturbation for u in units})
    if set_aside:
        notes.append(set_aside)
    return DiscernmentResult(units, _summaries(units), alpha, zero_method, hmp, notes, trust)


def combined_ceiling(ns: list[int], alpha: float = 0.05) -> float | None:
    """A unit's largest D: every tested aspect (of n_j pairs) at its smallest p, 2^-n_j,
    combined as paper 003 combines them (None without a test)."""
    sizes = np.array([n for n in ns if n > 0], dtype=float)
    if not sizes.size:
        return None
    # -ln p = ln sum_j 2^n_j (paper 003's p = 1 / sum_j 1/p_j), summed in logs: 2^n overflows
    top = float(sizes.max())
    return (top * np.log(2) + float(np.log(np.sum(np.exp((sizes - top) * np.log(2)))))
            ) / np.log(1 / alpha)


def _summaries(units: list[DiscernmentUnit]) -> list[DiscernmentSummary]:
    out = []
    by_eval: dict[tuple[str, str], list[DiscernmentUnit]] = defaultdict(list)
    for u in units:
        by_eval[(u.evaluator, u.task)].append(u)
    for (evaluator, task), members in by_eval.items():
        labels = {u.severity for u in members}
        graded = [g for g in SEVERITY_LABELS if g in labels]
        groups = ["all"]
        if graded and labels <= {*SEVERITY_LABELS, DEFAULT_LEVEL}:
            groups = [*graded, "all"]
        for group in groups:
            chosen = [u for u in members if group == "all" or u.severity in (group, DEFAULT_LEVEL)]
            out.append(_summary(evaluator, task, group, chosen))
    return out


def _summary(evaluator: str, task: str, group: str,
             units: list[DiscernmentUnit]) -> DiscernmentSummary:
    def name(u: DiscernmentUnit) -> str:
        return f"{u.perturbation}@{u.severity}"

    few = {id(u) for u in units if u.d_ceiling is not None and u.d_ceiling < 1 - 1e-9}
    valid = [u for u in units if u.d is not None and u.level in LEVELS and id(u) not in few]
    by_level: dict[str, list[float]] = {lvl: [u.d for u in valid if u.level == lvl]  # type: ignore[misc]
                                        for lvl in LEVELS}
    d_avg, weights = level_weighted_mean(by_level)
    valid_ew = [u for u in valid if u.d_ew is not None]
    by_level_ew = {lvl: [u.d_ew for u in valid_ew if u.level == lvl] for lvl in LEVELS}
    d_avg_ew, _ = level_weighted_mean(by_level_ew)  # type: ignore[arg-type]
    low = min(valid, key=lambda u: u.d, default=None)  # type: ignore[arg-type,return-value]
    low_ew = min(valid_ew, key=lambda u: u.d_ew, default=None)  # type: ignore[arg-type,return-value]
    return DiscernmentSummary(
        evaluator, task, group, d_avg, low.d if low else None, d_avg_ew,
        low_ew.d_ew if low_ew else None, name(low) if low else None,
        name(low_ew) if low_ew else None, weights,
        {lvl: len(v) for lvl, v in by_level.items() if v}, len(valid),
        len(units) - len(valid) - len(few), len(few))
