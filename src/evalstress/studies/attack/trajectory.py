"""Scored candidates of one search, the top-k the generator sees, and the result it returns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Candidate:
    """A text with its gold and victim scores (0-100), feedback S and eq. 3 verdict. The gold
    is None for a candidate of a victim-only search, which the gold never saw."""

    text: str
    iteration: int
    gold: float | None
    victim: float
    feedback: float
    success: bool
    victim_raw: float | None = None
    gold_detail: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # what a baseline did to get here (rule, substitution, deletion)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"iteration": self.iteration, "text": self.text,
                               "gold": self.gold, "victim": self.victim,
                               "victim_raw": self.victim_raw, "feedback": self.feedback,
                               "success": self.success}
        if self.gold_detail:
            out["gold_detail"] = self.gold_detail
        if self.note:
            out["note"] = self.note
        return out


class Trajectory:
    """Every scored candidate in order of arrival (the original first)."""

    def __init__(self, items: Iterable[Candidate] = ()):
        self.items: list[Candidate] = []
        self._texts: set[str] = set()
        for item in items:
            self.add(item)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, text: object) -> bool:
        return text in self._texts

    def add(self, candidate: Candidate) -> None:
        self.items.append(candidate)
        self._texts.add(candidate.text)

    def top(self, k: int, *, later_ties: bool = False) -> list[Candidate]:
        """The k highest-feedback candidates in ascending order of feedback, as the prompt shows
        them (paper 004, sec. 3.3). Among equal scores the earlier candidate ranks higher (kept
        first, shown nearer the end); with `later_ties` (the paper protocol) the later one does,
        as the released code's stable ascending sort, whose last k it shows, leaves it."""
        # ascending by feedback, the tie that ranks higher last; the top k are the last k
        tie = 1 if later_ties else -1
        order = sorted(range(len(self.items)), key=lambda i: (self.items[i].feedback, tie * i))
        return [self.items[i] for i in order[max(0, len(order) - k):]]

    def best(self, rule: str = "first-success") -> Candidate | None:
        """The candidate a search returns under its stop rule (`AttackParams.stop_rule`).

        `first-success`: the successful candidate with the highest feedback, else the highest
        feedback overall (earliest on ties). `highest-feedback` (paper 004): the highest
        feedback whatever its verdict, the latest on ties, as the released code's stable
        ascending sort leaves the last-added of equal scores at the top."""
        if not self.items:
            return None
        if rule == "highest-feedback":
            return max(enumerate(self.items), key=lambda ic: (ic[1].feedback, ic[0]))[1]
        ranked = [(c.feedback, -i, c) for i, c in enumerate(self.items)]
        pool = [r for r in ranked if r[2].success] or ranked
        return max(pool, key=lambda r: (r[0], r[1]))[2]

    def to_list(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.items]
