"""Who runs which chunk of a pooled run: whichever process is free takes the next one.

The run's own process prepares the tasks in order (the variants the parent makes belong to
it) and runs the next one whenever it is free; a helper is handed the next prepared task the
moment it finishes one (the pool calls back), so it never waits for this process to be between
two chunks of its own. A helper holds one task at a time: a second one queued behind it could
wait there while another process is free. Outcomes come back in task order, and at most
`window` examples are taken and not yet handed back (memory).

When helpers were fed only between this process's chunks, holding two, the run's small last
chunks ended with one process idle (a helper holding a queued chunk while this process had none
left), and this process could wait on the oldest unwritten chunk; taken from one queue by
whoever is free, the two end close together (bench/README.md, "Figures behind the code").
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Generic, TypeVar

Task = TypeVar("Task")
Outcome = TypeVar("Outcome")

#: tasks prepared ahead per helper, for it to take as it finishes one while this process runs
#: a chunk of its own (the run's last chunks are small: a helper may finish several meanwhile)
READY_PER_HELPER = 4


class ChunkSchedule(Generic[Task, Outcome]):
    """One pooled pass over `tasks` (see the module docstring).

    `here` runs a task in this process; `send` hands one to a helper and returns its future;
    `size` is a task's examples (for `window`)."""

    def __init__(self, tasks: Iterable[Task], *, here: Callable[[Task], Outcome],
                 send: Callable[[Task], Future[Outcome]], helpers: int,
                 size: Callable[[Task], int], window: int):
        self._source = iter(tasks)
        self._here = here
        self._send = send
        self._helpers = max(1, helpers)
        self._size = size
        self._window = window
        self._ready: deque[Task] = deque()  # prepared here, not yet taken
        self._taken: deque[tuple[Task, Future[Outcome]]] = deque()  # in task order
        self._sent: list[Future[Outcome]] = []  # with a helper, not yet done
        self._lock = threading.Lock()  # ready -> taken moves, from here and the callbacks
        self._exhausted = False
        self._closed = False
        self._failure: BaseException | None = None

    def outcomes(self) -> Iterator[Outcome]:
        """Each task's outcome, in task order; a task's error is raised at its turn."""
        try:
            while True:
                self._raise_failure()
                while self._taken and self._taken[0][1].done():
                    yield self._next_outcome()
                if self._taken and self._taken_examples() >= self._window:
                    yield self._next_outcome()  # waits for the oldest: memory is bounded
                    continue
                self._prepare()
                self.feed()
                task, future = self._take()
                if task is None or future is None:
                    if not self._taken:
                        return
                    yield self._next_outcome()  # every task is out: wait for the oldest
                    continue
                try:
                    future.set_result(self._here(task))
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt | SystemExit):
                        raise
                    future.set_exception(exc)
        finally:
            with self._lock:
                self._closed = True  # a helper that finishes now gets nothing more

    def feed(self, _finished: Future[Outcome] | None = None) -> None:
        """Hand a prepared task to each helper that holds none; also the callback of each task
        sent, so that a helper gets the next one as it finishes one."""
        sent: list[Future[Outcome]] = []
        with self._lock:
            if self._closed:
                return
            self._sent = [f for f in self._sent if not f.done()]
            try:
                while self._ready and len(self._sent) < self._helpers:
                    task = self._ready[0]
                    future = self._send(task)
                    self._ready.popleft()
                    self._taken.append((task, future))
                    self._sent.append(future)
                    sent.append(future)
            except BaseException as exc:  # a broken pool: raised in this process's loop
                self._failure = exc
        for future in sent:  # outside the lock: a future already done calls back at once
            future.add_done_callback(self.feed)

    def _prepare(self) -> None:
        """Prepare tasks until enough wait for the helpers to take as they finish theirs."""
        while not self._exhausted and len(self._ready) <= READY_PER_HELPER * self._helpers:
            try:
                task = next(self._source)
            except StopIteration:
                self._exhausted = True
                break
            with self._lock:
                self._ready.append(task)

    def _take(self) -> tuple[Task | None, Future[Outcome] | None]:
        with self._lock:
            if not self._ready:
                return None, None
            task = self._ready.popleft()
            future: Future[Outcome] = Future()
            self._taken.append((task, future))
            return task, future

    def _next_outcome(self) -> Outcome:
        _, future = self._taken.popleft()
        return future.result()

    def _taken_examples(self) -> int:
        with self._lock:
            return sum(self._size(task) for task, _ in self._taken)

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure
