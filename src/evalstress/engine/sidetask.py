"""One function run in a process of its own while the run's own process goes on.

The end of a run is serial: the analyses, the health check and the report each read the score
table in turn, with every helper gone. A pooled run of millions of score rows gives the slowest
piece that needs no other's result (the report's variant browser data) to a process of its own
on the core the helpers leave free. Spawned as the chunk helpers are (a clean interpreter,
Ctrl-C left to the parent, gone when the parent dies); a process that dies leaves the work to
be done here, so the outcome never depends on it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

from evalstress.engine.chunkwork import interrupts_blocked, spawned_pool, terminate_workers
from evalstress.engine.workerstart import start_helper

T = TypeVar("T")


class SideTask(Generic[T]):
    """`function(*args)` started at once in a spawned process (both picklable by reference);
    `result` waits for it. Close it on every path (`with`): a task still running is stopped."""

    def __init__(self, function: Callable[..., T], *args: Any):
        self._function, self._args = function, args
        self._pool: ProcessPoolExecutor | None = spawned_pool(1, start_helper, (os.getpid(),))
        with interrupts_blocked():  # the process spawned here inherits the blocked signal
            self._future = self._pool.submit(function, *args)

    def result(self) -> T:
        """The function's value (its exception is raised here); computed in this process when
        the spawned one died before it was done."""
        try:
            return self._future.result()
        except BrokenProcessPool:
            return self._function(*self._args)
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is None:
            return
        if not self._future.done():
            terminate_workers(self._pool)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def __enter__(self) -> SideTask[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
