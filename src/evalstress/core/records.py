"""The records every layer shares: row markers of the score table, progress, skips, verdicts.

They live here, under the engine and the analyses, so that an analysis can name the original
rows or a skip without importing the machinery that made them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: `perturbation` of the rows that score an original text
ORIGINAL = "original"
#: `example_id` of the rows a corpus-level evaluator (MAUVE) gives a whole set
CORPUS = "*"

#: The columns of the long score table, in order (core.scoretable holds their Arrow types).
SCORE_COLUMNS = [
    "example_id", "task", "perturbation", "severity", "severity_rank", "seed", "noise_ratio",
    "evaluator", "aspect", "score", "higher_is_better", "status", "reason", "answer",
]

#: The verdicts of a test outcome, from best to worst; `evalstress check` and suites' `expect:`
#: blocks name them.
VERDICTS = ("pass", "fail", "inconclusive", "not-applicable")

#: The columns of a skip record (skips.jsonl, the skips table).
SKIP_COLUMNS = ["example_id", "perturbation", "severity", "seed", "reason"]


class Progress:
    """What long work reports while it runs; the CLI draws bars from it, tests stay silent."""

    def start(self, label: str, total: int) -> None:  # pragma: no cover - trivial
        pass

    def advance(self, label: str, amount: int = 1) -> None:  # pragma: no cover - trivial
        pass

    def finish(self, label: str) -> None:  # pragma: no cover - trivial
        pass


@dataclass
class SkipRecord:
    """A planned unit that made no variant, and why (no entity to swap, a text too long, ...)."""

    example_id: str
    perturbation: str
    severity: Any
    seed: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"example_id": self.example_id, "perturbation": self.perturbation,
                "severity": self.severity, "seed": self.seed, "reason": self.reason}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SkipRecord:
        """A skip as `to_json` wrote it (a line of skips.jsonl)."""
        return cls(str(data["example_id"]), str(data["perturbation"]), data["severity"],
                   int(data["seed"]), str(data["reason"]))
