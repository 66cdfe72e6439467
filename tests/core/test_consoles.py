"""The width of evalstress' consoles: a file or a pipe gets $COLUMNS when set, else 100 (rich
alone gave 80, or another stream's terminal width); a terminal keeps its own. Control
characters of the data reach no terminal: they print as their escapes."""

from __future__ import annotations

import re

import pytest
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from evalstress.core.bars import progress_line
from evalstress.core.consoles import (
    PIPED_WIDTH,
    FittedConsole,
    print_wrapped,
    visible_controls,
    wrap_words,
)


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


#: a window title, a bell, a cleared screen, a C1 escape and a right-to-left override
HOSTILE = "id\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def test_control_characters_print_as_their_escapes_however_printed(
        piped: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # a terminal with colours: rich's own codes pass
    monkeypatch.setenv("FORCE_COLOR", "1")
    console = FittedConsole()
    table = Table("example")
    table.add_row(HOSTILE)
    shown = "id\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil"
    for printed in (HOSTILE, Text(HOSTILE), table, f"[red]{escape(HOSTILE)}[/]"):
        console.print(printed, markup=isinstance(printed, str) and printed.startswith("[red]"),
                      highlight=False)
        out = piped.readouterr().out
        without_colours = re.sub("\x1b\\[[0-9;]*m", "", out)  # rich's own colours
        assert not any(raw in without_colours for raw in RAW), repr(out)
        # a Text drops a bell itself (rich); the rest shows as escapes
        assert (shown.replace("\\x07", "") if isinstance(printed, Text) else shown) in out
    console.print(table)
    assert "\u2502 " + shown + " \u2502" in piped.readouterr().out  # measured as shown


def test_visible_controls_keeps_tabs_and_line_breaks_and_plain_text() -> None:
    assert visible_controls("a\tb\nc é 中 \u200b") == "a\tb\nc é 中 \u200b"
    assert visible_controls("\x00\x7f\x85\u2066\u2069\r") == "\\x00\\x7f\\x85\\u2066\\u2069\\x0d"
    assert progress_line("scoring " + HOSTILE, 1, 2, 0.0).startswith(
        "scoring id\\x1b]0;pwned\\x07")


def test_wrap_words_breaks_between_words_and_keeps_a_long_word_whole() -> None:
    text = "one two three /a/path/longer/than/the/line four"
    # by hand: width 12, later lines indented 2, the first 3 cells shorter ("1. " before it)
    assert wrap_words(text, 12, hang=2, lead=3) == [
        "one two", "  three", "  /a/path/longer/than/the/line", "  four"]
    assert wrap_words("a  b\n c", 80) == ["a b c"]
    assert wrap_words("", 10) == []
    # a first word too long beside its prefix starts the second line
    assert wrap_words("/a/long/path", 10, hang=2, lead=6) == ["", "  /a/long/path"]
    # wide characters count as the two cells a terminal gives them
    assert wrap_words("日本語 日本語", 10) == ["日本語", "日本語"]


def test_print_wrapped_fits_the_console_and_shows_controls(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    console = FittedConsole()
    console.width = 20
    print_wrapped(console, "alpha beta gamma delta \x1b[2J epsilon", lead="note:", hang=2)
    assert capsys.readouterr().out.splitlines() == [
        "note: alpha beta", "  gamma delta", "  \\x1b[2J epsilon"]
