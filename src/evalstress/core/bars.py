"""Progress for the runner's long phases, shared by the command line and notebooks: rich bars
where a person watches a terminal, plain lines where stderr is a log (CI, nohup, `2> log`)."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bars

from evalstress.core.consoles import visible_controls
from evalstress.core.records import Progress

#: seconds between two plain progress lines of one phase (besides its start and end lines);
#: EVALSTRESS_PROGRESS_INTERVAL changes it (a log that wants more or fewer lines, tests)
PROGRESS_INTERVAL_S = 30.0
INTERVAL_ENV = "EVALSTRESS_PROGRESS_INTERVAL"

#: what a phase counts, by the first word of its label; a phase not named here counts items
PHASE_UNITS = {"examples": "texts", "perturbing": "texts", "scoring": "requests",
               "generating": "requests", "attacking": "texts", "ray": "shards"}


def progress_interval() -> float:
    """PROGRESS_INTERVAL_S, or the seconds $EVALSTRESS_PROGRESS_INTERVAL gives; a value that is
    not a positive, finite number is an error (never quietly the default)."""
    given = os.environ.get(INTERVAL_ENV, "").strip()
    if not given:
        return PROGRESS_INTERVAL_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{INTERVAL_ENV}={given!r}: give the seconds between two progress "
                         "lines as a positive number, e.g. 30 or 0.5")
    return seconds


def clock_time(seconds: float) -> str:
    """`mm:ss` (`h:mm:ss` from an hour on), for elapsed times and ETAs."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


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


@dataclass
class _Phase:
    total: int
    began: float
    said: float  # when its last line was written
    done: int = 0
    said_done: int = 0  # its count on that line


class PlainLines(Progress):
    """A line per phase at its start and end, and one at most every `interval` seconds between
    (`<phase>: <done>/<total> (<pct>%), <rate> <unit>/s, ETA <mm:ss>`), for a stream that is a
    log rather than a terminal. With `heartbeat`, a background thread writes the line of a
    phase whose work is slow to report (a judge's long batch), so a log never goes quiet for
    more than about an interval; `clock` is there for tests."""

    def __init__(self, stream: IO[str], interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic, heartbeat: bool = True):
        self.stream = stream
        self.interval = progress_interval() if interval is None else interval
        self.clock = clock
        self.heartbeat = heartbeat
        self._phases: dict[str, _Phase] = {}
        self._lock = threading.Lock()
        self._quiet = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, label: str, total: int) -> None:
        with self._lock:
            now = self.clock()
            phase = self._phases[label] = _Phase(total=total, began=now, said=now)
            self._write(label, phase, now)
            if self.heartbeat and (self._thread is None or not self._thread.is_alive()):
                self._quiet.clear()
                self._thread = threading.Thread(target=self._beat, daemon=True,
                                                name="evalstress-progress")
                self._thread.start()

    def advance(self, label: str, amount: int = 1) -> None:
        with self._lock:
            phase = self._phases.get(label)
            if phase is not None:
                phase.done += amount
                self._say_due(self.clock())

    def finish(self, label: str) -> None:
        with self._lock:
            phase = self._phases.pop(label, None)
            if phase is not None:
                self._write(label, phase, self.clock(), ended=True)
            if not self._phases:
                self._quiet.set()

    def stop(self) -> None:
        """End the heartbeat (also on an interrupt); a phase left open writes no end line."""
        with self._lock:
            self._phases.clear()
            self._quiet.set()

    def _beat(self) -> None:
        while not self._quiet.wait(self.interval):
            with self._lock:
                self._say_due(self.clock())

    def _say_due(self, now: float) -> None:
        """Each phase's line whose interval has passed; a phase that has counted all its work
        waits for its end line. A phase whose count has not moved since its last line is not
        said again while another's has (a chunk's examples count at its end, while its
        scoring moves): the moving line shows the work goes on; when none moved, each is said
        again, so the log never goes quiet."""
        due = [(label, phase) for label, phase in self._phases.items()
               if phase.done != phase.total and now - phase.said >= self.interval]
        moved = [(label, phase) for label, phase in due if phase.done != phase.said_done]
        for label, phase in moved or due:
            self._write(label, phase, now)

    def _write(self, label: str, phase: _Phase, now: float, ended: bool = False) -> None:
        phase.said, phase.said_done = now, phase.done
        self.stream.write(progress_line(label, phase.done, phase.total, now - phase.began,
                                        ended=ended) + "\n")
        self.stream.flush()


def rate_text(rate: float) -> str:
    """A rate with the digits that matter: 1234, 56.7, 0.89."""
    return f"{rate:.0f}" if rate >= 100 else f"{rate:.1f}" if rate >= 10 else f"{rate:.2f}"


def progress_line(label: str, done: int, total: int, elapsed: float, ended: bool = False) -> str:
    """One plain progress line; the rate once something is done in measurable time, the ETA
    while work remains, the time taken at the end."""
    pct = 100 * done // total if total > 0 else 100
    line = f"{visible_controls(label)}: {done}/{total} ({pct}%)"
    if done > 0 and elapsed > 0:
        rate = done / elapsed
        unit = PHASE_UNITS.get(label.split(" ", 1)[0], "items")
        line += f", {rate_text(rate)} {unit}/s"
        if not ended and done < total:
            line += f", ETA {clock_time((total - done) / rate)}"
    if ended:
        line += f", took {clock_time(elapsed)}"
    return line


def progress_for(console: Console, enabled: bool = True) -> RichBars | PlainLines:
    """Rich bars when `console` is a terminal or a Jupyter output cell, plain lines on its stream
    otherwise; nothing when not `enabled` (`--quiet`). A bad $EVALSTRESS_PROGRESS_INTERVAL is a
    ValueError either way."""
    interval = progress_interval()
    if enabled and not (console.is_terminal or console.is_jupyter):
        return PlainLines(console.file, interval=interval)
    return RichBars(console=console, enabled=enabled)
