"""How every command ends when the run cannot go on: a signal, a full disk, a read-only folder.

`GuardedGroup` is the command line's click group. Around each command it turns

- a Ctrl-C or SIGTERM (`KeyboardInterrupt`, or any error while stopping on a signal) into the
  resume message of `evalstress.core.interrupts` and exit 130 / 143;
- a storage error (disk full, read-only, permission; see `evalstress.core.storage`) into one line
  naming the path and why, and exit 2, saying which run directory kept its previous contents.

Live displays (progress bars) register a stop callback, so an interrupted command leaves the
terminal as it found it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from evalstress.core import interrupts
from evalstress.core.redact import redact
from evalstress.core.storage import describe

_STOPPERS: list[Callable[[], None]] = []
_KEPT: list[Path] = []


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
        err = Console(stderr=True)
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
                raise
            _stop_displays()
            kept = "".join(f"; {out} keeps its previous contents" for out in _KEPT
                           if out.exists())
            err.print(f"[bold red]error:[/] {escape(redact(line))}{escape(kept)}",
                      soft_wrap=True)
            raise typer.Exit(2) from None


def _is_exit(exc: BaseException) -> bool:
    """typer's Exit and Abort and click's usage errors (typer vendors click: matched by name)."""
    return any(cls.__name__ in ("Exit", "Abort", "ClickException") for cls in type(exc).__mro__)


__all__ = ["GuardedGroup", "keeps", "on_stop"]
