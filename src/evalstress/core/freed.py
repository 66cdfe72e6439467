"""Freed memory handed back to the system where a run has just let go of a large working set.

A run frees a chunk's parses, variants and score rows after each chunk, and the joined tables
after the join and the analyses. The allocators keep what was freed for reuse: glibc's heap
keeps pages it cannot trim from its top, and pyarrow's pool (mimalloc) keeps its pages. Kept
memory counts in the process's resident size, and the next phase's work (numpy and pandas,
which allocate elsewhere) comes on top of it, so the peak of a run grew with its size although
what it held did not (bench/README.md, "Peak memory"). `give_back` asks both allocators to
return their free pages; nothing that is alive moves, so no output changes.

mimalloc keeps pages per thread, and `give_back`, called from the run's thread, returns only
that thread's: the run's own Parquet reads therefore decode in the calling thread
(`use_threads=False`, no pre-buffering), not in pyarrow's pools, whose idle threads would keep
what they allocated.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library has none (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    return trim


def give_back() -> None:
    """Return the free pages of the C heap and of pyarrow's memory pool (if pyarrow is loaded)
    to the system. A few milliseconds; called between chunks and after the phases that free
    whole tables."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
