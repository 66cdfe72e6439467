"""README.md is the front page: what evalstress answers, the two commands, a card with its
output, and where to go next. Everything else has one home in docs/, so the README stays short,
says nothing a docs page says again, keeps the test command CI runs, links only pages that exist,
and quotes the card output `evalstress card bleu --budget small` prints today (at 100
columns, as the README says)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 160
#: a sentence this long said twice is a topic with two homes; shorter ones are names and labels
MIN_WORDS = 8
TWO_COMMANDS = """## Two commands

Run the main job (built-in corpus, offline lexical metrics, the blind-spot suite of paper 002):

```bash
pip install -e . && evalstress quickstart
```

Run the tests (installs every extra the tests exercise first):

```bash
bash scripts/setup.sh && python -m pytest
```
"""
CARD_COMMAND = "evalstress card bleu --budget small"


def prose(markdown: str) -> str:
    """The text of a page outside its headings and fenced blocks, links reduced to their words
    and every run of whitespace to one space."""
    kept, fenced = [], False
    for line in markdown.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced and not line.startswith("#"):
            kept.append(line)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", "\n".join(kept))
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    """Sentences and table cells of at least MIN_WORDS words."""
    pieces = re.split(r"(?<=[.!?:;])\s+|\s*\|\s*", text)
    return [p.strip() for p in pieces if len(p.split()) >= MIN_WORDS]


def repeated_in_docs(readme: str) -> list[tuple[str, str]]:
    """(sentence, page) for each README sentence a docs page says word for word."""
    pages = {p.relative_to(ROOT).as_posix(): prose(p.read_text(encoding="utf-8"))
             for p in sorted((ROOT / "docs").rglob("*.md"))}
    return [(s, page) for s in sentences(prose(readme)) for page, text in pages.items() if s in text]


def test_the_readme_is_a_front_page_of_at_most_160_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move topics to docs/"


def test_no_sentence_of_the_readme_is_said_again_in_docs() -> None:
    found = repeated_in_docs(README.read_text(encoding="utf-8"))
    assert not found, "README.md repeats docs word for word (give each topic one home):\n" + \
        "\n".join(f"{page}: {s}" for s, page in found)


def test_the_repetition_check_finds_a_sentence_copied_from_a_page() -> None:
    page = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    copied = sentences(prose(page))[0]
    # wrapped at other words and its first word made a link, as a copy into the README might be
    first, rest = copied.split(" ", 1)
    pasted = f"[{first}](docs/index.md) " + rest.replace(" ", "\n", 3)
    assert repeated_in_docs(f"# x\n\n{pasted}\n") == [(copied, "docs/index.md")]
    assert repeated_in_docs(f"# x\n\n{copied.replace(' ', ' not ', 1)}\n") == []


def test_the_two_commands_stay_as_ci_runs_them() -> None:
    assert TWO_COMMANDS in README.read_text(encoding="utf-8")
    assert "bash scripts/setup.sh && python -m pytest\n" in (ROOT / ".ci" / "run").read_text()


def test_every_link_of_the_readme_opens_a_file_the_site_publishes() -> None:
    text = README.read_text(encoding="utf-8")
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", text)
               if not re.match(r"[a-z]+://", t)]
    assert len(targets) > 10
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links files that do not exist: {missing}"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [t.removeprefix("docs/") for t in targets if t.startswith("docs/") and t.endswith(".md")]
    unlisted = [p for p in pages if f": {p}\n" not in nav]
    assert not unlisted, f"README.md links docs pages the site's nav lacks: {unlisted}"


def quoted_card() -> list[str]:
    """The lines of the ```text block that follows the README's card command."""
    text = README.read_text(encoding="utf-8")
    found = re.search(re.escape(CARD_COMMAND) + r"\n```\n.*?```text\n(.*?)```", text, re.DOTALL)
    assert found, f"README.md quotes no output after `{CARD_COMMAND}`"
    return found.group(1).splitlines()


@pytest.mark.slow
def test_the_quoted_card_is_what_the_card_command_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(app, CARD_COMMAND.split()[1:], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    printed = {line.rstrip() for line in result.output.splitlines()}
    quoted = quoted_card()
    assert len(quoted) >= 5
    stale = [line for line in quoted if line.rstrip() not in printed]
    assert not stale, "README.md quotes card lines the command no longer prints:\n" + "\n".join(stale)
    assert (tmp_path / "cards" / "bleu" / "card.html").is_file()  # the page the README opens
