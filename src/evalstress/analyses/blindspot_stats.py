"""Four-way verdicts of the blind-spot tests (paper 002's rank and monotonic tests, decided by
intervals; see `analyses.verdicts` for the interval, the correction and the four outcomes).

Per row (evaluator aspect x perturbation) and severity, one test: the oriented difference per
example (positive = the variant scored worse), seeds averaged inside their example. Per graded
row, one test per step between consecutive severities (ordered by noise ratio): the heavier
severity's score minus the lighter one's, oriented so that positive = the heavier scored
BETTER (a rise). All tests of a result are corrected together.

- row outcome (`row_state`, the one rule every reader of a row uses): reversed if a severity
  is reversed; else blind if the heaviest tested severity is blind (equivalence shown: the
  rank test's failure, proved where the damage is heaviest); else `partly blind` if a lighter
  severity is blind ("blind up to severity s", with the severity from which every heavier one
  detects, when there is one); else detects if every severity detects; else inconclusive,
  with the examples that would settle its undecided severities. Severities that name kinds
  (not graded) have no heaviest one: a blind kind makes the row blind;
- monotonic outcome: `rises` only when a step's rise is significant (its interval above +delta,
  or the lightest severity reversed against the original), else `no significant rise`;
  `not-applicable` for severities that name kinds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalstress.analyses.verdicts import (
    INTERVAL,
    N_BOOT,
    SETTLE_CAP,
    Boot,
    bootstrap_means,
    decide_all,
    ratio_interval,
)


@dataclass
class Sample:
    """One severity's paired scores per example, seeds averaged inside their example."""

    example_ids: np.ndarray
    original: np.ndarray
    variant: np.ndarray


@dataclass
class RowTests:
    """What one row hands to the tests."""

    severities: list[str]  # in the row's point order
    noise_ratios: list[float]
    samples: list[Sample | None]  # None: no per-example pairs (a set-level score)
    sign: float  # +1 when higher is better
    delta: float
    graded: bool
    meaningful_zero: bool


@dataclass
class RowOutcome:
    outcome: str
    monotonic_outcome: str
    n_to_settle: int | None
    tests: list[dict[str, Any]]  # per severity, in point order
    relative: list[dict[str, Any] | None]
    steps: list[dict[str, Any]] = field(default_factory=list)
    blind_up_to: str | None = None  # partly blind: the heaviest blind severity
    detects_from: str | None = None  # partly blind: every severity from here on detects


#: a row blind at its lighter severities only: "blind up to severity s"
PARTLY_BLIND = "partly blind"
ROW_OUTCOMES = ("detects", "blind", PARTLY_BLIND, "reversed", "inconclusive")


@dataclass(frozen=True)
class RowState:
    """A row's one outcome from its severities' verdicts; for `partly blind`, where the
    blindness ends (`blind_up_to`) and, when every heavier severity detects, where detection
    starts (`detects_from`)."""

    outcome: str
    blind_up_to: str | None = None
    detects_from: str | None = None


def row_state(severities: Sequence[str], verdicts: Sequence[str], graded: bool = True
              ) -> RowState:
    """The row's outcome from each severity's four-way verdict, lightest severity first.

    A headline blind spot needs the heaviest damage to be blind: a score that holds still at
    light damage but moves at heavy damage is `partly blind` (blind up to the heaviest blind
    severity), a graded result of its own, never a plain blind spot. Reversed wins at any
    severity (damaged text scored better is always worth saying). Kinds (not graded) have no
    order, so one blind kind makes the row blind."""
    found = list(verdicts)
    if not found:
        return RowState("inconclusive")
    if "reversed" in found:
        return RowState("reversed")
    if "blind" in found:
        if not graded or found[-1] == "blind":
            return RowState("blind")
        last = max(i for i, v in enumerate(found) if v == "blind")
        start = next((i for i in range(last + 1, len(found))
                      if all(v == "detects" for v in found[i:])), None)
        return RowState(PARTLY_BLIND, str(severities[last]),
                        None if start is None else str(severities[start]))
    if all(v == "detects" for v in found):
        return RowState("detects")
    return RowState("inconclusive")


def oriented(sample: Sample, sign: float) -> np.ndarray:
    """Positive = the variant scored worse, in the metric's orientation."""
    return sign * (sample.original - sample.variant)


def step_rise(lighter: Sample, heavier: Sample, sign: float) -> np.ndarray:
    """Per example present at both severities: positive = the heavier severity scored better."""
    common, a, b = np.intersect1d(lighter.example_ids, heavier.example_ids,
                                  return_indices=True)
    del common
    return sign * (heavier.variant[b] - lighter.variant[a])


def assess(rows: Sequence[RowTests], *, alpha: float, correction: str, n_boot: int = N_BOOT,
           seed: int = 0) -> tuple[list[RowOutcome], float]:
    """Every row's outcome, the tests of all rows corrected together; and alpha_eff."""
    boots: list[Boot] = []
    deltas: list[float] = []
    where: list[tuple[int, str, int]] = []  # (row, "severity" | "step", index)
    for r, row in enumerate(rows):
        for i, sample in enumerate(row.samples):
            diffs = oriented(sample, row.sign) if sample is not None else np.empty(0)
            boots.append(bootstrap_means(diffs, n_boot=n_boot, seed=[seed, len(boots)]))
            deltas.append(row.delta)
            where.append((r, "severity", i))
        if row.graded:
            order = sorted(range(len(row.samples)), key=lambda i: row.noise_ratios[i])
            for a, b in itertools.pairwise(order):
                first, second = row.samples[a], row.samples[b]
                rise = (step_rise(first, second, row.sign) if first is not None
                        and second is not None else np.empty(0))
                boots.append(bootstrap_means(rise, n_boot=n_boot, seed=[seed, len(boots)]))
                deltas.append(row.delta)
                where.append((r, "step", a * 1000 + b))
    verdicts, alpha_eff = decide_all(boots, deltas, alpha=alpha, correction=correction) if boots \
        else ([], alpha)
    outcomes = [RowOutcome("inconclusive", "not-applicable", None, [], []) for _ in rows]
    for (r, kind, index), verdict in zip(where, verdicts, strict=True):
        row = rows[r]
        if kind == "severity":
            outcomes[r].tests.append(verdict.to_dict())
            sample = row.samples[index]
            ratio = (ratio_interval(sample.original, sample.variant, verdict.level,
                                    n_boot=n_boot, seed=[seed, r, index])
                     if sample is not None and row.meaningful_zero else None)
            outcomes[r].relative.append(None if ratio is None else dict(
                zip(("change", "low", "high"), ratio, strict=True)))
        else:
            a, b = divmod(index, 1000)
            outcomes[r].steps.append({"from": row.severities[a], "to": row.severities[b],
                                      **verdict.to_dict()})
    for row, out in zip(rows, outcomes, strict=True):
        _summarize(row, out)
    return outcomes, alpha_eff


def _summarize(row: RowTests, out: RowOutcome) -> None:
    state = row_state(row.severities, [t["verdict"] for t in out.tests], row.graded)
    out.outcome, out.blind_up_to, out.detects_from = (state.outcome, state.blind_up_to,
                                                      state.detects_from)
    if out.outcome == "inconclusive":
        needs = [t["n_to_settle"] for t in out.tests if t["verdict"] == "inconclusive"]
        out.n_to_settle = (None if not needs or any(n is None for n in needs)
                           else max(needs))
    if not row.graded:
        out.monotonic_outcome = "not-applicable"
        return
    lightest = min(range(len(row.samples)), key=lambda i: row.noise_ratios[i]) \
        if row.samples else None
    rises = any(s["verdict"] == "detects" for s in out.steps) or (
        lightest is not None and out.tests[lightest]["verdict"] == "reversed")
    out.monotonic_outcome = "rises" if rises else "no significant rise"


def meaningful_zero(values: Sequence[np.ndarray]) -> bool:
    """A score has a meaningful zero, so percentages mean something, when no original or variant
    score is negative (negated perplexity, log-probabilities and differences are not)."""
    return all(not (np.asarray(v, dtype=float) < 0).any() for v in values) and any(
        np.asarray(v).size for v in values)


DESCRIPTION = {
    "interval": INTERVAL,
    "outcomes": {
        "detects": "the whole interval of the mean drop lies beyond +tolerance",
        "blind": "the whole interval lies inside (-tolerance, +tolerance): equivalence shown",
        "reversed": "the whole interval lies beyond -tolerance: damaged text scores better",
        "inconclusive": "none of these; n_to_settle: examples that would settle it at the same "
                        "spread (null: never, the estimate sits on a boundary)",
    },
    "row": "reversed if a severity is; else blind if the heaviest severity is; else partly "
           "blind (blind up to severity s) if a lighter severity is; else detects if every "
           "severity does; else inconclusive",
    "monotonic": "rises only when a step between consecutive severities rises significantly "
                 "(its interval beyond +tolerance)",
    "relative": "ratio of means variant/original - 1, bootstrapped by example; only for scores "
                "with no negative value (a meaningful zero)",
}


def outcome_text(row: Mapping[str, Any]) -> str | None:
    """'inconclusive (n about 3815)', 'blind', 'blind up to 0.1 (detects from 0.3)',
    'detects; rises': the row's verdict, the
    examples that would settle an undecided one, and a significant rise between severities."""
    outcome = row.get("outcome")
    if outcome is None:
        return None
    if outcome == PARTLY_BLIND:
        outcome = partly_text(row)
    if outcome == "inconclusive":
        need = row.get("n_to_settle")
        outcome += ((f" (n {SETTLE_CAP:,} or more)" if need >= SETTLE_CAP else
                     f" (n about {need})") if need else " (no n settles it)")
    return outcome + ("; rises" if row.get("monotonic_outcome") == "rises" else "")


def partly_text(row: Mapping[str, Any]) -> str:
    """'blind up to 0.1 (detects from 0.3)' or 'blind up to 0.1 (undecided above)': a
    partly blind row in words."""
    after = (f"detects from {row['detects_from']}" if row.get("detects_from")
             else "undecided above")
    return f"blind up to {row.get('blind_up_to')} ({after})"
