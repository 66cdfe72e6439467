"""Whether a finished run can be trusted: evaluators whose scores are mostly missing, and rows
left out because their text was too long.

A judge whose every call failed still yields a score table, full of missing rows; its analyses
then report "0 blind spots", which reads like a clean bill of health. The CLI asks this module
after writing every output, prints the counts and exits with `EXIT_MOSTLY_MISSING`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalstress.text import LENGTH_SKIP

#: exit status of a run that wrote its outputs but whose scores are mostly missing
EXIT_MOSTLY_MISSING = 3
DEFAULT_MAX_MISSING = 0.5


@dataclass(frozen=True)
class MissingShare:
    """How many of one evaluator's score rows (one per request and aspect) are missing."""

    evaluator: str
    missing: int
    rows: int
    top_reason: str

    @property
    def share(self) -> float:
        return self.missing / self.rows if self.rows else 0.0

    def describe(self) -> str:
        line = (f"{self.evaluator}: {self.missing} of {self.rows} scores missing "
                f"({self.share:.0%})")
        return line + (f"; most often: {self.top_reason}" if self.top_reason else "")


def check_max_missing(value: float) -> float:
    """A fraction in [0, 1]; 1 never fails a run."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"--max-missing {value}: give a fraction between 0 and 1 "
                         "(1 turns the check off)")
    return value


def missing_shares(result: Any, aspects: dict[str, Sequence[str]]) -> list[MissingShare]:
    """Per evaluator (label -> its aspects): missing score rows, all rows, the commonest reason."""
    reasons: dict[str, Counter[str]] = {}
    for entry in result.summary.get("missing_reasons") or []:
        reasons.setdefault(str(entry["evaluator"]), Counter())[str(entry["reason"])] += int(
            entry["count"])
    out = []
    for label, names in aspects.items():
        stats = result.stats.get(label)
        if stats is None:
            continue
        counted = reasons.get(label, Counter())
        top = counted.most_common(1)[0][0] if counted else ""
        out.append(MissingShare(label, int(stats.missing), int(stats.requested) * len(names), top))
    return out


def mostly_missing(result: Any, aspects: dict[str, Sequence[str]],
                   max_missing: float) -> list[MissingShare]:
    """The evaluators whose share of missing scores is above `max_missing` (none at 1.0)."""
    return [s for s in missing_shares(result, aspects) if s.rows and s.share > max_missing]


def long_text_skips(result: Any) -> list[str]:
    """The distinct skip reasons of rows left out for their length (each names its row)."""
    found = {str(entry["reason"]) for entry in result.summary.get("skip_reasons") or []
             if LENGTH_SKIP in str(entry["reason"])}
    return sorted(found)
