"""A sequential design for the four-way verdicts: the card's tests settled at the least cost.

The blind-spot tests (perturbation x severity) and the judge's bias probes (probe x arm) are
usually settled long before the last example: a judge that ignores a cue moves by exactly
nothing, and a heavy cut drops any score on the first dozen texts. This design scores the
examples in batches of a `looks`-th of them, at least `min_n` (the runner's chunks; a long
run's last chunks taper, each a look of its own: the spending function holds for any number
of looks). After each batch, for every test (a
unit and an evaluator aspect) it takes the paired differences so far, as the final analysis
takes them (seeds averaged inside their example; the bias probe's effect above its placebo),
bootstraps their mean over EXAMPLES with the same function (`verdicts.bootstrap_means`), and
reads the four-way verdict (`verdicts.decide`) off a repeated confidence interval

    mean +- z(1 - a_k / 2) x the bootstrap standard error,

where a_k is this look's share of an O'Brien-Fleming spending of `interim_alpha`
(`sequential.obf_spent`, the discernment design's function), split over the m tests
(Bonferroni). The normal form stands in for the percentile interval at these levels: 1e-6 lies
far beyond the tails 2,000 resamples can show. A test settles when that interval clears a
boundary (detects, reversed, or blind by equivalence). Each interim interval misses the true
mean with chance at most a_k, so the chance that any interim verdict of the whole design is
wrong is at most the sum of the a_k, below `interim_alpha`.

Futility (non-binding, it can only leave a test inconclusive): a test is also left as
inconclusive when, if the current mean and spread hold, the chance that the exhaustive
interval at `alpha` settles it at the last example is below `futility`.

A unit (perturbation, severity) leaves the plan once every test on it is settled; a bias
probe's placebo once every arm of its probe has. Units still open at the last look get the
exhaustive analysis, at its own alpha and correction. Every verdict of the card is then the
final analysis's on the examples each unit used; a unit stopped early was settled by an
interval wider than the final one on the same examples, so the final verdict agrees with it
while the tolerance is the same. It is: the runner scores every example's original before the
first look (`originals_first`: a few percent of the texts), the intervals take the tolerance
from all of them, and so does the final analysis (`tolerance_over="run"`). Taken from the
originals seen so far, it moved under the settled tests: on GPT-PPL one very-high-perplexity
original met at the last look raised it from 2.7 to 21.8.
Error rates: the final analysis keeps its own (Holm: any false claim <= alpha); the interim
stops add at most `interim_alpha` to that in the worst case.

The criteria method's items (kind "criteria") take the same looks, spending and unit rule with
a rule of their own for the binary PASS / FAIL of paper 000 (`analyses.criteria_rule`); an
item whose aspect has no test for the perturbation settles at once.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pyarrow as pa

from evalstress.analyses import criteria_rule
from evalstress.analyses.confusion import item_test
from evalstress.analyses.paired import exact_zeros
from evalstress.analyses.sequential import obf_spent
from evalstress.analyses.verdicts import (
    MIN_N,
    N_BOOT,
    TOL_SHARE,
    bootstrap_means,
    decide,
    default_tolerance,
    standard_error,
)
from evalstress.core.records import ORIGINAL

#: the methods whose tests this design settles, by the shape of their tests
KINDS = ("blindspot", "bias", "criteria")
#: the score rows' columns the design reads
ROW_COLUMNS = ["example_id", "perturbation", "severity", "seed", "evaluator", "aspect", "score",
               "status", "higher_is_better"]
#: a bias probe's arm that every other arm is compared with
PLACEBO = "placebo"
UnitKey = tuple[str, str]  # (perturbation, severity)
TestKey = tuple[str, str]  # (evaluator, aspect)
RULE = ("after each look, per test: the mean paired difference +- z(1 - a_k/2) x its bootstrap "
        "standard error over examples, a_k = this look's O'Brien-Fleming share of "
        "interim_alpha divided by the number of tests; the test settles when that interval "
        "clears a boundary of the four-way verdict; futility: the chance that the exhaustive "
        "interval settles it at the last example, if the current mean and spread hold, is "
        "below `futility`; units open at the last look: the exhaustive analysis")


def settle_chance(estimate: float, se: float, n: int, total: int, delta: float,
                  alpha: float) -> float:
    """The chance that an interval at `alpha` on all `total` examples settles the test, if the
    n seen so far show its mean and spread: the final mean is normal around `estimate` with
    variance se^2 n (total - n) / total^2, the final half-width z(1 - alpha/2) se sqrt(n/total)."""
    if n >= total:
        return 1.0
    z = NormalDist().inv_cdf(1 - alpha / 2)
    half = z * se * math.sqrt(n / total)
    spread = se * math.sqrt(n * (total - n)) / total
    if spread <= 0:
        low, high = estimate - half, estimate + half
        return 1.0 if decide(low, high, delta) != "inconclusive" else 0.0
    norm = NormalDist(estimate, spread)
    chance = (1 - norm.cdf(delta + half)) + norm.cdf(-delta - half)
    if half < delta:
        chance += norm.cdf(delta - half) - norm.cdf(-delta + half)
    return min(1.0, chance)


@dataclass
class TestState:
    """One test's verdict once settled: how, at which look, on how many examples."""

    decision: dict[str, Any] | None = None


@dataclass
class VerdictDesign:
    """The chunk policy of a sequential card method (see the module docstring)."""

    n_examples: int
    kind: str = "blindspot"
    looks: int = 6
    alpha: float = 0.05
    interim_alpha: float = 0.01
    futility: float = 0.10
    tol_share: float = TOL_SHARE
    #: the analysis's declared tolerance: a number, or one per "evaluator/aspect" or evaluator
    tolerance: float | Mapping[str, float] | None = None
    min_n: int = MIN_N
    n_boot: int = N_BOOT
    seed: int = 0
    #: texts the exhaustive design would score (originals and variants), when known
    full_texts: int | None = None
    #: criteria: the analysis's smallest rank-biserial r that counts as an effect
    min_effect: float = 0.3
    #: criteria: the analysis's map from evaluator aspects to quality aspects
    aspect_map: Mapping[str, str] | None = None
    _look: int = 0
    _seen: set[str] = field(default_factory=set)
    _originals: dict[TestKey, dict[str, float]] = field(
        default_factory=lambda: defaultdict(dict))
    _higher: dict[TestKey, bool] = field(default_factory=dict)
    _scores: dict[UnitKey, dict[TestKey, dict[str, list[float]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    _tests: dict[tuple[UnitKey, TestKey], TestState] = field(default_factory=dict)
    _stopped: dict[UnitKey, dict[str, Any]] = field(default_factory=dict)
    _spent: float = 0.0
    _texts: set[tuple[str, str, str, Any]] = field(default_factory=set)
    _history: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a sequential verdict design is for {' or '.join(KINDS)}, "
                             f"not {self.kind}")
        if self.looks < 1 or self.n_examples < 1:
            raise ValueError("a sequential design needs at least one look and one example")
        for name in ("alpha", "interim_alpha"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"{name} must lie between 0 and 1")
        if not 0 <= self.futility < 1:
            raise ValueError("futility must lie in [0, 1)")

    @property
    def originals_first(self) -> bool:
        """Whether the runner scores every example's original before the first look: the
        blind-spot tolerance is a share of the originals' spread, and one extreme original
        met late would move it after tests had settled against a smaller one."""
        return self.kind == "blindspot"

    def observe_originals(self, rows: pa.Table) -> None:
        """Take every original's scores before the first look (not a look: no test is
        decided); the tolerance is then the final analysis's from the start."""
        for row in rows.select(ROW_COLUMNS).to_pylist():
            if row["perturbation"] == ORIGINAL:
                self._take(row)

    @property
    def chunk_size(self) -> int:
        """Examples per look, the runner's chunk size under this design: a `looks`-th of the
        examples, at least `min_n` (a first look with fewer could decide nothing)."""
        return max(1, self.min_n, math.ceil(self.n_examples / self.looks))

    def describe(self) -> dict[str, Any]:
        return {"design": "sequential verdicts", "kind": self.kind, "looks": self.looks,
                "alpha": self.alpha, "interim_alpha": self.interim_alpha,
                "futility": self.futility, "min_n": self.min_n, "n_examples": self.n_examples,
                **({"min_effect": self.min_effect} if self.kind == "criteria" else {})}

    def stopped(self) -> frozenset[tuple[str, ...]] | None:
        """Units settled so far: the runner plans no more variants for them."""
        if self._look == 0:
            return None
        return frozenset(self._stopped)

    # -- taking a look ------------------------------------------------------------------------

    def observe(self, rows: pa.Table) -> None:
        """Take a finished batch's rows, then decide which tests settle and which units stop."""
        self._look += 1
        for row in rows.select(ROW_COLUMNS).to_pylist():
            self._seen.add(row["example_id"])
            self._take(row)
        t = min(1.0, len(self._seen) / self.n_examples)
        final = t >= 1.0  # the runner's tapering last chunks are looks of their own
        tests = [(unit, key) for unit in self._scores if self._tested(unit)
                 for key in self._scores[unit]]
        claims = [test for test in tests if self.item_test(*test) != "none"]
        level = (obf_spent(t, self.interim_alpha) - self._spent) / max(1, len(claims))
        settled = 0
        for unit, key in tests:
            state = self._tests.setdefault((unit, key), TestState())
            if state.decision is None and unit not in self._stopped and not final:
                state.decision = self._decide(unit, key, t, level)
                settled += state.decision is not None
        if not final:
            self._spent = obf_spent(t, self.interim_alpha)
            self._stop_units()
        self._history.append({"look": self._look, "examples_seen": len(self._seen),
                              "information": round(t, 4), "level": level if not final
                              else None, "tests_settled": settled,
                              "units_stopped": len(self._stopped),
                              "units_open": len(self._scores) - len(self._stopped)})

    def _take(self, row: Mapping[str, Any]) -> None:
        """One score row: its text counted, its score kept as an original's or a unit's."""
        key = (row["evaluator"], row["aspect"])
        self._higher[key] = bool(row["higher_is_better"])
        self._texts.add((row["example_id"], row["perturbation"], str(row["severity"]),
                         row["seed"]))
        if row["status"] != "ok":
            return
        if row["perturbation"] == ORIGINAL:
            self._originals[key][row["example_id"]] = float(row["score"])
        else:
            unit = (row["perturbation"], str(row["severity"]))
            self._scores[unit][key][row["example_id"]].append(float(row["score"]))

    def item_test(self, unit: UnitKey, key: TestKey) -> str:
        """The test a unit's evaluator aspect gets: the criteria analysis's directional,
        invariance or none; the other kinds' four-way verdict ("four-way")."""
        if self.kind != "criteria":
            return "four-way"
        return item_test(key[0], key[1], unit[0], self.aspect_map)

    def _tested(self, unit: UnitKey) -> bool:
        """Whether the unit carries tests of its own (a bias placebo does not)."""
        return not (self.kind == "bias" and unit[1] == PLACEBO)

    def differences(self, unit: UnitKey, key: TestKey) -> np.ndarray:
        """The test's paired differences so far, one per example, in the final analysis's
        orientation (blind spots: positive = the variant scored worse; bias: positive = the
        arm favoured the text more than its placebo)."""
        sign = 1.0 if self._higher.get(key, True) else -1.0
        scores = self._scores[unit][key]
        if self.kind == "bias":
            placebo = self._scores.get((unit[0], PLACEBO), {}).get(key, {})
            return np.asarray([sign * (float(np.mean(v)) - float(np.mean(placebo[e])))
                               for e, v in scores.items() if e in placebo], dtype=float)
        originals = self._originals.get(key, {})
        kept = [e for e in scores if e in originals]
        gold = np.asarray([originals[e] for e in kept], dtype=float)
        variant = np.asarray([float(np.mean(scores[e])) for e in kept], dtype=float)
        return exact_zeros(sign * (gold - variant), gold, variant)

    def delta(self, key: TestKey) -> float:
        """The tolerance, as the final analysis sets it: given, else a share of the spread of
        the originals (all of them, for a blind-spot design: `originals_first`)."""
        if isinstance(self.tolerance, int | float):
            return float(self.tolerance)
        if isinstance(self.tolerance, Mapping):
            for name in (f"{key[0]}/{key[1]}", key[0]):
                if name in self.tolerance:
                    return float(self.tolerance[name])
        return default_tolerance(list(self._originals.get(key, {}).values()), self.tol_share)

    def _decide(self, unit: UnitKey, key: TestKey, t: float, level: float
                ) -> dict[str, Any] | None:
        test = self.item_test(unit, key)
        if test == "none":
            return {"verdict": None, "reason": "no test", "test": test, "look": self._look}
        d = self.differences(unit, key)
        if d.size < max(2, self.min_n) or level <= 0:
            return None
        if self.kind == "criteria":
            total = max(int(d.size), round(d.size / max(t, 1e-9)))
            decision = criteria_rule.decide_item(
                d, test, level=level, total=total, alpha=self.alpha,
                min_effect=self.min_effect, futility=self.futility, n_boot=self.n_boot,
                seed=[self.seed, self._look, d.size])
            return None if decision is None else {**decision, "look": self._look}
        boot = bootstrap_means(d, n_boot=self.n_boot, seed=[self.seed, self._look, d.size])
        se = standard_error(boot) or 0.0
        estimate = float(d.mean())
        delta = self.delta(key)
        z = NormalDist().inv_cdf(1 - level / 2)
        low, high = estimate - z * se, estimate + z * se
        verdict = decide(low, high, delta)
        record = {"look": self._look, "n": int(d.size), "estimate": estimate, "low": low,
                  "high": high, "level": 1 - level, "delta": delta}
        if verdict != "inconclusive":
            return {"verdict": verdict, "reason": "settled", **record}
        chance = settle_chance(estimate, se, int(d.size),
                               max(int(d.size), round(d.size / max(t, 1e-9))), delta,
                               self.alpha)
        if chance < self.futility:
            return {"verdict": "inconclusive", "reason": "futility", "settle_chance": chance,
                    **record}
        return None

    def _stop_units(self) -> None:
        for unit, tests in self._scores.items():
            if unit in self._stopped or not self._tested(unit) or not tests:
                continue
            decisions = [self._tests.get((unit, key), TestState()).decision for key in tests]
            if all(d is not None for d in decisions):
                self._stopped[unit] = {"look": self._look, "examples_seen": len(self._seen)}
        if self.kind == "bias":  # a placebo goes when every arm of its probe has gone
            for unit in list(self._scores):
                if unit[1] != PLACEBO or unit in self._stopped:
                    continue
                arms = [u for u in self._scores if u[0] == unit[0] and u[1] != PLACEBO]
                if arms and all(a in self._stopped for a in arms):
                    self._stopped[unit] = {"look": self._look,
                                           "examples_seen": len(self._seen)}

    # -- what it did ---------------------------------------------------------------------------

    def cost(self) -> dict[str, Any]:
        """Texts scored (originals and variants) against the exhaustive design's."""
        full = self.full_texts
        return {"texts": len(self._texts), "full_texts": full,
                "share": round(len(self._texts) / full, 4) if full else None}

    def to_dict(self) -> dict[str, Any]:
        units = []
        for unit in sorted(self._scores):
            tests = [{"evaluator": e, "aspect": a,
                      **(self._tests.get((unit, (e, a)), TestState()).decision or
                         {"verdict": None, "reason": "open at the last look"})}
                     for e, a in sorted(self._scores[unit])] if self._tested(unit) else []
            units.append({"perturbation": unit[0], "severity": unit[1],
                          "stopped": self._stopped.get(unit), "tests": tests})
        return {**self.describe(), "looks_taken": self._history, "units": units,
                "cost": self.cost(),
                "rule": criteria_rule.RULE if self.kind == "criteria" else RULE}
