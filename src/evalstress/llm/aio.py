"""Running the async LLM layer from synchronous code (the runner, the CLI, notebooks)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro_factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion, also from inside a running loop (Jupyter): there it runs
    on a fresh loop in a helper thread, since a running loop cannot be re-entered."""
    try:
        asyncio.get_running_loop()
        inside_loop = True
    except RuntimeError:
        inside_loop = False
    if not inside_loop:
        return asyncio.run(coro_factory())  # type: ignore[arg-type]
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
