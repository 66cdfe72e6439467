"""Wall time per phase of a run (import, model loads, warm-up, chunks, analyses, report), for
benchmarks (`bench/bench_overhead.py`) that ask where a small run's seconds go.

Off unless something records: `phase` then costs two global lookups. Phases may nest (the
report's plots inside the report); each is the wall time of its own block, summed over its
occurrences, and the first occurrence fixes its place in the record. `watching` calls a
function as each phase starts and ends, for benchmarks that read something else at those
moments (`bench/memory_scaling.py`: the process's memory).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

_RECORD: dict[str, float] | None = None
_WATCH: Callable[[str, str], None] | None = None


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as `name` when a recording is on; do nothing otherwise."""
    record, watch = _RECORD, _WATCH
    if record is None and watch is None:
        yield
        return
    if watch is not None:
        watch("start", name)
    if record is not None:
        record.setdefault(name, 0.0)
    start = time.perf_counter()
    try:
        yield
    finally:
        if record is not None:
            record[name] += time.perf_counter() - start
        if watch is not None:
            watch("end", name)


@contextlib.contextmanager
def recording() -> Iterator[dict[str, float]]:
    """Record the phases run inside the block: name -> seconds, in the order they started."""
    global _RECORD
    previous, _RECORD = _RECORD, {}
    try:
        yield _RECORD
    finally:
        _RECORD = previous


@contextlib.contextmanager
def watching(callback: Callable[[str, str], None]) -> Iterator[None]:
    """Call `callback("start" | "end", name)` as each phase run inside the block starts and
    ends (an error ending a phase included)."""
    global _WATCH
    previous, _WATCH = _WATCH, callback
    try:
        yield
    finally:
        _WATCH = previous
