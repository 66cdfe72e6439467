"""Progress where nobody watches a terminal: a log gets a plain line at each phase's start and
end and at most one per interval between; a terminal keeps rich's bars; --quiet gets nothing."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from evalstress.core.bars import (
    INTERVAL_ENV,
    PROGRESS_INTERVAL_S,
    PlainLines,
    RichBars,
    progress_for,
    progress_interval,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_log_gets_start_rate_eta_and_end_lines_by_a_fake_clock() -> None:
    stream, clock = io.StringIO(), FakeClock()
    lines = PlainLines(stream, interval=30, clock=clock, heartbeat=False)
    lines.start("scoring judge", 100)
    clock.now = 10
    lines.advance("scoring judge", 10)  # 10 s after the start line: too soon for another
    clock.now = 31
    lines.advance("scoring judge", 20)
    clock.now = 40
    lines.advance("scoring judge", 30)  # 9 s after the last line
    clock.now = 70
    lines.advance("scoring judge", 40)
    lines.finish("scoring judge")
    # 30 done in 31 s: 0.968/s; 70 left / 0.968 = 72.3 s. 100 in 70 s: 1.43/s.
    assert _lines(stream) == [
        "scoring judge: 0/100 (0%)",
        "scoring judge: 30/100 (30%), 0.97 requests/s, ETA 01:12",
        "scoring judge: 100/100 (100%), 1.43 requests/s, took 01:10",
    ]


def test_a_log_gets_at_most_one_line_per_interval_besides_start_and_end() -> None:
    stream, clock = io.StringIO(), FakeClock()
    lines = PlainLines(stream, interval=30, clock=clock, heartbeat=False)
    lines.start("examples", 600)
    for second in range(1, 601):  # one text a second for ten minutes
        clock.now = second
        lines.advance("examples")
    lines.finish("examples")
    said = _lines(stream)
    # the start, then seconds 30, 60, ..., 570 (at 600 all is done: the end line says it)
    assert len(said) == 1 + 19 + 1
    assert said[1] == "examples: 30/600 (5%), 1.00 texts/s, ETA 09:30"
    assert said[-1] == "examples: 600/600 (100%), 1.00 texts/s, took 10:00"


def test_slow_work_still_writes_a_line_each_interval_and_nothing_after_its_end() -> None:
    stream = io.StringIO()
    lines = PlainLines(stream, interval=0.05)
    lines.start("generating", 4)  # and no answer comes back for a while
    time.sleep(0.4)
    lines.advance("generating", 4)
    lines.finish("generating")
    said = _lines(stream)
    assert said[0] == "generating: 0/4 (0%)"
    assert said.count("generating: 0/4 (0%)") >= 2, said  # the start and a heartbeat or more
    assert said[-1].startswith("generating: 4/4 (100%), ")
    time.sleep(0.2)
    assert _lines(stream) == said


def test_a_terminal_keeps_the_rich_bar_and_gets_no_plain_lines() -> None:
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    bars = progress_for(terminal)
    assert isinstance(bars, RichBars)
    bars.start("examples", 3)
    bars.advance("examples", 3)
    bars.finish("examples")
    assert "examples: " not in screen.getvalue()


def test_a_log_gets_plain_lines_from_the_factory() -> None:
    log = io.StringIO()
    bars = progress_for(Console(file=log, force_terminal=False))
    bars.start("perturbing", 2)
    bars.advance("perturbing", 2)
    bars.finish("perturbing")
    bars.stop()
    said = _lines(log)
    assert said[0] == "perturbing: 0/2 (0%)"
    assert said[-1].startswith("perturbing: 2/2 (100%), ")


@pytest.mark.parametrize("terminal", [True, False])
def test_quiet_writes_nothing_on_a_terminal_or_a_log(terminal: bool) -> None:
    stream = io.StringIO()
    bars = progress_for(Console(file=stream, force_terminal=terminal), enabled=False)
    bars.start("examples", 3)
    bars.advance("examples", 3)
    bars.finish("examples")
    assert stream.getvalue() == ""


def test_the_interval_is_thirty_seconds_unless_the_environment_says_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    assert progress_interval() == PROGRESS_INTERVAL_S == 30.0
    monkeypatch.setenv(INTERVAL_ENV, "0.5")
    assert progress_interval() == 0.5


@pytest.mark.parametrize("bad", ["abc", "0", "-2", "nan", "inf", "30s"])
def test_a_bad_interval_is_an_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                        bad: str) -> None:
    monkeypatch.setenv(INTERVAL_ENV, bad)
    with pytest.raises(ValueError, match=f"{INTERVAL_ENV}='{bad}': give the seconds"):
        progress_interval()
    with pytest.raises(ValueError, match=INTERVAL_ENV):
        progress_for(Console(file=io.StringIO()))


def test_a_jupyter_cell_keeps_the_rich_bar() -> None:
    """Rich says a notebook cell is no terminal; its bars still draw there (stress() in Jupyter)."""
    cell = Console(file=io.StringIO(), force_jupyter=True)
    assert not cell.is_terminal
    assert isinstance(progress_for(cell), RichBars)


def test_a_phase_that_has_not_moved_is_not_repeated_while_another_moves() -> None:
    """A card's log showed `examples: 0/8 (0%)` a line each interval for half an hour while
    the judge's scoring moved: the examples of a chunk count at its end."""
    stream, clock = io.StringIO(), FakeClock()
    lines = PlainLines(stream, interval=30, clock=clock, heartbeat=False)
    lines.start("examples", 8)
    lines.start("scoring judge", 100)
    for second in (31, 62, 93):
        clock.now = second
        lines.advance("scoring judge", 10)
    clock.now = 124
    lines.advance("scoring judge", 0)  # nothing moved since: both are said, as a heartbeat
    assert _lines(stream) == [
        "examples: 0/8 (0%)",
        "scoring judge: 0/100 (0%)",
        "scoring judge: 10/100 (10%), 0.32 requests/s, ETA 04:39",
        "scoring judge: 20/100 (20%), 0.32 requests/s, ETA 04:08",
        "scoring judge: 30/100 (30%), 0.32 requests/s, ETA 03:37",
        "examples: 0/8 (0%)",
        "scoring judge: 30/100 (30%), 0.24 requests/s, ETA 04:49",
    ]
