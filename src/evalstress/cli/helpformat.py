"""How help names values and wraps text.

Typer names an option's value after its Python type (`--map <list[str]>`, `--seeds <int
range>`); help reads better with the placeholders click and most tools use: `TEXT`, `N`,
`NUMBER`, `PATH`. And click's plain formatter breaks a word longer than its column mid-word
(`max_concu` / `rrency`) and breaks at any hyphen (`--variant-` / `map`); `WholeWordContext`
lays help out with breaks at spaces only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, get_args

import typer

from evalstress.core import consoles

#: the placeholder of an option's value, by the type of one value
PLACEHOLDERS: dict[Any, str] = {int: "N", float: "NUMBER", str: "TEXT", Path: "PATH"}


def placeholder(param: Any) -> str | None:
    """What help shows for the value of `param`: None keeps typer's own display (a flag, a
    choice, a tuple)."""
    if getattr(param, "is_flag", False):
        return None
    described = getattr(param, "type_descriptor", None)
    if described is None or described.is_choice or described.is_tuple:
        return None
    annotation = described.annotation
    if described.is_list:
        annotation = get_args(annotation)[0]
    if described.is_path:
        return "PATH"
    return PLACEHOLDERS.get(annotation)


def name_placeholders(group: Any) -> None:
    """Give every option of every command of `group` (subgroups included) its placeholder,
    and every argument its name in capitals (`RUN_DIR`, as the help texts write it; typer
    would show `{run_dir}`)."""
    for command in getattr(group, "commands", {}).values():
        if hasattr(command, "commands"):  # a group (typer vendors click: no isinstance)
            name_placeholders(command)
            continue
        for param in command.params:
            if param.metavar is not None:
                continue  # a metavar given stays
            if param.param_type_name == "argument":  # named as the help text names it
                param.metavar = (param.name or "").upper()
                continue
            shown = placeholder(param)
            if shown is not None:
                param.metavar = shown


def wrap_words(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken at spaces only (a word longer than
    the line stands alone on its line); paragraphs, split by blank lines, keep a blank line
    between them, and a paragraph that starts with click's no-rewrap mark `\\b` stays as written."""
    lines: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip("\n")):
        if lines:
            lines.append("")
        if paragraph.startswith("\b"):
            lines += paragraph.splitlines()[1:]
        else:
            lines += consoles.wrap_words(paragraph, max(width, 1))
    return lines


# the base is the formatter typer's own Context uses: click's, or the copy newer typer vendors
class WholeWordHelpFormatter(typer.Context.formatter_class):  # type: ignore[misc,valid-type]
    """click's help formatter with its two wrapping calls (definition lists, free text) made
    through `wrap_words`."""

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        for line in wrap_words(text, self.width - self.current_indent):
            self.write(f"{indent}{line}\n" if line else "\n")

    def write_dl(self, rows: Iterable[Sequence[str]], col_max: int = 30,
                 col_spacing: int = 2) -> None:
        rows = [(row[0], row[1] if len(row) > 1 else "") for row in rows]
        first_col = min(max((len(first) for first, _ in rows), default=0), col_max) + col_spacing
        margin = " " * (first_col + self.current_indent)
        for first, second in rows:
            self.write(f"{' ' * self.current_indent}{first}")
            if not second:
                self.write("\n")
                continue
            if len(first) <= first_col - col_spacing:
                self.write(" " * (first_col - len(first)))
            else:
                self.write(f"\n{margin}")
            lines = wrap_words(second, max(self.width - first_col - 2, 10)) or [""]
            self.write(f"{lines[0]}\n")
            for line in lines[1:]:
                self.write(f"{margin}{line}\n" if line else "\n")


class WholeWordContext(typer.Context):
    """A command's context whose plain help keeps words whole."""

    formatter_class = WholeWordHelpFormatter
