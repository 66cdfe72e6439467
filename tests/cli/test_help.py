"""Help is readable in an 80-column terminal: every command's options keep a description column
at least 30 characters wide, lines fit the terminal, and no help text is lost to the layout."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from evalstress.cli import app

runner = CliRunner()


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            out += _commands(command, (*path, name))
        else:
            out.append(((*path, name), command))
    return out


COMMANDS = _commands(typer.main.get_command(app))


def _squeezed(text: str) -> str:
    return "".join(text.replace("│", " ").split())


def _description_column(lines: list[str], option: str, first_word: str) -> int | None:
    """Where the help of `option` starts: on the option's line, or the next one."""
    start = next(i for i, line in enumerate(lines) if "Options" in line)
    for i, line in enumerate(lines[start:], start):
        words = line.replace("│", " ").replace(",", " ").split()
        indent = len(line) - len(line.lstrip(" │"))
        if (option not in words[:2] or (words[0] != option and not words[0].startswith("-"))
                or indent > 4):
            continue  # not the option's own row (an example, or another option's help)
        found = line.find(f" {first_word}", line.find(option) + len(option))
        if found < 0 and i + 1 < len(lines):  # a long option name: its help on the next line
            line = lines[i + 1]
            found = line.find(f" {first_word}")
        return found + 1 if found >= 0 else None
    return None


def test_run_help_at_80_columns_has_a_wide_description_column() -> None:
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.output.splitlines()
    column = _description_column(lines, "--map", "Field")
    assert column is not None and 80 - column >= 30, result.output
    described = [line[column:].replace("│", " ").strip() for line in lines
                 if len(line) > column and not line[:column].replace("│", " ").strip()]
    # lines that continue a description: most carry several words, and they fill the column
    assert sum(len(text.split()) > 1 for text in described) >= 0.8 * len(described)
    assert sum(map(len, described)) / len(described) >= 30, result.output


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_help_fits_80_columns_and_keeps_its_text(path: tuple[str, ...],
                                                               command: Any) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    shown = _squeezed(result.output)
    for param in command.params:
        text = getattr(param, "help", None)
        if not text or getattr(param, "hidden", False):
            continue
        assert _squeezed(text) in shown, (param.name, text)  # the whole help, not cut short
        option = next((o for o in param.opts if o.startswith("--")), None)
        if option is None:
            continue
        column = _description_column(lines, option, text.split()[0])
        assert column is not None and 80 - column >= 30, (option, result.output)


def _options_section(output: str) -> list[str]:
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Options")), len(lines))
    return lines[start:]


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_at_80_columns_breaks_lines_between_words_only(path: tuple[str, ...],
                                                            command: Any) -> None:
    """Every word of every option's help is printed whole: never cut where the column ends
    (`max_concu` / `rrency`) nor after a hyphen (`--variant-` / `map`)."""
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    printed = set(result.output.split())
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        cut = [word for word in (getattr(param, "help", None) or "").split()
               if word not in printed]
        assert not cut, (param.name, cut, result.output)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_option_values_read_as_placeholders(path: tuple[str, ...], command: Any) -> None:
    """A value is TEXT, N, NUMBER or PATH (or a command's own name for it), not a Python type
    such as <list[str]> or <int range>; an off-by-default switch is one flag, not
    `--no-cache / --no-no-cache [default: no-no-cache]`."""
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    options = "\n".join(_options_section(result.output))
    for python_type in ("<list[", "range>", "<int>", "<float>", "<str>", "<path>", "--no-no-"):
        assert python_type not in options, (python_type, result.output)


def test_run_help_names_its_values() -> None:
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "80"})
    rows = {line.strip().split("  ")[0] for line in _options_section(result.output)}
    assert {"-m, --map TEXT", "--seeds N", "--limit N", "--rel-tol NUMBER", "--out PATH",
            "--no-cache"} <= rows, result.output


@pytest.mark.parametrize(("command", "usage", "listed"), [
    ("report", "report [OPTIONS] {RUN_DIR}", "RUN_DIR"),
    ("data", "data [OPTIONS] [FOLDER]", "FOLDER")])
def test_an_argument_is_named_in_capitals_as_its_help_names_it(command: str, usage: str,
                                                                 listed: str) -> None:
    """`Copy the example data files into FOLDER` reads against `FOLDER`, not `folder`."""
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert usage in result.output
    assert any(line.split()[:1] == [listed] for line in result.output.splitlines())
    assert f"{listed.lower()} <" not in result.output  # typer's own: `folder <path>`


def test_card_help_names_the_page_to_open() -> None:
    result = runner.invoke(app, ["card", "--help"], env={"COLUMNS": "100"})
    assert "Writes card.html (the page to open), card.md and card.json" in " ".join(
        result.output.split())
