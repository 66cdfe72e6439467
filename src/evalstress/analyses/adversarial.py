"""Attack success rates (paper 004) from attack records: per victim x direction x method, the
share of attacks that succeeded under eq. 3, with a Wilson 95% interval and the victim queries
they took. Two denominators: the examples the method could attack (`asr`: a rule that does not
apply, or an original the gold could not score, is left out) and every example it was given
(`asr_all`: those count as failures, as in a table over a fixed sample of examples). The
`adversarial` analysis of a suite runs the attacks (`studies.attack.suite`) and lands here;
`evalstress attack` does the same from the command line."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalstress.core.proportions import wilson

#: Stops that mean the attack never ran on this example (not counted as attempts).
NOT_RUN = ("not-applicable", "original-unscored")


@dataclass
class AsrRow:
    victim: str
    direction: str
    method: str
    attempts: int
    successes: int
    asr: float | None
    ci_low: float | None
    ci_high: float | None
    queries_per_success: float | None  # mean victim queries of the successful attacks
    mean_queries: float | None  # mean victim queries of all attempts
    not_run: int = 0  # examples the method could not attack (no applicable rule, no score)
    attempts_all: int = 0  # every example the method was given: attempts + not_run
    asr_all: float | None = None  # successes / attempts_all
    ci_low_all: float | None = None
    ci_high_all: float | None = None


def _get(record: Any, key: str) -> Any:
    return record[key] if isinstance(record, Mapping) else getattr(record, key)


def asr_table(records: Iterable[Any]) -> list[AsrRow]:
    """One row per (victim, direction, method), in order of first appearance."""
    groups: dict[tuple[str, str, str], list[Any]] = {}
    for record in records:
        key = (_get(record, "victim"), _get(record, "direction"), _get(record, "method"))
        groups.setdefault(key, []).append(record)
    rows = []
    for (victim, direction, method), members in groups.items():
        ran = [r for r in members if _get(r, "stop") not in NOT_RUN]
        wins = [r for r in ran if _get(r, "success")]
        low, high = wilson(len(wins), len(ran))
        low_all, high_all = wilson(len(wins), len(members))
        rows.append(AsrRow(
            victim, direction, method, len(ran), len(wins),
            len(wins) / len(ran) if ran else None, low, high,
            statistics.fmean(_get(r, "queries") for r in wins) if wins else None,
            statistics.fmean(_get(r, "queries") for r in ran) if ran else None,
            len(members) - len(ran), len(members), len(wins) / len(members), low_all,
            high_all))
    return rows


def success_entries(records: Iterable[Any]) -> list[dict[str, Any]]:
    """The successful attacks in the shape of results.json (`$defs/adversarial` in
    docs/results.schema.json)."""
    out = []
    for r in records:
        if not _get(r, "success"):
            continue
        out.append({"example_id": _get(r, "example_id"), "victim": _get(r, "victim"),
                    "direction": _get(r, "direction"), "method": _get(r, "method"),
                    "original": _get(r, "original"), "text": _get(r, "text"),
                    "gold": _get(r, "gold"), "victim_score": _get(r, "victim_score"),
                    "gold_original": _get(r, "gold_original"),
                    "victim_original": _get(r, "victim_original"),
                    "iterations": _get(r, "iterations"), "queries": _get(r, "queries")})
    return out


@dataclass
class AdversarialResult:
    """`analyses.adversarial` of results.json; `info` adds victims, gold, generator, usage."""

    params: dict[str, Any]
    asr: list[AsrRow]
    successes: list[dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_records(cls, records: Sequence[Any], params: Mapping[str, Any], *,
                     info: Mapping[str, Any] | None = None,
                     notes: Sequence[str] = ()) -> AdversarialResult:
        return cls(dict(params), asr_table(records), success_entries(records), dict(info or {}),
                   list(notes))

    def to_dict(self) -> dict[str, Any]:
        return {"params": self.params, "asr": [asdict(r) for r in self.asr],
                "successes": self.successes, **self.info, "notes": self.notes}


