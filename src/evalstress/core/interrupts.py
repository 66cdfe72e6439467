"""Ctrl-C and SIGTERM: the first one stops the work cleanly, a second one stops at once.

The command line installs these handlers (`install`). On the first signal:

- async work (judges, the generator, the local model) runs under `run_sync`, which registers
  its main task here: the handler cancels that task, so every request in flight is cancelled
  through the normal asyncio path and the loop ends with no task left pending;
- anything else gets a `KeyboardInterrupt` at once (the pipeline's worker pool is then
  terminated rather than waited for, see `chunkwork.ChunkExecutor.close`).

What is finished is already on disk: every answered request and every scored batch is in the
SQLite caches, every finished chunk in the run's staging folder. The command prints how to resume
and exits 130 (SIGINT) or 143 (SIGTERM). A second signal exits at once with the same code,
without waiting for any clean-up. Short critical sections (the final rename of a run directory)
hold the signal back with `deferred()` until they are done.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


@dataclass
class _State:
    installed: bool = False
    received: int | None = None  # the first signal's number
    deferring: int = 0  # depth of deferred() sections
    pending: bool = False  # a signal arrived inside a deferred() section
    tasks: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = field(
        default_factory=list)
    hint: str = ""


_STATE = _State()


def install() -> None:
    """Handle SIGINT and SIGTERM in this (main) thread; a no-op elsewhere or when done twice."""
    if _STATE.installed or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _handle)
    signal.signal(signal.SIGTERM, _handle)
    _STATE.installed = True


def uninstall() -> None:
    """Back to Python's default handlers, and forget any signal (tests use it)."""
    if _STATE.installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _STATE.installed = False
    reset()


def reset() -> None:
    _STATE.received = None
    _STATE.pending = False
    _STATE.hint = ""


def requested() -> int | None:
    """The signal that asked this process to stop, if one did."""
    return _STATE.received


def exit_code() -> int:
    """130 after SIGINT (or a plain KeyboardInterrupt), 143 after SIGTERM."""
    return EXIT_CODES.get(signal.Signals(_STATE.received), 130) if _STATE.received else 130


def set_resume_hint(text: str) -> None:
    """What else the interrupted command kept, e.g. "finished chunks in runs/.x.partial"."""
    _STATE.hint = text


def message() -> str:
    """The line printed when a command stops on a signal."""
    name = "SIGTERM" if _STATE.received == signal.SIGTERM else "Ctrl-C"
    hint = f", {_STATE.hint}" if _STATE.hint else ""
    return (f"interrupted ({name}): what was finished is saved (scores and answers in the "
            f"cache{hint}); run the same command again to resume")


def _handle(signum: int, frame: Any) -> None:
    if _STATE.received is not None:  # the second signal: no more waiting
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("\ninterrupted again: stopping now\n")
            sys.stderr.flush()
        os._exit(EXIT_CODES.get(signal.Signals(_STATE.received), 130))
    _STATE.received = signum
    if _STATE.deferring:
        _STATE.pending = True
        return
    for loop, task in reversed(_STATE.tasks):
        if not loop.is_closed() and not task.done():
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake a loop blocked in select()
            return
    raise KeyboardInterrupt


@contextlib.contextmanager
def cancelled_on_signal() -> Iterator[None]:
    """Inside a coroutine: a signal cancels the current task (the main task of a run_sync)."""
    if _STATE.received is not None:
        raise KeyboardInterrupt
    task = asyncio.current_task()
    if task is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    entry = (asyncio.get_running_loop(), task)
    _STATE.tasks.append(entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            _STATE.tasks.remove(entry)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a signal back until the block ends: a few steps that must not be cut (the rename
    of a run directory), or the import of a large library (a KeyboardInterrupt inside
    `import torch` left it half made, and the interpreter then ended on SIGINT instead of
    the command's 143). Only the main thread, where Python runs the handler, defers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _STATE.deferring += 1
    try:
        yield
    finally:
        _STATE.deferring -= 1
        if not _STATE.deferring and _STATE.pending:
            _STATE.pending = False
            raise KeyboardInterrupt


__all__ = ["EXIT_CODES", "cancelled_on_signal", "deferred", "exit_code", "install", "message",
           "requested", "reset", "set_resume_hint", "uninstall"]
