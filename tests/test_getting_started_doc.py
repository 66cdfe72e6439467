"""The figures the getting-started page and the blind-spot method page quote are what
`evalstress quickstart` prints today: the corpus size, the example and variant counts, every
quoted table row and the pass/blind-spot summary. One full quickstart run serves every check."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.cli import app

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ["index.md", "methods/blind-spots.md"]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """(terminal output, results.json) of the quickstart the pages describe, on the whole corpus."""
    out = tmp_path_factory.mktemp("quickstart") / "run"
    # the pages quote the one-table layout of a terminal 120 columns wide or more
    result = CliRunner().invoke(app, ["quickstart", "--out", str(out), "--no-cache",
                                      "--workers", "1"], env={"COLUMNS": "140"})
    assert result.exit_code == 0, result.output
    return result.output, json.loads((out / "results.json").read_text(encoding="utf-8"))


def quoted_output(page: str) -> list[str]:
    """The lines of the page's ```text blocks that quote the blind-spot table."""
    blocks = re.findall(r"```text\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.DOTALL)
    lines = [line for block in blocks if "evaluator / aspect" in block
             for line in block.splitlines()]
    assert lines, f"docs/{page} quotes no blind-spot table"
    return lines


def number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_quoted_table_line_is_printed_by_quickstart(
        quickstart: tuple[str, dict[str, Any]], page: str) -> None:
    printed = {line.rstrip() for line in quickstart[0].splitlines()}
    stale = [line for line in quoted_output(page) if line.rstrip() not in printed]
    assert not stale, f"docs/{page} quotes lines quickstart no longer prints:\n" + "\n".join(stale)


@pytest.mark.slow
def test_the_getting_started_counts_are_the_runs(quickstart: tuple[str, dict[str, Any]]) -> None:
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    counts = quickstart[1]["counts"]
    corpus = re.search(r"built-in corpus \(([\d,]+) texts", text)
    scored = re.search(r"scores ([\d,]+) examples and ([\d,]+) variants", text)
    assert corpus and scored, "docs/index.md no longer says how many texts and variants it scores"
    assert number(corpus.group(1)) == counts["examples"]
    assert (number(scored.group(1)), number(scored.group(2))) == (counts["examples"],
                                                                  counts["variants"])
