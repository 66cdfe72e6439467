"""One verdict per (evaluator, test), read from a results.json mapping.

The overview grid of the report, `evalstress check`, the pytest plugin and the choice of
evaluators to combine all need the same thing: for each evaluator (or evaluator aspect) and
each test, did it pass, fail, or can the data not tell? This module derives that from the
analyses' JSON, so it works on a finished run directory as well as in memory.

Verdicts:
- `pass` / `fail`: the analysis' own rule (blind spot: rank and monotonic tests; discernment:
  D >= 1; criteria confusion: the directional or invariance test).
- `inconclusive`: the data cannot support either. Blind spot: most scores missing (the
  analysis says so). Signed-rank tests: too few pairs for any outcome to reach the
  significance level. With n pairs the smallest exact one-sided p is 2^-n (every pair moved
  the same way), so n < 5 can never reach 0.05 (two-sided: 2 * 2^-n, n < 6); paper 003's
  combined p = 1 / sum_j 1/p_j is bounded below by 1 / sum_j 2^n_j. A pass of an invariance
  test with such n would be vacuous, so it is inconclusive too. (An evaluator that gave n
  pairs identical scores is not inconclusive: it could have moved, and did not.)
- `not-applicable`: the evaluator declares (`Evaluator.meant_for`) which perturbations or
  families it is designed for, and this test is not one of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from evalstress.core.records import VERDICTS

TESTED = ("blindspot", "discernment", "criteria-confusion")


@dataclass(frozen=True)
class Outcome:
    """The verdict of one evaluator (aspect) on one test of one analysis."""

    analysis: str
    evaluator: str
    aspect: str  # "" when the test judges the evaluator as a whole (discernment)
    test: str  # column of the overview: a perturbation, or perturbation@severity
    perturbation: str
    verdict: str
    effect: float | None  # oriented so that larger = the damage was noticed more strongly
    detail: str  # one line saying why
    n: int | None = None  # pairs or examples behind the verdict, when meaningful

    @property
    def subject(self) -> str:
        """evaluator, or evaluator/aspect."""
        if not self.aspect or self.aspect == self.evaluator:
            return self.evaluator
        return f"{self.evaluator}/{self.aspect}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "subject": self.subject}


def min_pairs(alternative: str, alpha: float = 0.05) -> int:
    """The fewest nonzero pairs with which a signed-rank test can reach p <= alpha."""
    factor = 2.0 if alternative == "two-sided" else 1.0
    n = 1
    while factor * 0.5 ** n > alpha:
        n += 1
    return n


def _alpha_of(method: Mapping[str, Any] | None, default: float = 0.05) -> float:
    match = re.search(r"log_([0-9.]+)", str((method or {}).get("score", "")))
    return float(match.group(1)) if match else default


class Applicability:
    """Which tests each evaluator is meant for, from results.json's `meant_for` and the
    perturbations' families."""

    def __init__(self, results: Mapping[str, Any]):
        self.meant: dict[str, set[str] | None] = {}
        for label, info in (results.get("evaluators") or {}).items():
            declared = (info or {}).get("meant_for") if isinstance(info, Mapping) else None
            self.meant[str(label)] = set(declared) if declared is not None else None
        perts = ((results.get("suite") or {}).get("perturbations") or {})
        self.family = {str(name): str((info or {}).get("family", ""))
                       for name, info in perts.items() if isinstance(info, Mapping)}

    def applies(self, evaluator: str, perturbation: str) -> bool:
        meant = self.meant.get(evaluator)
        if meant is None:
            return True
        return perturbation in meant or self.family.get(perturbation, "\0") in meant

    def declared(self, evaluator: str) -> list[str] | None:
        meant = self.meant.get(evaluator)
        return sorted(meant) if meant is not None else None


def _na(outcome: Outcome, applicability: Applicability) -> Outcome:
    if applicability.applies(outcome.evaluator, outcome.perturbation):
        return outcome
    meant = ", ".join(applicability.declared(outcome.evaluator) or [])
    return Outcome(outcome.analysis, outcome.evaluator, outcome.aspect, outcome.test,
                   outcome.perturbation, "not-applicable", outcome.effect,
                   f"meant for {meant} only (would be: {outcome.verdict})", outcome.n)


def blindspot_outcomes(data: Mapping[str, Any]) -> list[Outcome]:
    out = []
    for row in data.get("rows") or []:
        points = sorted(row.get("points") or [], key=lambda p: p["noise_ratio"])
        gold = row.get("gold")
        sign = 1.0 if row.get("higher_is_better", True) else -1.0
        effect = None
        if points and gold not in (None, 0) and math.isfinite(gold):
            effect = 100.0 * sign * (gold - points[-1]["mean"]) / abs(gold)
        verdict = row.get("verdict") or ("pass" if row.get("passed") else "fail")
        if verdict == "inconclusive":
            detail = str(row.get("inconclusive_reason") or "not enough scores")
        else:
            parts = [f"rank {'pass' if row.get('rank_pass') else 'fail'}",
                     f"monotonic {'pass' if row.get('monotonic_pass') else 'fail'}"]
            if effect is not None:
                parts.append(f"{effect:.1f}% of gold lost at the strongest noise" if effect >= 0
                             else f"{-effect:.1f}% above gold at the strongest noise")
            detail = ", ".join(parts)
        n = max((int(p.get("n_examples", 0)) for p in points), default=0)
        out.append(Outcome("blindspot", str(row["evaluator"]), str(row["aspect"]),
                           str(row["perturbation"]), str(row["perturbation"]), verdict, effect,
                           detail, n))
    return out


def discernment_outcomes(data: Mapping[str, Any]) -> list[Outcome]:
    method = data.get("method") or {}
    alpha = _alpha_of(method)
    out = []
    for unit in data.get("units") or []:
        test = f"{unit['perturbation']}@{unit['severity']}"
        tests = unit.get("tests") or []
        counts = [int(t.get("n") or 0) for t in tests
                  if (t.get("wilcoxon") or {}).get("pvalue") is not None]
        n = max((int(t.get("n", 0)) for t in tests), default=0)
        d = unit.get("d")
        best_p = 1.0 / sum(2.0 ** c for c in counts) if counts else 1.0
        if d is None or unit.get("p") is None:
            verdict, detail = "inconclusive", str(unit.get("note") or "no testable pair")
        elif best_p > alpha:
            verdict = "inconclusive"
            detail = (f"n = {n} pairs cannot reach p <= {alpha:g} (smallest possible combined "
                      f"p = {best_p:.3g}); D = {d:.2f}")
        else:
            verdict = "pass" if d >= 1 else "fail"
            detail = f"D = {d:.2f}, p = {unit['p']:.3g}, n = {n}"
        out.append(Outcome("discernment", str(unit["evaluator"]), "", test,
                           str(unit["perturbation"]), verdict, d,
                           detail + _unverified(unit), n))
    return out


def confusion_outcomes(data: Mapping[str, Any]) -> list[Outcome]:
    alpha = float((data.get("thresholds") or {}).get("alpha", 0.05))
    out = []
    for item in data.get("items") or []:
        kind = item.get("test")
        if kind not in ("directional", "invariance"):
            continue
        n = int(item.get("n") or 0)
        need = min_pairs("greater" if kind == "directional" else "two-sided", alpha)
        r = item.get("rank_biserial")
        change = item.get("change")
        expected = "should move" if kind == "directional" else "should stay"
        if item.get("passed") is None:
            verdict, detail = "inconclusive", f"{expected}: nothing to test (n = {n})"
        elif n < need:
            verdict = "inconclusive"
            detail = (f"{expected}: n = {n} pairs cannot reach p < {alpha:g} (needs {need})")
        else:
            verdict = "pass" if item["passed"] else "fail"
            detail = (f"{expected} ({item.get('quality_aspect')}): change "
                      f"{_fmt(change)}, r = {_fmt(r)}, p = {_fmt(item.get('pvalue'))}")
        # effect: for S_T how strongly it noticed; for S_F how little it moved (1 - |r|)
        effect = None if r is None else (r if kind == "directional" else 1.0 - abs(r))
        out.append(Outcome("criteria-confusion", str(item["evaluator"]), str(item["aspect"]),
                           f"{item['perturbation']}@{item['severity']}",
                           str(item["perturbation"]), verdict, effect,
                           detail + _unverified(item), n))
    return out


def _unverified(entry: Mapping[str, Any]) -> str:
    """What a verdict adds when it rests on unverified LLM-written variants (kept on request:
    `analyses.trust`)."""
    count = int(entry.get("n_unverified") or 0)
    return (f"; rests on {count} unverified LLM-written variant pair(s) (attack below the "
            "precision floor)") if count else ""


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.3g}"


EXTRACTORS = {"blindspot": blindspot_outcomes, "discernment": discernment_outcomes,
              "criteria-confusion": confusion_outcomes}


def outcomes(results: Mapping[str, Any], analyses: Iterable[str] | None = None) -> list[Outcome]:
    """Every verdict of the run's tested analyses, with not-applicable tests marked."""
    applicability = Applicability(results)
    found = results.get("analyses") or {}
    out: list[Outcome] = []
    for name in analyses or TESTED:
        data = found.get(name)
        if isinstance(data, Mapping) and name in EXTRACTORS:
            out.extend(_na(o, applicability) for o in EXTRACTORS[name](data))
    return out


def tally(items: Sequence[Outcome]) -> dict[str, int]:
    """Counts per verdict, every verdict present (0 when none)."""
    counts = dict.fromkeys(VERDICTS, 0)
    for o in items:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    return counts
