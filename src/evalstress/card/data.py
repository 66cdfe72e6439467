"""The card's examples: read through the one example loader every run uses, spread over the
data's tasks up to the budget, and hashed as the jobs read them."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalstress.core.data import DataError, Example
from evalstress.core.text import length_skip, max_chars_option
from evalstress.job import RunSettings
from evalstress.job.build import load_job_examples


def load_card_examples(data: Path | None, field_map: Any = None, task: str | None = None,
                       max_chars: int | None = None,
                       say: Callable[[str], None] | None = None) -> list[Example]:
    """Every example of `data` (None: the built-in corpus) read by the loader of `evalstress
    run`, with its field mapping and default task; a bad file (or a bad `max_chars`, checked
    as `run` checks it) is one error line."""
    if data is None and (field_map or task):
        given = "a field mapping (--map)" if field_map else "a default task (--task)"
        raise ValueError(f"{given} applies to a data file: give one (--data FILE), or leave "
                         "it out to use the built-in corpus")
    settings = RunSettings.resolve({"data": data, "map": field_map, "task": task,
                                    "max_chars": max_chars}, face="card")
    return load_job_examples(settings, say=say)[0]


def within_length(examples: Sequence[Example], max_chars: int | None, source: str
                  ) -> tuple[list[Example], int | None]:
    """The examples whose text is within the length limit (`max_chars` as `run` takes it:
    None the default, 0 none) and the limit; every method would skip the others, so the card
    leaves them out before it spreads its budget. None within it is a DataError."""
    limit = max_chars_option({} if max_chars is None else {"max_chars": max_chars})
    kept = [e for e in examples if length_skip(e.id, e.hypothesis, limit) is None]
    if not kept:
        raise DataError(source, None, None, f"every example is longer than {limit:,} "
                        "characters: raise --max-chars (0: no limit)")
    return kept, limit


def spread_over_tasks(examples: Sequence[Example], limit: int | None) -> list[Example]:
    """At most `limit` examples (None: all), taken in turn from each task in order of first
    appearance (the first of each task, then the second, ...), kept in the data's order. A
    budget of 8 examples on data sorted by task so still sees every task."""
    if limit is None or len(examples) <= limit:
        return list(examples)
    by_task: dict[str, list[int]] = {}
    for index, example in enumerate(examples):
        by_task.setdefault(example.task, []).append(index)
    queues = list(by_task.values())
    chosen: list[int] = []
    depth = 0
    while len(chosen) < limit:
        for queue in queues:
            if depth < len(queue) and len(chosen) < limit:
                chosen.append(queue[depth])
        depth += 1
    return [examples[i] for i in sorted(chosen)]


def examples_sha256(examples: Sequence[Example]) -> str:
    """sha256 of the examples as the jobs read them: one canonical JSON line per example (id,
    task, source, hypothesis, references, meta), in order."""
    digest = hashlib.sha256()
    for example in examples:
        line = json.dumps(example.to_dict(), sort_keys=True, ensure_ascii=False, default=str)
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def describe(examples: Sequence[Example], available: int, data: Path | None,
             field_map: Any = None, task: str | None = None, *, too_long: int = 0,
             max_chars: int | None = None) -> dict[str, Any]:
    """The card's `data` block: where the examples came from, how many were taken of how many,
    how many were left out for their length, how they spread over the tasks, and their
    hash."""
    tasks = Counter(example.task for example in examples)
    block: dict[str, Any] = {
        "source": str(data) if data is not None else "built-in corpus",
        "map": field_map, "task": task, "examples": len(examples), "available": available,
        "tasks": dict(tasks),
        "selection": ("all" if len(examples) + too_long == available else
                      "spread over the tasks: the first of each task, then the second, "
                      "..., kept in the data's order"),
        "sha256": examples_sha256(examples)}
    if too_long:
        block["skipped"] = {"rows": too_long,
                            "reason": f"longer than {max_chars:,} characters"}
    return block
