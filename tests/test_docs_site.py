"""The documentation site builds offline with `mkdocs build --strict` (every page in the nav,
every link and snippet resolving, the API reference from docstrings, the CLI reference from the
typer app), and every `evalstress` command on any page parses with today's command line."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from evalstress.core.strict import check_names
from evalstress.evaluators.base import EVALUATORS, accepted_params, parse_spec
from evalstress.studies.attack.scoring import split_victim_spec
from tests.test_reproductions_doc import check_values, parse_command

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))


def site_commands(text: str) -> list[str]:
    """`evalstress` commands of a page's shell code blocks (fences tracked line by line, so a
    yaml or text block never pairs with the next one), also those after `&&` on a line
    (`pip install -e . && evalstress quickstart`); backslash continuations joined, a trailing
    comment left out."""
    commands, language = [], None
    for line in text.replace("\\\n", " ").splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            language = None if language is not None else (stripped[3:].strip() or "text")
            continue
        if language in ("bash", "sh", "console", "shell"):
            commands += [shlex.join(shlex.split(part, comments=True))
                         for part in stripped.split("&&")
                         if part.strip().startswith("evalstress ")]
    return commands


COMMANDS = [(page.relative_to(ROOT).as_posix(), line) for page in PAGES
            for line in site_commands(page.read_text("utf-8"))]


def _hook():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks" /
                                                  "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_shows_commands_of_every_kind() -> None:
    pages = {page for page, _ in COMMANDS}
    for needed in ("docs/index.md", "docs/judges.md", "docs/methods/blind-spots.md",
                   "docs/methods/criteria-confusion.md", "docs/methods/discernment.md",
                   "docs/methods/adversarial.md", "docs/suites.md"):
        assert needed in pages, needed


@pytest.mark.parametrize(("page", "line"), COMMANDS, ids=[f"{p}:{i}" for i, (p, _) in
                                                          enumerate(COMMANDS)])
def test_every_command_on_the_site_parses(page: str, line: str) -> None:
    _, ctx = parse_command(line)
    check_values(line, ctx)
    # and every evaluator spec names keys its evaluator takes (a typo would fail at run time)
    params = ctx.params

    def given(name: str) -> list[str]:  # a repeatable option gives a list, `card --gold` one spec
        value = params.get(name) or []
        return [value] if isinstance(value, str) else list(value)

    specs = [*given("evaluator"), *given("gold"),
             *(split_victim_spec(v)[0] for v in given("victim"))]
    for spec in specs:
        name, given = parse_spec(spec)
        known = accepted_params(EVALUATORS.get(name))
        if known is not None:
            check_names("parameter", given, (*known, "name"), f"{page}: {spec}")


def test_the_cli_reference_lists_every_command() -> None:
    import typer

    from evalstress.cli import app

    text = _hook().cli_markdown()
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="evalstress")
    table = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        assert f"| `{name}" in table, name  # the table of commands names it (old names too)
        if getattr(command, "hidden", False):  # an old name: in the table, not in full
            assert f"## evalstress {name}\n" not in text
            continue
        assert f"## evalstress {name}\n" in text
        for option in (p for p in command.params if p.param_type_name == "option"):
            assert f"`{option.opts[0]}`" in text, (name, option.opts)
    assert "### evalstress cache stats" in text


def test_mkdocs_build_strict_offline(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the dev extra installs mkdocs (scripts/setup.sh)")
    pytest.importorskip("material", reason="the dev extra installs mkdocs-material")
    pytest.importorskip("mkdocstrings", reason="the dev extra installs mkdocstrings[python]")
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    assert "social" not in config and "font: false" in config and "inventories" not in config
    # any attempt to reach the network goes to a closed port and fails the build
    env = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": "", "PYTHONPATH": str(ROOT / "src")}
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (site / "reference" / "cli" / "index.html").read_text("utf-8")
    assert "evalstress attack" in cli and "--gold" in cli
    api = (site / "reference" / "api" / "index.html").read_text("utf-8")
    assert "assert_passes" in api and "OutputContract" in api
    assert "StressResult" in api and "_tmp" not in api and "_paths" not in api  # no private field
    judges = (site / "judges" / "index.html").read_text("utf-8")
    assert "json:reasoning|score" in judges and "PASS or FAIL" in judges  # snippets included
    # a pipe in a table's code cell shows as one: mkdocs keeps the backslash of `a\|b` literally
    shown = html.unescape(judges)
    assert "<code>http://a/v1|http://b/v1</code>" in shown
    assert "<code>labels:A=5|B=4|C=3</code>" in shown
    assert not re.search(r"<code>[^<]*\\\|", judges)
    assert not list(site.rglob("cli_reference.py"))  # the hook is not published
