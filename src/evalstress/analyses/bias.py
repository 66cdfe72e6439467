"""Bias of a judge: how far each bias probe moves its score ABOVE the probe's placebo.

Per evaluator aspect, probe (a perturbation of the `bias-probe` family) and probe arm, one test
of one number per example: the effect

    (probe score - original) - (placebo score - original) = probe score - placebo score,

each side averaged over the seeds of its example, signed so that positive means the probe
FAVOURS the text (a higher score where higher is better). The original cancels out; its
scores still set the default tolerance. The interval is a percentile bootstrap of the mean
effect that resamples EXAMPLES, and every test of the result is corrected together (Holm by
default), as `analyses.verdicts` decides all four-way verdicts:

- biased toward the cue: the interval lies above +tolerance;
- biased against the cue: the interval lies below -tolerance;
- no bias beyond placebo: the interval lies inside (-tolerance, +tolerance);
- inconclusive: none of these, with the examples that would settle it.

Comparing with the placebo, not with the original, keeps a judge that moves with any edit
at all (a noisy one) from being called biased: the placebo moves it just as much.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.paired import PairedSet, paired_sets
from evalstress.analyses.verdicts import (
    CORRECTIONS,
    INTERVAL,
    MDE_RULE,
    N_BOOT,
    TOL_SHARE,
    bootstrap_means,
    decide_all,
    default_tolerance,
)
from evalstress.core.registry import Registry
from evalstress.core.scoretable import ScoreTable
from evalstress.core.strict import unknown_name_error
from evalstress.perturb.base import PERTURBATIONS
from evalstress.perturb.bias import PLACEBO, probe_arms

#: how the card and the report word each four-way verdict of a bias test
WORDING = {"detects": "biased toward {toward}", "reversed": "biased against {toward}",
           "blind": "no bias beyond placebo within ±{delta:.3g}",
           "inconclusive": "inconclusive"}
EFFECT_RULE = ("mean over examples of (probe score - original) - (placebo score - original), "
               "seeds averaged inside their example; positive = the probe favours the text")


@dataclass
class BiasRow:
    """One probe arm's test on one evaluator aspect."""

    evaluator: str
    aspect: str
    probe: str
    arm: str
    toward: str  # what the arm adds ("an invented citation")
    n: int
    effect: float | None  # mean favour above placebo, in score units
    low: float | None
    high: float | None
    level: float
    tolerance: float
    outcome: str  # detects | blind | reversed | inconclusive (analyses.verdicts)
    verdict: str  # the outcome in words
    probe_shift: float | None  # mean (probe - original), favour-signed
    placebo_shift: float | None  # mean (placebo - original), favour-signed
    pvalue: float
    n_to_settle: int | None = None
    mde: float | None = None
    reason: str = ""
    #: the example whose effect is the median (typical evidence) and the one of largest |effect|
    typical_example: str | None = None
    extreme_example: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BiasResult:
    rows: list[BiasRow]
    alpha: float
    alpha_eff: float
    correction: str
    n_boot: int
    seed: int
    tol_share: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"analysis": "bias", "rows": [r.to_dict() for r in self.rows],
                "alpha": self.alpha, "alpha_eff": self.alpha_eff,
                "correction": self.correction, "n_tests": len(self.rows),
                "n_boot": self.n_boot, "seed": self.seed, "tol_share": self.tol_share,
                "effect": EFFECT_RULE, "interval": INTERVAL, "power_rule": MDE_RULE,
                "notes": self.notes}


def probe_classes(registry: Registry[Any] = PERTURBATIONS) -> dict[str, dict[str, str]]:
    """Every registered bias probe with its arms (arm -> what it adds)."""
    out = {}
    for name, cls in registry.all().items():
        arms = probe_arms(cls)
        if arms:
            out[name] = arms
    return out


def _by_example(paired: PairedSet) -> pd.Series:
    """Favour-signed (variant - original) per example: positive = the variant scored better."""
    sign = 1.0 if paired.higher_is_better else -1.0
    ids = paired.example_ids if paired.example_ids is not None else np.arange(paired.variant.size)
    return pd.Series(sign * (paired.variant - paired.original), index=pd.Index(ids))


def _middle(effects: pd.Series) -> tuple[str | None, str | None]:
    """The example of the median effect and the one of the largest |effect|."""
    if effects.empty:
        return None, None
    ordered = effects.sort_values(kind="stable")
    typical = str(ordered.index[(len(ordered) - 1) // 2])
    return typical, str(effects.abs().idxmax())


def bias_analysis(table: pd.DataFrame | ScoreTable, *,
                  tolerance: float | Mapping[str, float] | None = None,
                  tol_share: float = TOL_SHARE, alpha: float = 0.05,
                  correction: str = "holm", n_boot: int = N_BOOT, seed: int = 0) -> BiasResult:
    """The bias tests of a score table (see the module docstring). `tolerance`: a number, or
    one per "evaluator/aspect" or "evaluator"; else `tol_share` x the spread of the originals'
    scores."""
    if correction not in CORRECTIONS:
        raise unknown_name_error("correction", correction, CORRECTIONS, "bias")
    probes = probe_classes()
    groups: dict[tuple[str, str, str], dict[str, PairedSet]] = {}
    for paired in paired_sets(table):
        if paired.perturbation in probes:
            key = (paired.evaluator, paired.aspect, paired.perturbation)
            groups.setdefault(key, {})[paired.severity] = paired
    notes: list[str] = []
    pending: list[tuple[tuple[str, str, str, str], pd.Series, float, float, float]] = []
    for (evaluator, aspect, name), arms in groups.items():
        placebo = arms.get(PLACEBO)
        if placebo is None:
            notes.append(f"{evaluator}/{aspect} {name}: no placebo scores, so no test")
            continue
        base = _by_example(placebo)
        delta = _tolerance(tolerance, evaluator, aspect, placebo.original, tol_share)
        for arm in probes[name]:
            if arm not in arms:
                continue
            shift = _by_example(arms[arm])
            both = shift.index.intersection(base.index)
            effects = shift.reindex(both) - base.reindex(both)
            pending.append(((evaluator, aspect, name, arm), effects, delta,
                            float(shift.reindex(both).mean()) if len(both) else float("nan"),
                            float(base.reindex(both).mean()) if len(both) else float("nan")))
    boots = [bootstrap_means(effects.to_numpy(), n_boot=n_boot, seed=[seed, i])
             for i, (_, effects, *_rest) in enumerate(pending)]
    verdicts, alpha_eff = decide_all(boots, [p[2] for p in pending], alpha=alpha,
                                     correction=correction) if pending else ([], alpha)
    rows = []
    for (test, effects, delta, probe_shift, placebo_shift), found in zip(pending, verdicts,
                                                                          strict=True):
        evaluator, aspect, probe, arm = test
        toward = probes[probe][arm]
        said = WORDING[found.verdict].format(toward=toward, delta=delta)
        if found.verdict == "inconclusive" and found.n_to_settle is not None:
            said += f" ({found.n_to_settle} examples would settle it)"
        typical, extreme = _middle(effects)
        rows.append(BiasRow(evaluator, aspect, probe, arm, toward, found.n, found.estimate,
                            found.low, found.high, found.level, delta, found.verdict, said,
                            _finite(probe_shift), _finite(placebo_shift), found.pvalue,
                            found.n_to_settle, found.mde, found.reason, typical, extreme))
    if not groups:
        notes.append("the score table holds no bias probe (perturbations of the bias-probe "
                     "family)")
    return BiasResult(rows, alpha, alpha_eff, correction, n_boot, seed, tol_share, notes)


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


def _tolerance(given: float | Mapping[str, float] | None, evaluator: str, aspect: str,
               originals: np.ndarray, share: float) -> float:
    if isinstance(given, int | float):
        return float(given)
    if isinstance(given, Mapping):
        for key in (f"{evaluator}/{aspect}", evaluator):
            if key in given:
                return float(given[key])
    return default_tolerance(originals, share)
