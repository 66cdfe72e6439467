"""Human preference data: pairs of outputs of one input, with the output people preferred.

One JSONL row per pair (docs/judges.md, "Human preferences"):

    {"id": "p1", "item": "q7", "source": "...", "a": "...", "b": "...",
     "preference": "a", "votes": ["a", "a", "b"], "references": ["..."], "task": "dialogue"}

- `a`, `b` (required): the two outputs, non-empty texts.
- `preference`: `a`, `b` or `tie` (any case); or a mapping of several human aspects to one
  of those (`{"helpfulness": "a", "harmlessness": "tie"}`).
- `votes`: the raters' own choices, a list of `a` / `b` / `tie` in the raters' order (null
  where a rater gave none), or a mapping of aspect to such a list. Without `preference`, the
  majority of the votes is the preference (no majority: a tie).
- `item`: the input the pair belongs to; pairs of one item share it and are drawn together
  by the intervals (they are not independent). Default: the pair's own id.
- `id` (default `file:line`), `source` (the input or prompt, may be empty), `references`
  (a text or a list), `task` (default open-ended), as in an example.

Every row names the same aspects as the first. A bad row is a DataError naming the file, line
and field, raised before any output is scored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstress.core.data import (
    DEFAULT_TASK,
    TASKS,
    field_references,
    field_text,
    id_text,
    read_jsonl,
)
from evalstress.core.userfile import DataError, check_readable

#: the choices a preference or a vote may name
CHOICES = ("a", "b", "tie")
#: the aspect a plain (not per-aspect) preference is recorded under
PLAIN = "preference"


@dataclass(frozen=True)
class PreferencePair:
    """One pair of outputs with the human preference on each aspect and the raters' votes."""

    id: str
    item: str
    source: str
    a: str
    b: str
    references: tuple[str, ...]
    task: str
    preference: Mapping[str, str]  # aspect -> a | b | tie
    votes: Mapping[str, tuple[str | None, ...]]  # aspect -> one choice per rater (None: none)


@dataclass(frozen=True)
class PreferenceData:
    """A preference file read whole: its pairs, the human aspects, and its hash (so a card's
    method is reused only on the same pairs)."""

    path: Path
    pairs: tuple[PreferencePair, ...]
    aspects: tuple[str, ...]
    sha256: str

    @property
    def items(self) -> int:
        return len({p.item for p in self.pairs})

    def describe(self) -> dict[str, Any]:
        """What card.json records of the file."""
        return {"file": str(self.path), "sha256": self.sha256, "pairs": len(self.pairs),
                "items": self.items, "aspects": list(self.aspects),
                "votes": any(p.votes for p in self.pairs)}


def choice(value: Any, path: Path, line: int, name: str, *, allow_none: bool = False
           ) -> str | None:
    """'a', 'b' or 'tie' (any case), or a DataError naming the field."""
    if value is None and allow_none:
        return None
    if isinstance(value, str) and value.strip().lower() in CHOICES:
        return value.strip().lower()
    raise DataError(path, line, name, f"must be one of a, b, tie; got {value!r}")


def majority(votes: Sequence[str | None]) -> str | None:
    """The choice more raters made than any other; a tie when a and b are level or when
    'tie' leads; None without any vote."""
    given = [v for v in votes if v is not None]
    if not given:
        return None
    counts = {c: given.count(c) for c in CHOICES}
    top = max(counts.values())
    leaders = [c for c in CHOICES if counts[c] == top]
    return leaders[0] if len(leaders) == 1 else "tie"


def per_aspect(value: Any, path: Path, line: int, name: str) -> dict[str, Any]:
    """A field given plainly (one aspect, PLAIN) or as a mapping of aspect -> value."""
    if isinstance(value, Mapping):
        if not value:
            raise DataError(path, line, name, "is an empty mapping: name at least one aspect")
        return {str(k): v for k, v in value.items()}
    return {PLAIN: value}


def read_votes(value: Any, path: Path, line: int) -> dict[str, tuple[str | None, ...]]:
    out = {}
    for aspect, votes in per_aspect(value, path, line, "votes").items():
        where = "votes" if aspect == PLAIN and not isinstance(value, Mapping) \
            else f"votes.{aspect}"
        if not isinstance(votes, list) or not votes:
            raise DataError(path, line, where, "must be a non-empty list of a, b, tie (null: "
                            "no vote)")
        out[aspect] = tuple(choice(v, path, line, f"{where}[{i}]", allow_none=True)
                            for i, v in enumerate(votes))
    return out


def pair_from_row(row: Mapping[str, Any], path: Path, line: int) -> PreferencePair:
    """One row of the layout (module docstring) as a pair, or a DataError."""
    for name in ("a", "b"):
        if name not in row:
            present = ", ".join(sorted(map(str, row))[:12])
            raise DataError(path, line, name, f"is missing (an output of the pair; fields "
                            f"present: {present})")
    a = field_text(row["a"], path, line, "a")
    b = field_text(row["b"], path, line, "b")
    votes = read_votes(row["votes"], path, line) if row.get("votes") is not None else {}
    if row.get("preference") is not None:
        given = per_aspect(row["preference"], path, line, "preference")
        plain = not isinstance(row["preference"], Mapping)
        preference = {k: str(choice(v, path, line, "preference" if plain else
                                    f"preference.{k}")) for k, v in given.items()}
        odd = sorted(set(votes) - set(preference))
        if odd:
            raise DataError(path, line, "votes", f"names aspect(s) the preference does not: "
                            f"{', '.join(odd)}")
    elif votes:
        preference = {}
        for aspect, given_votes in votes.items():
            chosen = majority(given_votes)
            if chosen is None:
                raise DataError(path, line, "votes", f"{aspect}: every vote is null and no "
                                "preference is given")
            preference[aspect] = chosen
    else:
        raise DataError(path, line, "preference", "is missing: give preference (a, b or tie) "
                        "or the raters' votes")
    pair_id = id_text(row.get("id"), path, line, "id") or f"{path.stem}:{line}"
    item = id_text(row.get("item"), path, line, "item") or pair_id
    task = str(row.get("task") or DEFAULT_TASK)
    if task not in TASKS:
        raise DataError(path, line, "task", f"unknown task '{task}'; choose one of "
                        f"{', '.join(TASKS)}")
    return PreferencePair(pair_id, item, field_text(row.get("source"), path, line, "source",
                                                    allow_empty=True),
                          a, b, tuple(field_references(row.get("references"), path, line,
                                                       "references")),
                          task, preference, votes)


def load_preferences(path: str | Path) -> PreferenceData:
    """Every pair of a preference file (JSONL); a DataError naming the file, line and field
    at the first bad row, a duplicate id, or a row whose aspects differ from the first's."""
    file = check_readable(path, "preferences")
    if file.suffix.lower() != ".jsonl":
        raise DataError(file, None, None, f"a preference file is JSONL (one pair a line), "
                        f"not '{file.suffix}'")
    pairs: list[PreferencePair] = []
    seen: dict[str, int] = {}
    aspects: tuple[str, ...] = ()
    for line, row in read_jsonl(file):
        pair = pair_from_row(row, file, line)
        if pair.id in seen:
            raise DataError(file, line, "id", f"duplicate id '{pair.id}' (first on line "
                            f"{seen[pair.id]})")
        seen[pair.id] = line
        if not pairs:
            aspects = tuple(pair.preference)
        elif set(pair.preference) != set(aspects):
            raise DataError(file, line, "preference", f"names the aspects "
                            f"{', '.join(sorted(pair.preference))}; the first row names "
                            f"{', '.join(sorted(aspects))}: every row names the same")
        pairs.append(pair)
    if not pairs:
        raise DataError(file, None, None, "holds no pairs")
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    return PreferenceData(file, tuple(pairs), aspects, digest)
