"""One declaration per shared option: a name that several commands take comes from
`evalstress.cli.options`, so its help reads the same under every command that means the same
thing by it."""

from __future__ import annotations

import inspect
import typing
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import typer
from typer.models import ArgumentInfo, OptionInfo
from typer.testing import CliRunner

from evalstress.cli import app, options

runner = CliRunner()


def _commands(group: typer.Typer, path: str = "") -> Iterator[tuple[str, Callable[..., Any]]]:
    """(command name, its function) for every command of `group` and its subgroups."""
    for info in group.registered_commands:
        assert info.callback is not None
        yield f"{path}{info.name or info.callback.__name__}", info.callback
    for sub in group.registered_groups:
        assert sub.typer_instance is not None
        yield from _commands(sub.typer_instance, f"{path}{sub.name} ")


def _declarations(function: Callable[..., Any]) -> dict[str, Any]:
    """Parameter name -> the typer OptionInfo/ArgumentInfo object its annotation carries."""
    hints = typing.get_type_hints(function, include_extras=True)
    found = {}
    for name in inspect.signature(function).parameters:
        for meta in getattr(hints.get(name), "__metadata__", ()):
            if isinstance(meta, OptionInfo | ArgumentInfo):
                found[name] = meta
    return found


def _shared() -> dict[int, str]:
    """id of each declaration in `evalstress.cli.options` -> its name there."""
    return {id(meta): name for name, value in vars(options).items()
            for meta in getattr(value, "__metadata__", ())
            if isinstance(meta, OptionInfo | ArgumentInfo)}


def _uses() -> dict[str, list[tuple[str, Any]]]:
    uses: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for command, function in _commands(app):
        for name, meta in _declarations(function).items():
            uses[name].append((command, meta))
    return uses


def test_an_option_several_commands_take_is_declared_once_in_the_options_module() -> None:
    shared = _shared()
    uses = _uses()
    assert len(uses["cache_dir"]) >= 10  # the walk sees every command, subgroups included
    declared_twice = sorted(
        f"--{name.rstrip('_').replace('_', '-')} of {command}"
        for name, found in uses.items() if len(found) > 1
        for command, meta in found if id(meta) not in shared)
    assert not declared_twice, ("declared in the command instead of evalstress.cli.options: "
                                + ", ".join(declared_twice))


def test_commands_that_mean_the_same_share_one_declaration() -> None:
    uses = _uses()
    for name in ("cache_dir", "no_cache", "quiet", "force", "map_", "limit", "seed", "workers",
                 "max_missing"):
        assert len({id(meta) for _, meta in uses[name]}) == 1, name
    # --out: a run directory, a card's folder or an HTML page; nothing else
    assert len({id(meta) for _, meta in uses["out"]}) == 3


def test_each_declaration_has_its_own_help_text() -> None:
    helps: dict[str, str] = {}
    for name, value in vars(options).items():
        for meta in getattr(value, "__metadata__", ()):
            if isinstance(meta, OptionInfo | ArgumentInfo):
                assert meta.help, name
                assert meta.help not in helps, f"{name} repeats {helps.get(meta.help)}"
                helps[meta.help] = name


def test_cache_dir_reads_the_same_under_every_command() -> None:
    """What a user sees: the help of --cache-dir under run, card, attack and cache stats."""
    seen = set()
    for command in (["run"], ["card"], ["attack"], ["cache", "stats"], ["correlate"]):
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        line = next(x for x in result.output.splitlines() if "--cache-dir" in x)
        seen.add(" ".join(line.replace("│", " ").split()[1:4]))
    assert len(seen) == 1, seen
