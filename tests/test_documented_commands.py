"""Every `evalstress` command of README.md and docs/**/*.md runs as printed, from a clean folder.

A new user copies commands from the pages into a folder of their own, after `evalstress data
examples` (the getting-started step that gives them the files the commands read). So each page
runs in a fresh temporary folder, never the repository root: first that step, then each of the
page's commands in the page's order (a later command may read what an earlier one wrote, as
`evalstress report runs/summaries` reads the run before it), each in its `--limit 3` form where
it takes --limit, and each must exit 0. Commands that cannot run on a machine without a network
endpoint are listed in `SKIPPED` with the reason (none needs a GPU), with the two attack
searches on the 135M model and the full atlas, which take tens of minutes here, and the
reproductions page's runs on the full public sets in `../shared/data`, which evalstress does not
ship; a listed command that no page shows any more fails the test, so the list cannot go stale.

Running them takes tens of minutes, so that test is marked `docs_commands`, which the default
`python -m pytest` deselects (pyproject.toml) and `.ci/run` runs as a step of its own. The quick
tests stay in the default run: every data file a command reads is one `evalstress data examples`
writes, or, on the reproductions page only, one of the full sets.
"""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.samplefiles import shipped_files
from tests.test_docs_site import site_commands
from tests.test_reproductions_doc import parse_command

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))]
SETUP = "evalstress data examples"
#: where the reproductions page reads the full public sets its numbers were measured on
FULL_SETS = "../shared/data/"
REPRODUCTIONS = "docs/reproductions.md"
LIMIT = 3

#: the repository files some commands name (judge templates, the reproductions' suites), which
#: the pages show in full: a user of a clone runs these commands from its root
REPO_FILES = ["docs/templates", "docs/reproductions"]

NETWORK = "needs a network endpoint"
#: (a piece of the command, why it cannot run here); a command is skipped when it holds the piece
SKIPPED: list[tuple[str, str]] = [
    ("model=gpt-4o", f"{NETWORK}: a hosted model (OpenAI or api.example)"),
    ("base_url=http://127.0.0.1", f"{NETWORK}: a model served by `evalstress serve` or "
                                  "llama.cpp's server"),
    (FULL_SETS, "reads a full public set (SummEval, WMT21, TED, WikiText-103) that evalstress "
                "does not ship: the reproductions measured on it"),
    ("evalstress serve", "starts that server, which runs until it is stopped"),
    ("--ray-address head-node", f"{NETWORK}: a Ray cluster"),
    # not for want of a network: too slow for a test on 2 cores, the cost stated on the page
    ("-g judge:model=local --method rules --budget 40",
     "the adversarial worked example: the 135M gold judge rates every candidate (48 searches "
     "at --limit 3, about an hour on a shared 2-core machine)"),
    ("--generator model=local,max_tokens=80 --direction both",
     "paper 004's search with the 135M model writing and rating every candidate (tens of "
     "minutes at --limit 3)"),
]
#: whole commands skipped, with why
SKIPPED_EXACT: dict[str, str] = {
    "evalstress atlas": "makes all nine cards of the atlas, BERTScore, GPT-PPL and the local "
                        "judge included (tens of minutes on 2 cores); `evalstress atlas --only "
                        "bleu` and `--page-only` run here",
    "evalstress calibrate": "makes 16 cards of the planted evaluators (minutes on 2 cores); "
                            "tests/card/test_calibration.py makes the standard budget's",
    "evalstress calibrate --page-only": "reads the results `evalstress calibrate` writes, "
                                        "which a clean folder lacks",
}


def page_commands(page: str) -> list[str]:
    return site_commands((ROOT / page).read_text(encoding="utf-8"))


def skip_reason(command: str) -> str | None:
    if command in SKIPPED_EXACT:
        return SKIPPED_EXACT[command]
    found = [why for piece, why in SKIPPED if piece in command]
    return found[0] if found else None


def click_command(args: list[str]) -> Any:
    """The click command an argument list names (walking command groups), for its options."""
    command: Any = typer.main.get_command(app)
    rest = list(args)
    while getattr(command, "commands", None) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command


def limited(args: list[str]) -> list[str]:
    """The command's cheapest documented form: --limit 3 where it takes --limit (a larger
    --limit lowered to 3), unchanged otherwise."""
    options = {opt for p in click_command(args).params for opt in getattr(p, "opts", [])}
    if "--limit" not in options:
        return args
    if "--limit" in args:
        at = args.index("--limit") + 1
        return [*args[:at], str(min(int(args[at]), LIMIT)), *args[at + 1:]]
    return [*args, "--limit", str(LIMIT)]


def run_command(command: str) -> tuple[int, str, float]:
    args = limited(shlex.split(command)[1:])
    started = time.perf_counter()
    result = CliRunner().invoke(app, args)
    output = result.output + (f"\n{result.exception!r}" if result.exception and
                              not isinstance(result.exception, SystemExit) else "")
    return result.exit_code, output, time.perf_counter() - started


def test_every_page_with_commands_is_covered() -> None:
    assert "README.md" in PAGES and "docs/index.md" in PAGES
    shown = [c for page in PAGES for c in page_commands(page)]
    assert len(shown) > 30
    stale = [piece for piece, _ in SKIPPED if not any(piece in c for c in shown)]
    stale += [command for command in SKIPPED_EXACT if command not in shown]
    assert not stale, f"SKIPPED names commands no page shows: {stale}"


def test_every_command_of_the_app_is_shown_on_a_page() -> None:
    """Moving text between README.md and docs/ keeps an example of each command somewhere, so
    the run-as-printed test below still exercises every one of them."""
    root: Any = typer.main.get_command(app)
    names = [name for name, command in root.commands.items() if not command.hidden]
    shown = {shlex.split(c)[1] for page in PAGES for c in page_commands(page)
             if len(shlex.split(c)) > 1}
    assert len(names) > 10
    missing = sorted(set(names) - shown)
    assert not missing, f"commands no page shows in a shell block: {missing}"


def test_every_data_file_a_command_reads_is_one_the_data_step_writes() -> None:
    shipped = {f"examples/{name}" for name in shipped_files()}
    read = []
    for page in PAGES:
        for command in page_commands(page):
            _, ctx = parse_command(command)
            data = ctx.params.get("data")
            if data is not None:
                read.append((page, command, str(data)))
    assert len(read) > 20
    unknown = [(page, data) for page, _, data in read if data not in shipped
               and not (page == REPRODUCTIONS and data.startswith(FULL_SETS))]
    assert not unknown, f"commands read files no step gives the user: {unknown}"


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One score cache for every page, as one user's machine has: a page that scores what an
    earlier one scored reads it back."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.slow
@pytest.mark.docs_commands
@pytest.mark.parametrize("page", [p for p in PAGES if page_commands(p)])
def test_each_command_of_the_page_runs_from_a_clean_folder(
        page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(shared_cache))
    for folder in REPO_FILES:
        shutil.copytree(ROOT / folder, tmp_path / folder)
    code, output, _ = run_command(SETUP)
    assert code == 0, output
    report = []
    for command in page_commands(page):
        why = skip_reason(command)
        if why is not None:
            report.append(f"skipped ({why}): {command}")
            continue
        code, output, seconds = run_command(command)
        report.append(f"{seconds:6.1f} s  exit {code}: {command}")
        assert code == 0, f"{page}: `{command}` exited {code}:\n{output[-3000:]}"
    print("\n".join(report))
