"""Which evaluators to combine (paper 002, sec. 8): metrics cover each other's blind spots.

From the verdicts of a run with several evaluators: the smallest set whose union passes the
most tests (a test counts as passed by a set when at least one member passes it), and the tests
no evaluator passes. A "candidate" is an evaluator aspect (one score, e.g. rouge/rougeL; the
paper treats BERTScore-P/R/F as separate metrics) or, with `by="evaluator"`, a whole evaluator
(passing when any of its aspects passes). A test is one analysis' test of one perturbation (and
severity); inconclusive and not-applicable verdicts do not count as passes.

The search is exact: candidates whose passes are a subset of another's are dropped, then sets
are tried by increasing size. When that would exceed `max_sets` combinations, a greedy cover
is returned and flagged (`exact: false`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from evalstress.analyses.outcomes import Outcome

MAX_SETS = 2_000_000


@dataclass
class Combination:
    by: str
    candidates: list[str]
    tests: list[str]
    best: list[str]  # the smallest set reaching the most passes
    covered: int
    alternatives: list[list[str]]  # other sets of the same size and coverage
    uncovered: list[str]  # tests no candidate passes
    coverage_by_size: list[dict[str, Any]]  # best coverage with k members, k = 1..len(best)
    exact: bool
    passes: dict[str, list[str]] = field(default_factory=dict)  # candidate -> tests passed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _test_id(o: Outcome) -> str:
    return f"{o.analysis}:{o.test}"


def combine(outcomes: Sequence[Outcome], *, by: Literal["aspect", "evaluator"] = "aspect",
            max_alternatives: int = 5, max_sets: int = MAX_SETS) -> Combination:
    """The smallest set of candidates whose union passes the most tests (see module doc)."""
    if by not in ("aspect", "evaluator"):
        raise ValueError(f"by must be 'aspect' or 'evaluator', not {by!r}")
    passes: dict[str, set[str]] = {}
    tests: list[str] = []
    for o in outcomes:
        if o.analysis == "discernment" and by == "aspect":
            continue  # discernment judges the evaluator as a whole
        name = o.evaluator if by == "evaluator" else o.subject
        passes.setdefault(name, set())
        test = _test_id(o)
        if test not in tests:
            tests.append(test)
        if o.verdict == "pass":
            passes[name].add(test)
    candidates = list(passes)
    reachable = set().union(*passes.values()) if passes else set()
    uncovered = [t for t in tests if t not in reachable]
    useful = _undominated(candidates, passes)
    best, alternatives, exact, by_size = _search(useful, passes, reachable, max_alternatives,
                                                 max_sets)
    return Combination(by, candidates, tests, best, len(reachable), alternatives, uncovered,
                       by_size, exact, {c: sorted(passes[c], key=tests.index) for c in candidates})


def _undominated(candidates: list[str], passes: dict[str, set[str]]) -> list[str]:
    """Drop candidates that pass nothing or only a subset of another's passes (the first of
    equals is kept, so the result is deterministic)."""
    keep = []
    for i, c in enumerate(candidates):
        mine = passes[c]
        if not mine:
            continue
        dominated = any(
            (mine < passes[o]) or (mine == passes[o] and j < i)
            for j, o in enumerate(candidates) if o != c)
        if not dominated:
            keep.append(c)
    return keep


def _search(useful: list[str], passes: dict[str, set[str]], target: set[str],
            max_alternatives: int, max_sets: int
            ) -> tuple[list[str], list[list[str]], bool, list[dict[str, Any]]]:
    if not target:
        return [], [], True, []
    by_size: list[dict[str, Any]] = []
    for k in range(1, len(useful) + 1):
        if math.comb(len(useful), k) > max_sets:
            greedy = _greedy(useful, passes, target)
            return greedy, [], False, by_size
        best_cover, found = -1, []
        for combo in itertools.combinations(useful, k):
            cover = len(set().union(*(passes[c] for c in combo)))
            if cover > best_cover:
                best_cover, found = cover, [list(combo)]
            elif cover == best_cover and len(found) <= max_alternatives:
                found.append(list(combo))
        by_size.append({"size": k, "covered": best_cover, "set": found[0]})
        if best_cover == len(target):
            return found[0], found[1:max_alternatives + 1], True, by_size
    return useful, [], True, by_size  # unreachable: the union of all useful covers target


def _greedy(useful: list[str], passes: dict[str, set[str]], target: set[str]) -> list[str]:
    chosen: list[str] = []
    covered: set[str] = set()
    while covered != target:
        pick = max(useful, key=lambda c: len(passes[c] - covered))
        chosen.append(pick)
        covered |= passes[pick]
    return chosen
