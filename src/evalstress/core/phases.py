"""Wall time per phase of a run (import, model loads, warm-up, chunks, analyses, report), for
benchmarks (`bench/bench_overhead.py`) that ask where a small run's seconds go.

Off unless something records: `phase` then costs one global lookup. Phases may nest (the
report's plots inside the report); each is the wall time of its own block, summed over its
occurrences, and the first occurrence fixes its place in the record.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

_RECORD: dict[str, float] | None = None


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as `name` when a recording is on; do nothing otherwise."""
    record = _RECORD
    if record is None:
        yield
        return
    record.setdefault(name, 0.0)
    start = time.perf_counter()
    try:
        yield
    finally:
        record[name] += time.perf_counter() - start


@contextlib.contextmanager
def recording() -> Iterator[dict[str, float]]:
    """Record the phases run inside the block: name -> seconds, in the order they started."""
    global _RECORD
    previous, _RECORD = _RECORD, {}
    try:
        yield _RECORD
    finally:
        _RECORD = previous
