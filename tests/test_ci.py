"""CI runs every test: what the default `python -m pytest` deselects is a step of .ci/run.

The README's test command stays within minutes by deselecting the long tests (pyproject's
`addopts`); a marker deselected there and not run by .ci/run would be tests nobody runs."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def deselected_markers(addopts: str) -> list[str]:
    """The markers of `-m 'not a and not b'` in an addopts string."""
    words = shlex.split(addopts)
    expression = words[words.index("-m") + 1] if "-m" in words else ""
    return re.findall(r"\bnot\s+(\w+)", expression)


def ci_steps() -> list[list[str]]:
    """The commands .ci/run runs, a word list each (`a && b` gives two)."""
    steps = []
    for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            steps += [shlex.split(part) for part in line.split("&&")]
    return steps


def test_deselected_markers_are_read_from_an_addopts_string() -> None:
    assert deselected_markers("-ra -m 'not docs_commands and not long_run'") == [
        "docs_commands", "long_run"]
    assert deselected_markers("-ra --strict-markers") == []


def test_every_marker_the_default_run_deselects_is_a_step_of_ci() -> None:
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["pytest"]["ini_options"]["addopts"]
    markers = deselected_markers(addopts)
    assert markers, "the default run deselects nothing: then this test has nothing to check"
    steps = ci_steps()
    for marker in markers:
        assert any(step[:3] == ["python", "-m", "pytest"] and "-m" in step[3:]
                   and step[step.index("-m", 3) + 1] == marker for step in steps), (
            f"tests marked {marker} are deselected by default and .ci/run never runs them")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "bash scripts/setup.sh && python -m pytest"
    assert f"\n{command}\n" in readme
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
