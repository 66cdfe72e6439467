"""Running the async LLM layer from synchronous code (the runner, the CLI, notebooks).

Under the command line's signal handlers (`evalstress.core.interrupts`), a Ctrl-C or SIGTERM cancels
the running coroutine's task: requests in flight are cancelled, the loop closes with no task
left pending, and the caller gets a `KeyboardInterrupt`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from evalstress.core import interrupts

T = TypeVar("T")


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
