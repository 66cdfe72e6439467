"""How every command ends when the run cannot go on: a signal, a full disk, a read-only folder.

`GuardedGroup` is the command line's click group. Around each command it turns

- a Ctrl-C or SIGTERM (`KeyboardInterrupt`, or any error while stopping on a signal) into the
  resume message of `evalstress.core.interrupts` and exit 130 / 143;
- a storage error (disk full, read-only, permission; see `evalstress.core.storage`) into one line
  naming the path and why, and exit 2, saying which run directory kept its previous contents;
- any other exception (a bug in evalstress or in a plugin) into one line naming it, the hint
  to run again with `--debug` for the traceback, and exit 4 (`EXIT_UNEXPECTED`): exit 1 keeps
  its one meaning, `check`'s "expectations not met". With `--debug` (or EVALSTRESS_DEBUG=1)
  the traceback is printed first, and the exit is 4 all the same (an exception let out of
  the command would end it with Python's 1).

Live displays (progress bars) register a stop callback, so an interrupted command leaves the
terminal as it found it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from evalstress.core import interrupts
from evalstress.core.consoles import FittedConsole, visible_controls
from evalstress.core.redact import redact
from evalstress.core.storage import describe

_STOPPERS: list[Callable[[], None]] = []
_KEPT: list[Path] = []
#: the exit code of an exception nobody expected (1 is `check`'s "expectations not met")
EXIT_UNEXPECTED = 4
_DEBUG: list[bool] = []  # set by the --debug option of the command line


def debug_on() -> None:
    """Let unexpected exceptions through with their traceback (`--debug`)."""
    _DEBUG.append(True)


def debugging() -> bool:
    return bool(_DEBUG) or os.environ.get("EVALSTRESS_DEBUG", "") not in ("", "0")


def on_stop(callback: Callable[[], None]) -> None:
    """Call `callback` (e.g. stop progress bars) before the command prints how it ended."""
    _STOPPERS.append(callback)


def keeps(out: Path) -> None:
    """A run directory the command writes by rename only: its previous run survives a failure."""
    _KEPT.append(Path(out))


def _stop_displays() -> None:
    while _STOPPERS:
        callback = _STOPPERS.pop()
        with contextlib.suppress(Exception):  # a display that cannot stop must not hide it
            callback()


class GuardedGroup(TyperGroup):
    """The evalstress click group: interrupts and storage errors end a command in one line."""

    def invoke(self, ctx: Any) -> Any:
        interrupts.install()
        _KEPT.clear()
        _DEBUG.clear()
        err = FittedConsole(stderr=True)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _stop_displays()
            err.print(f"[yellow]{escape(interrupts.message())}[/]", soft_wrap=True)
            raise typer.Exit(interrupts.exit_code()) from None
        except Exception as exc:
            if _is_exit(exc):
                raise
            if interrupts.requested() is not None:  # e.g. a worker killed by the same signal
                _stop_displays()
                err.print(f"[yellow]{escape(interrupts.message())}[/]", soft_wrap=True)
                raise typer.Exit(interrupts.exit_code()) from None
            line = describe(exc)
            if line is None:
                _stop_displays()
                if debugging():  # the traceback quotes data too: its controls made visible
                    sys.stderr.write(visible_controls(traceback.format_exc()))
                err.print(f"[bold red]error:[/] {escape(unexpected_line(exc))}", soft_wrap=True)
                raise typer.Exit(EXIT_UNEXPECTED) from None
            _stop_displays()
            kept = "".join(f"; {out} keeps its previous contents" if out.exists()
                           else f"; nothing was written to {out}" for out in _KEPT)
            err.print(f"[bold red]error:[/] {escape(redact(line))}{escape(kept)}",
                      soft_wrap=True)
            raise typer.Exit(2) from None


def unexpected_line(exc: BaseException) -> str:
    """One line for an exception nobody expected: its kind, its message (keys redacted, cut to
    300 characters) and how to see the traceback."""
    message = " ".join(redact(str(exc)).split())
    message = message if len(message) <= 300 else message[:297] + "..."
    where = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return (f"unexpected {where} (a bug in evalstress or a plugin; run again with --debug "
            "for the traceback, and please report it)")


def _is_exit(exc: BaseException) -> bool:
    """typer's Exit and Abort and click's usage errors (typer vendors click: matched by name)."""
    return any(cls.__name__ in ("Exit", "Abort", "ClickException") for cls in type(exc).__mro__)


__all__ = ["EXIT_UNEXPECTED", "GuardedGroup", "debug_on", "debugging", "keeps", "on_stop",
           "unexpected_line"]
