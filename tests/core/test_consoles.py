"""The width of evalstress' consoles: a file or a pipe gets $COLUMNS when set, else 100 (rich
alone gave 80, or another stream's terminal width); a terminal keeps its own."""

from __future__ import annotations

import pytest

from evalstress.core.consoles import PIPED_WIDTH, FittedConsole


@pytest.fixture
def piped(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
          ) -> pytest.CaptureFixture[str]:
    """Standard output is pytest's capture, a stream and no terminal, as a pipe is."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return capsys


def test_piped_output_is_100_wide_without_columns(piped: pytest.CaptureFixture[str]) -> None:
    console = FittedConsole()
    assert PIPED_WIDTH == 100 and console.width == 100
    console.print("x " * 70)
    # 70 times "x ": 50 fill a 100-column line (99 characters without the last space), 20 after
    lines = piped.readouterr().out.splitlines()
    assert [len(line.rstrip()) for line in lines] == [99, 39]


def test_piped_output_follows_columns_set_after_the_console_was_made(
        piped: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    console = FittedConsole()
    monkeypatch.setenv("COLUMNS", "80")
    assert console.width == 80
    monkeypatch.setenv("COLUMNS", "wide")  # not a width: the default, not an error mid-print
    assert console.width == 100


def test_a_width_set_on_the_console_wins(piped: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    console = FittedConsole()
    monkeypatch.setenv("COLUMNS", "80")
    console.width = 60
    assert console.width == 60


def test_a_terminal_keeps_its_measured_width(piped: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: the stream is a terminal
    monkeypatch.setenv("COLUMNS", "132")
    assert FittedConsole().width == 132
