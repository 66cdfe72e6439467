"""Rich progress bars for the runner's long phases, shared by the command line and notebooks."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bars

from evalstress.core.records import Progress


class RichBars(Progress):
    """One transient bar per phase (parse, score per evaluator, ...), drawn by rich in a terminal
    or a Jupyter output cell; `enabled=False` draws nothing."""

    def __init__(self, console: Console | None = None, enabled: bool = True):
        self.enabled = enabled
        self._bars = Bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=console, transient=True,
                          disable=not enabled)
        self._tasks: dict[str, Any] = {}

    def stop(self) -> None:
        """Leave the terminal as it was (also on an interrupt)."""
        self._bars.stop()

    def start(self, label: str, total: int) -> None:
        if not self._tasks:
            self._bars.start()
        self._tasks[label] = self._bars.add_task(label, total=total)

    def advance(self, label: str, amount: int = 1) -> None:
        if label in self._tasks:
            self._bars.advance(self._tasks[label], amount)

    def finish(self, label: str) -> None:
        task = self._tasks.pop(label, None)
        if task is not None:
            self._bars.remove_task(task)
        if not self._tasks:
            self._bars.stop()
