"""The consoles evalstress prints through, laid out for where their text goes.

Rich alone lays piped output out at the width of whichever standard stream is a terminal, else
80 columns, and a width fixed when the console is made ignores a $COLUMNS set later. Here the
width is decided at each print: a terminal's own width (or $COLUMNS), and for a file or a pipe
$COLUMNS when set, else PIPED_WIDTH.

Text from the data (ids, tasks, labels, a server's error) may hold control characters: an
escape sequence that retitles the window or clears the screen, a bell, a bidi override that
shows a text reversed. A console here writes each of them as its escape (`\\x1b`, `\\u202e`)
instead, whatever printed it; `visible_controls` does the same for text written elsewhere."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.segment import Segment
from rich.text import Text

#: columns of output that goes to a file or a pipe when $COLUMNS does not give a width
PIPED_WIDTH = 100


#: what a terminal acts on instead of showing: C0 controls but tab and line feed, DEL, C1
#: controls, and Unicode's bidi embeddings, overrides and isolates
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_controls(text: str) -> str:
    """`text` with each control character a terminal would act on written as its escape
    (`\\x1b`, `\\x07`, `\\u202e`); tabs and line feeds stay."""
    return _CONTROLS.sub(_escape, text)


def columns_setting() -> int | None:
    """The width $COLUMNS gives, or None when it is unset or not a positive whole number."""
    given = os.environ.get("COLUMNS", "").strip()
    return int(given) if given.isdigit() and int(given) > 0 else None


class FittedConsole(Console):
    """A rich console whose width follows where its text goes (see the module docstring); a
    width set on it (`console.width = 80`) wins over both."""

    def __init__(self, *, stderr: bool = False) -> None:
        super().__init__(stderr=stderr)
        self.fixed_width: int | None = None

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        if self.fixed_width is not None:
            return ConsoleDimensions(self.fixed_width, measured.height)
        if self.is_terminal or self.is_jupyter:
            return measured
        return ConsoleDimensions(columns_setting() or PIPED_WIDTH, measured.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        width, height = new_size
        self.fixed_width = width
        self.height = height

    @property
    def width(self) -> int:
        return self.size.width

    @width.setter
    def width(self, width: int) -> None:
        self.fixed_width = width

    def render_str(self, text: str, **options: Any) -> Text:
        """A str printed (or put in a table) with its control characters made visible first, so
        the layout measures the escapes it will show."""
        return super().render_str(visible_controls(text), **options)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        """What rich writes, with the control characters of its text made visible; rich's own
        control segments (cursor moves of live displays) pass as they are."""
        return super()._render_buffer(
            segment if segment.control else segment._replace(text=visible_controls(segment.text))
            for segment in buffer)


def wrap_words(text: str, width: int, *, hang: int = 0, lead: int = 0) -> list[str]:
    """`text` broken into lines of at most `width` cells, between words only: a word longer
    than a line (a path, a URL) stays whole on a line of its own, so it can still be copied.
    Lines after the first start with `hang` spaces; the first line's room is `lead` cells
    shorter (a prefix printed before it; a first word that does not fit beside it goes to
    the second line, the first then empty). Runs of white space, line feeds included, are one
    space."""
    from rich.cells import cell_len

    lines: list[str] = []
    line, used = "", lead
    for word in text.split():
        size = cell_len(word)
        if (line and used + 1 + size > width) or (not lines and not line and lead
                                                  and lead + size > width):
            lines.append(line)  # after a prefix, a word too long for its line starts the next
            line, used = " " * hang + word, hang + size
        else:
            line, used = (f"{line} {word}", used + 1 + size) if line else (word, used + size)
    return [*lines, line] if line else lines


def print_wrapped(console: Console, text: str, *, hang: int = 0, lead: str = "",
                  lead_style: str = "", style: str = "") -> None:
    """Print `text` as wide as `console` (`wrap_words`; each line feed starts a new line), its
    control characters made visible first; `lead` (a label such as "warning:" or "1.") comes
    before the first line in `lead_style`, and the text is never read as markup."""
    from rich.cells import cell_len

    room = cell_len(lead) + 1 if lead else 0
    lines = [part for number, paragraph in enumerate(visible_controls(text).split("\n"))
             for part in wrap_words(paragraph, console.width, hang=hang,
                                    lead=room if number == 0 else 0) or [""]]
    for number, line in enumerate(lines):
        row = Text(line, style=style)
        if number == 0 and lead:
            row = Text.assemble((lead, lead_style), " ", row)
        console.print(row, soft_wrap=True, highlight=False)
