"""Running the async LLM layer from synchronous code (the runner, the CLI, notebooks).

Under the command line's signal handlers (`evalstress.core.interrupts`), a Ctrl-C or SIGTERM cancels
the running coroutine's task: requests in flight are cancelled, the loop closes with no task
left pending, and the caller gets a `KeyboardInterrupt`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from evalstress.core import interrupts

T = TypeVar("T")


async def gather_all(*aws: Awaitable[T]) -> list[T]:
    """Run the awaitables concurrently and return their results in order, or raise the first
    one's exception, only once every one of them has finished.

    A plain `asyncio.gather` resolves as soon as the first child ends cancelled, while the
    others may still be inside their grace period after a Ctrl-C (an answer already on its way
    gets time to arrive and be cached); closing the HTTP sessions then would lose those answers
    and leave retries running on new sessions. Here a cancellation is passed to every child and
    raised after the last one is done."""
    tasks = [asyncio.ensure_future(aw) for aw in aws]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        _retrieve(tasks)
        raise
    _retrieve(tasks)
    return [task.result() for task in tasks]


def _retrieve(tasks: Sequence[asyncio.Future[T]]) -> None:
    """Look at every failed child's exception, so none is logged as 'never retrieved' when an
    earlier one is the one raised."""
    for task in tasks:
        if not task.cancelled():
            task.exception()


async def _main(coro_factory: Callable[[], Awaitable[T]]) -> T:
    with interrupts.cancelled_on_signal():
        return await coro_factory()


def run_sync(coro_factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion, also from inside a running loop (Jupyter): there it runs
    on a fresh loop in a helper thread, since a running loop cannot be re-entered."""
    try:
        asyncio.get_running_loop()
        inside_loop = True
    except RuntimeError:
        inside_loop = False
    if not inside_loop:
        try:
            return asyncio.run(_main(coro_factory))
        except asyncio.CancelledError:
            if interrupts.requested() is not None:
                raise KeyboardInterrupt from None
            raise
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro_factory())  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
