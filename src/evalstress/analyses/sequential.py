"""A sequential design for the discernment tests: fewer judge calls for the same conclusions.

Paper 003 scores every example under every perturbation unit. Most units are settled long
before: a major character perturbation drops a judge's score on the first dozen texts, and a
perturbation the judge cannot see shows no shift at all. This design scores the examples in
`looks` equal batches (the runner's chunks). After each batch, for every unit (task,
perturbation, severity) and every evaluator aspect, it runs the same one-sided Wilcoxon test as
the discernment analysis on the pairs so far and decides:

- **efficacy**: p <= the O'Brien-Fleming alpha-spending bound of Lan and DeMets at the
  information fraction t (the share of examples seen): alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt t)
  spent in increments, so an early stop needs overwhelming evidence;
- **futility**: the conditional power of reaching p <= alpha at the end, if the current trend
  goes on, is below `futility`: Phi((Z / sqrt t - z_{1-alpha}) / sqrt(1 - t)), with Z the normal
  score of the current p (non-binding: it cannot raise the false-positive rate);
- neither: the unit stays in the plan for the next batch.

A unit leaves the plan once every aspect of every evaluator is settled. At the last look, units
still open are tested at the full alpha exactly as the non-sequential analysis would. No
decision is taken on fewer than `min_pairs` pairs. The discernment analysis then runs on the
pairs collected (stopped units have fewer); `SequentialDesign.to_dict()` reports, per unit, the
look and reason of the stop, the pairs used, and the requests scored against the full design.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from evalstress.analyses.stats import wilcoxon_test
from evalstress.core.records import ORIGINAL

UnitKey = tuple[str, str, str]  # (task, perturbation, severity)


def obf_spent(t: float, alpha: float) -> float:
    """Lan-DeMets O'Brien-Fleming alpha spent by information fraction t (one-sided alpha)."""
    from scipy import stats as sps

    if t <= 0:
        return 0.0
    if t >= 1:
        return alpha
    return float(2 - 2 * sps.norm.cdf(sps.norm.ppf(1 - alpha / 2) / math.sqrt(t)))


def conditional_power(p: float, t: float, alpha: float) -> float:
    """Chance of ending significant if the current trend holds (B-value formulation)."""
    from scipy import stats as sps

    if t >= 1:
        return 1.0 if p <= alpha else 0.0
    z = float(sps.norm.isf(min(max(p, 1e-300), 1.0)))
    if not math.isfinite(z):
        z = -40.0 if p >= 1 else 40.0
    return float(sps.norm.cdf((z / math.sqrt(t) - sps.norm.isf(alpha)) / math.sqrt(1 - t)))


@dataclass
class UnitState:
    """What is known of one unit: per (evaluator, aspect), variant scores per example."""

    variants: dict[tuple[str, str], dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    decided: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    stopped: dict[str, Any] | None = None  # the unit's stop: look, reason, pairs


@dataclass
class SequentialDesign:
    """The chunk policy of a sequential DHP run (see the module docstring)."""

    n_examples: int
    looks: int = 5
    alpha: float = 0.05
    futility: float = 0.10
    min_pairs: int = 10
    zero_method: str = "wilcox"
    _look: int = 0
    _seen: set[str] = field(default_factory=set)
    _originals: dict[tuple[str, str], dict[str, float]] = field(
        default_factory=lambda: defaultdict(dict))
    _higher: dict[tuple[str, str], bool] = field(default_factory=dict)
    _units: dict[UnitKey, UnitState] = field(default_factory=dict)
    _spent: float = 0.0
    _history: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.looks < 1 or self.n_examples < 1:
            raise ValueError("a sequential design needs at least one look and one example")
        if not 0 < self.alpha < 1 or not 0 <= self.futility < 1:
            raise ValueError("alpha must be in (0, 1) and futility in [0, 1)")

    @property
    def chunk_size(self) -> int:
        """Examples per look: the runner's chunk size under this design."""
        return max(1, math.ceil(self.n_examples / self.looks))

    def describe(self) -> dict[str, Any]:
        return {"design": "sequential", "looks": self.looks, "alpha": self.alpha,
                "futility": self.futility, "min_pairs": self.min_pairs,
                "zero_method": self.zero_method, "n_examples": self.n_examples}

    def stopped(self) -> frozenset[tuple[str, ...]] | None:
        """Units settled so far: the runner plans no more variants for them."""
        if self._look == 0:
            return None  # the first batch plans every unit and scores every original
        return frozenset(key for key, state in self._units.items() if state.stopped is not None)

    def observe(self, rows: pa.Table) -> None:
        """Take a finished batch's rows, then decide which units stop."""
        self._look += 1
        data = rows.select(["example_id", "task", "perturbation", "severity", "evaluator",
                            "aspect", "score", "status", "higher_is_better"]).to_pylist()
        for row in data:
            key = (row["evaluator"], row["aspect"])
            self._higher[key] = bool(row["higher_is_better"])
            self._seen.add(row["example_id"])
            if row["status"] != "ok":
                continue
            if row["perturbation"] == ORIGINAL:
                self._originals[key][row["example_id"]] = float(row["score"])
            else:
                unit = self._units.setdefault((row["task"], row["perturbation"], row["severity"]),
                                              UnitState())
                unit.variants[key][row["example_id"]].append(float(row["score"]))
        t = min(1.0, len(self._seen) / self.n_examples)
        final = t >= 1.0  # the runner's tapering last chunks are looks of their own
        bound = self.alpha if final else obf_spent(t, self.alpha) - self._spent
        stopped_now = 0
        for state in self._units.values():
            if state.stopped is not None:
                continue
            for key in state.variants:
                if key not in state.decided:
                    decision = self._decide(key, state, t, bound, final)
                    if decision is not None:
                        state.decided[key] = decision
            if state.variants and len(state.decided) == len(state.variants):
                reasons = {d["reason"] for d in state.decided.values()}
                state.stopped = {"look": self._look, "examples_seen": len(self._seen),
                                 "reason": "complete" if final and reasons == {"final"}
                                 else "+".join(sorted(reasons))}
                stopped_now += 1
        if not final:
            self._spent = obf_spent(t, self.alpha)
        self._history.append({"look": self._look, "examples_seen": len(self._seen),
                              "information": round(t, 4), "efficacy_bound": bound,
                              "units_stopped": stopped_now,
                              "units_open": sum(s.stopped is None for s in self._units.values())})

    def _differences(self, key: tuple[str, str], state: UnitState) -> np.ndarray:
        originals = self._originals.get(key, {})
        sign = 1.0 if self._higher.get(key, True) else -1.0
        pairs = [sign * (originals[eid] - float(np.mean(scores)))
                 for eid, scores in state.variants[key].items() if eid in originals]
        return np.asarray(pairs, dtype=float)

    def _decide(self, key: tuple[str, str], state: UnitState, t: float, bound: float,
                final: bool) -> dict[str, Any] | None:
        d = self._differences(key, state)
        result = wilcoxon_test(d, alternative="greater",
                               zero_method=self.zero_method)  # type: ignore[arg-type]
        p = result.pvalue
        if final:
            return {"reason": "final", "look": self._look, "pairs": int(d.size), "p": p,
                    "significant": p is not None and p <= self.alpha}
        if p is None or d.size < self.min_pairs:
            return None
        if p <= bound:
            return {"reason": "efficacy", "look": self._look, "pairs": int(d.size), "p": p,
                    "significant": True}
        power = conditional_power(p, t, self.alpha)
        if power < self.futility:
            return {"reason": "futility", "look": self._look, "pairs": int(d.size), "p": p,
                    "conditional_power": power, "significant": False}
        return None

    def conclusions(self) -> dict[tuple[str, str, str, str, str], bool]:
        """(task, perturbation, severity, evaluator, aspect) -> significant at alpha."""
        out = {}
        for (task, pert, severity), state in self._units.items():
            for (evaluator, aspect), decision in state.decided.items():
                out[(task, pert, severity, evaluator, aspect)] = bool(decision["significant"])
        return out

    def to_dict(self) -> dict[str, Any]:
        units = []
        for (task, pert, severity), state in sorted(self._units.items()):
            units.append({
                "task": task, "perturbation": pert, "severity": severity,
                "stopped": state.stopped,
                "aspects": [{"evaluator": e, "aspect": a, **decision}
                            for (e, a), decision in sorted(state.decided.items())],
            })
        return {**self.describe(), "looks_taken": self._history, "units": units,
                "rule": "efficacy: p <= O'Brien-Fleming spending bound at the information "
                        "fraction; futility: conditional power under the current trend < "
                        "futility; open units at the last look: p <= alpha"}
