"""engine/chunkschedule.py: whichever process is free takes the next chunk."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from evalstress.engine.chunkschedule import READY_PER_HELPER, ChunkSchedule

#: a stand-in helper's task left unfinished this long ends "late": a schedule that waits for
#: what no test step will finish fails its assertions instead of hanging
LATE = 5.0


class Helper:
    """A stand-in helper: its tasks end when the test says so (`finish`), or on their own a
    moment after they were sent (`on_its_own`), from another thread as a pool's would."""

    def __init__(self, on_its_own: bool = False) -> None:
        self.held: list[tuple[int, Future[str]]] = []
        self.log: list[str] = []
        self.on_its_own = on_its_own
        self.lock = threading.Lock()

    def send(self, task: int) -> Future[str]:
        future: Future[str] = Future()
        with self.lock:
            self.held.append((task, future))
            self.log.append(f"sent {task}")
        if self.on_its_own:
            threading.Timer(0.02, self.finish).start()
        late = threading.Timer(LATE, self.finish_late, (task, future))
        late.daemon = True
        late.start()
        return future

    def finish_late(self, task: int, future: Future[str]) -> None:
        with self.lock:
            if future.done():
                return
            self.held = [(t, f) for t, f in self.held if f is not future]
            self.log.append(f"late {task}")
        future.set_result(f"late {task}")

    def finish(self) -> None:
        """The oldest task held ends; its done-callback may hand the helper the next one."""
        with self.lock:
            task, future = self.held.pop(0)
            self.log.append(f"helper done {task}")
        future.set_result(f"helper {task}")

    def finish_all(self) -> None:
        while self.held:
            self.finish()


def schedule(tasks: object, here: object, helper: Helper, window: int = 100,
             examples: int = 1) -> ChunkSchedule[int, str]:
    return ChunkSchedule(tasks, here=here, send=helper.send, helpers=1,  # type: ignore[arg-type]
                         size=lambda task: examples, window=window)


def test_a_helper_takes_the_next_task_the_moment_it_finishes_one() -> None:
    """While this process runs a long task the helper finishes two of its own, and gets the
    next task each time without waiting for this process to be between tasks; outcomes come
    back in task order."""
    helper = Helper()

    def here(task: int) -> str:
        helper.log.append(f"here starts {task}")
        if task == 1:  # a long task here: the helper finishes two meanwhile
            helper.finish()
            helper.finish()
        else:  # a short one: the helper finishes what it holds
            helper.finish_all()
        helper.log.append(f"here ends {task}")
        return f"here {task}"

    outcomes = list(schedule(range(6), here, helper).outcomes())
    assert outcomes == ["helper 0", "here 1", "helper 2", "helper 3", "here 4", "helper 5"]
    log = helper.log
    assert log[log.index("here starts 1"):log.index("here ends 1")] == [
        "here starts 1", "helper done 0", "sent 2", "helper done 2", "sent 3"]


def test_a_helper_holds_one_task_at_a_time_so_none_waits_behind_another() -> None:
    """A task sent to a helper is one it starts at once: while its first task runs long,
    this process runs every other task instead of queueing one behind it (the run's last
    chunks would otherwise end with one process idle)."""
    helper = Helper()
    held_while_here: list[list[int]] = []

    def here(task: int) -> str:
        held_while_here.append([t for t, _ in helper.held])
        if task == 4:
            helper.finish()
        return f"here {task}"

    outcomes = list(schedule(range(5), here, helper).outcomes())
    assert outcomes == ["helper 0", "here 1", "here 2", "here 3", "here 4"]
    assert held_while_here == [[0]] * 4


def test_a_few_tasks_are_prepared_ahead_for_the_helpers_the_rest_as_they_are_taken() -> None:
    """Preparing a task makes the variants the parent writes (LLM calls): a few wait ready
    for the helpers, the rest are prepared as they are taken."""
    prepared: list[int] = []

    def source() -> Iterator[int]:
        for task in range(40):
            prepared.append(task)
            yield task

    seen_first: list[int] = []

    def here(task: int) -> str:
        seen_first.append(len(prepared))
        return f"here {task}"

    outcomes = list(schedule(source(), here, Helper(on_its_own=True)).outcomes())
    assert [int(o.split()[1]) for o in outcomes] == list(range(40))
    # the first task here: one sent to the helper, this one, and READY_PER_HELPER - 1 ready
    assert seen_first[0] == READY_PER_HELPER + 1
    assert prepared == list(range(40))


def test_this_process_stops_taking_tasks_while_the_window_is_full() -> None:
    """At most `window` examples are taken and not yet handed back: with the helper's oldest
    task unfinished, this process waits for it instead of taking a fourth (memory)."""
    helper = Helper()
    ran: list[int] = []

    def here(task: int) -> str:
        ran.append(task)
        if task == 2:  # the helper's task 0 ends a moment after this one
            threading.Timer(0.2, helper.finish).start()
        elif task > 2:
            helper.finish_all()
        return f"here {task}"

    outcomes = list(schedule(range(6), here, helper, window=6, examples=2).outcomes())
    assert outcomes == ["helper 0", "here 1", "here 2", "helper 3", "here 4", "helper 5"]
    assert ran == [1, 2, 4]  # task 3 went to the helper once its task 0 was back


def test_a_task_that_fails_here_raises_at_its_turn_after_the_earlier_outcomes() -> None:
    def here(task: int) -> str:
        if task == 1:
            raise ValueError("chunk 1: a bad row")
        return f"here {task}"

    outcomes = schedule(range(3), here, Helper(on_its_own=True)).outcomes()
    assert next(outcomes) == "helper 0"
    with pytest.raises(ValueError, match="chunk 1: a bad row"):
        next(outcomes)


def test_a_pool_that_breaks_is_an_error_not_a_hang() -> None:
    def broken(task: int) -> Future[str]:
        raise RuntimeError("a helper process died")

    plan = ChunkSchedule(range(3), here=lambda task: f"here {task}", send=broken, helpers=1,
                         size=lambda task: 1, window=100)
    with pytest.raises(RuntimeError, match="a helper process died"):
        list(plan.outcomes())
