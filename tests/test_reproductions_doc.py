"""docs/reproductions.md stays runnable: every `evalstress ...` command on the page parses with
today's command line (options, types, required arguments), names registered evaluators and
perturbations and loadable suites, and the page keeps at least 12 findings with both numbers."""

from __future__ import annotations

import inspect
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.exceptions import TyperException

from evalstress.analyses.confusion import criteria_confusion
from evalstress.cli import app
from evalstress.cli.criteria_levels import level_specs
from evalstress.criteria import LEVELS
from evalstress.evaluators.base import parse_spec
from evalstress.evaluators.base import registry as evaluator_registry
from evalstress.perturb.base import registry as perturbation_registry
from evalstress.suites import load_suite

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reproductions.md"


def page_commands(text: str) -> list[str]:
    """`evalstress` command lines of the page's fenced code blocks (continuations joined)."""
    commands = []
    for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("evalstress "):
                commands.append(line)
    return commands


def parse_command(line: str) -> tuple[str, Any]:
    """Parse one command line as the CLI would (options, types, required arguments), without
    running it: walk the command groups by name, then build the command's context."""
    args = shlex.split(line)[1:]
    command: Any = typer.main.get_command(app)
    path = []
    while getattr(command, "commands", None):
        assert args, f"{line}: no subcommand"
        name = args.pop(0)
        assert name in command.commands, f"{line}: no command '{name}'"
        path.append(name)
        command = command.commands[name]
    return " ".join(path), command.make_context(" ".join(path), args)


def check_values(line: str, ctx: Any) -> None:
    """What parsing cannot see: evaluator, perturbation and suite names must exist."""
    params = ctx.params
    for spec in params.get("evaluators") or []:
        assert parse_spec(spec)[0] in evaluator_registry(), f"{line}: evaluator {spec}"
    for name in params.get("perturbations") or []:
        assert name in perturbation_registry(), f"{line}: perturbation {name}"
    suite = params.get("suite")
    if suite:
        path = ROOT / suite if suite.endswith(".yaml") else None
        load_suite(path if path is not None else suite)
    if params.get("judge"):  # --levels left out: the settings model's default, every level
        level_specs(params["judge"], (params.get("levels") or ",".join(LEVELS)).split(","))


COMMANDS = page_commands(PAGE.read_text(encoding="utf-8"))


def test_every_run_section_shows_its_command() -> None:
    text = PAGE.read_text(encoding="utf-8")
    sections = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    runs = [s for s in sections if re.match(r"R\d+:", s)]
    assert len(runs) >= 6
    for section in runs:
        assert page_commands(section), section.splitlines()[0]
    linked = set(re.findall(r"\]\(#(r\d+)-", text))
    assert linked == {s.split(":")[0].lower() for s in runs}  # every run is used, none missing


@pytest.mark.parametrize("line", COMMANDS)
def test_each_command_parses(line: str) -> None:
    _, ctx = parse_command(line)
    check_values(line, ctx)


def test_a_broken_command_is_caught() -> None:
    with pytest.raises(TyperException, match="No such option"):
        parse_command("evalstress run data.jsonl --no-such-option")
    with pytest.raises(AssertionError):
        check_values("x", parse_command("evalstress run d.jsonl -p truncaton")[1])


def test_at_least_twelve_findings_each_with_both_numbers() -> None:
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("<!-- findings -->", 2)[1]
    rows = [r for r in table.splitlines()
            if r.startswith("| ") and not r.startswith(("| #", "| ---"))]
    findings = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    assert len(findings) >= 12
    for cells in findings:
        paper, ours = cells[2], cells[3]
        assert re.search(r"\d", paper) and re.search(r"\d", ours), cells[:4]


def _row(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_paper_000_rows_say_what_is_ours_and_give_the_tests_thresholds() -> None:
    text = PAGE.read_text(encoding="utf-8")
    criteria = _row(text, "| criteria at five levels of detail")
    assert "written for this project" in criteria
    for level in ("default", "simplified", "term", "detailed", "list"):
        assert level in LEVELS and level in criteria
    verdicts = _row(text, "| what counts as a pass")
    assert "Wilcoxon tests we added" in verdicts
    defaults = inspect.signature(criteria_confusion).parameters
    alpha, effect = defaults["alpha"].default, defaults["min_effect"].default
    assert verdicts.count(f"p < {alpha:g}") == 2 and verdicts.count(f"at least {effect:g}") == 2
