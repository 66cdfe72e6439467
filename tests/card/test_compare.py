"""`evalstress compare` of cards: several cards in one table (evaluators as columns, one per aspect;
tests and findings as rows), as Markdown and HTML; a difference in data or budget named above
the table; an untrusted card marked; a bad card file refused in one line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalstress.card.compare import compare_cards, compare_html, compare_markdown, read_card
from evalstress.cli import app
from evalstress.core.data import DataError
from tests.card.conftest import runner


@pytest.fixture
def bleu(bleu_card: tuple[Path, str]) -> dict[str, Any]:
    return read_card(bleu_card[0])


def row_of(markdown: str, test: str) -> list[str]:
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == test:
            return cells[1:]
    raise AssertionError(f"no row {test!r}")


def top_drop(card: dict[str, Any], perturbation: str) -> str:
    """The drop at the top severity as card.json holds it, written as the table writes it."""
    row = next(r for r in card["methods"]["blindspot"]["results"]["rows"]
               if r["perturbation"] == perturbation)
    top = max(row["severities"], key=lambda s: s["severity_rank"])
    return f"{top['relative_change']:+.1%}"


def test_two_cards_of_the_same_data_and_budget_side_by_side(bleu: dict[str, Any]) -> None:
    other = copy.deepcopy(bleu)
    other["evaluator"]["label"] = "bleu-again"
    markdown = compare_markdown(compare_cards([bleu, other]))
    assert markdown.startswith("| card | evaluator | budget |")  # what each card rests on
    assert "> **" not in markdown and "\n\n| test | bleu | bleu-again |" in markdown  # no note
    cells = row_of(markdown, "sentence-switching")
    verdict = next(r["verdict"] for r in bleu["methods"]["blindspot"]["results"]["rows"]
                   if r["perturbation"] == "sentence-switching")
    assert cells[0] == cells[1] and cells[0].startswith(
        f"{'FAIL' if verdict == 'fail' else verdict} {top_drop(bleu, 'sentence-switching')} (")
    assert row_of(markdown, "verdict") == ["pass", "pass"]
    assert row_of(markdown, "status")[0] == "not run: needs --gold"


def test_a_difference_in_data_or_budget_is_named_above_the_table(bleu: dict[str, Any]) -> None:
    other = copy.deepcopy(bleu)
    other["evaluator"]["label"] = "judge"
    other["data"]["sha256"] = "f" * 64
    other["budget"]["name"] = "standard"
    other["gate"].update(trusted=False, verdict="fail",
                         reasons=["degenerate: aspect bleu gave 3 for 100 of 100"])
    markdown = compare_markdown(compare_cards([bleu, other], ["bleu", "judge"]))
    head = markdown.split("| test |")[0]
    assert "The data differs" in head and "sha256 ffffffffffff" in head
    assert "The budget differs" in head and "bleu: small; judge: standard" in head
    assert "untrusted: the sanity gate failed for judge" in head
    assert "| test | bleu | judge† |" in markdown
    assert row_of(markdown, "verdict")[1] == "FAIL (degenerate)"
    page = compare_html(compare_cards([bleu, other], ["bleu", "judge"]))
    assert "<script" not in page and "default-src 'none'" in page
    assert "<th scope='col' class='l'>judge†</th>" in page and "scope='row'" in page
    assert page.count("class='banner' role='note'") == 2


def test_an_evaluator_of_several_aspects_gets_a_column_each(bleu: dict[str, Any]) -> None:
    two = copy.deepcopy(bleu)
    two["evaluator"]["aspects"] = ["bleu", "x"]
    rows = two["methods"]["blindspot"]["results"]["rows"]
    for row in list(rows):
        twin = copy.deepcopy(row)
        twin["aspect"], twin["verdict"] = "x", "fail"
        for point in twin["severities"]:
            point["relative_change"] = 0.5
        rows.append(twin)
    markdown = compare_markdown(compare_cards([two]))
    assert "| test | bleu · bleu | bleu · x |" in markdown
    cells = row_of(markdown, "truncation")
    assert cells[0].split(" (")[0].endswith(top_drop(bleu, "truncation"))
    assert cells[1].startswith("FAIL +50.0% (")


def test_the_command_writes_markdown_and_html_and_refuses_what_is_no_card(
        bleu_card: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = bleu_card
    printed = runner.invoke(app, ["compare", str(out), str(out / "card.json"),
                                  "--name", "one", "--name", "two", "--md", "-"])
    assert printed.exit_code == 0, printed.output
    assert "| test | one | two |" in printed.output  # `--md -`: the Markdown itself
    shown = runner.invoke(app, ["compare", str(out), str(out / "card.json"),
                                "--name", "one", "--name", "two"], env={"COLUMNS": "70"})
    assert shown.exit_code == 0, shown.output
    header = next(line for line in shown.output.splitlines() if line.split()[:1] == ["test"])
    assert header.split() == ["test", "one", "two"]  # a table laid out for the terminal
    assert max(len(line) for line in shown.output.splitlines()) <= 70
    assert "|" not in shown.output
    md, page = tmp_path / "c.md", tmp_path / "c.html"
    wrote = runner.invoke(app, ["compare", str(out), "--md", str(md), "--out", str(page)])
    assert wrote.exit_code == 0, wrote.output
    assert "\n| test | bleu |" in md.read_text(encoding="utf-8")
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    broken = tmp_path / "broken.json"
    broken.write_text('{"card_version": "1.1",\n "evalstress": }', encoding="utf-8")
    not_a_card = tmp_path / "other.json"
    not_a_card.write_text(json.dumps({"card_version": "1.1"}), encoding="utf-8")
    for path, said in ((broken, f"{broken}, line 2, column 16: expected a value"),
                       (not_a_card, f"{not_a_card}: is not a card"),
                       (tmp_path / "none.json", "does not exist")):
        result = runner.invoke(app, ["compare", str(out), str(path)])
        assert result.exit_code == 2, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and said in lines[0], result.output
    mismatch = runner.invoke(app, ["compare", str(out), "--name", "a", "--name", "b"])
    assert mismatch.exit_code == 2 and "2 names for 1 cards" in mismatch.output


def test_read_card_names_the_missing_field(tmp_path: Path, bleu: dict[str, Any]) -> None:
    card = copy.deepcopy(bleu)
    del card["gate"]
    path = tmp_path / "card.json"
    path.write_text(json.dumps(card), encoding="utf-8")
    with pytest.raises(DataError, match="'gate' is a required property"):
        read_card(tmp_path)


def test_the_tables_never_overwrite_an_input_card_or_leave_a_temporary_file(
        tmp_path: Path, bleu_card: tuple[Path, str]) -> None:
    card = tmp_path / "bleu" / "card.json"
    card.parent.mkdir()
    card.write_bytes((bleu_card[0] / "card.json").read_bytes())
    before = card.read_bytes()
    for option, target in (("--md", card), ("--out", card), ("--md", card.parent / "." /
                                                               "card.json")):
        result = runner.invoke(app, ["compare", str(card.parent), str(card), option,
                                     str(target)])
        assert result.exit_code == 2, result.output
        assert "reads" in result.output and "card.json" in result.output
    assert card.read_bytes() == before
    folder = tmp_path / "tables"
    folder.mkdir()
    result = runner.invoke(app, ["compare", str(card), "--out", f"{folder}/"])
    assert result.exit_code == 2, result.output
    assert "folder" in result.output and ".tmp" not in result.output
    assert not list(folder.iterdir()) and not list(tmp_path.glob(".*"))
    victim = tmp_path / "victim.md"
    victim.write_text("mine")
    (tmp_path / "link.md").symlink_to(victim)
    result = runner.invoke(app, ["compare", str(card), "--md", str(tmp_path / "link.md")])
    assert result.exit_code == 2 and "symbolic link" in result.output
    assert victim.read_text() == "mine"


def test_the_tables_never_overwrite_a_file_of_an_input_cards_folder(
        tmp_path: Path, bleu_card: tuple[Path, str]) -> None:
    """`compare CARD --md CARD/card.md` replaced the card's own card.md with the table."""
    folder = tmp_path / "bleu"
    folder.mkdir()
    for name in ("card.json", "card.md", "card.html"):
        (folder / name).write_bytes((bleu_card[0] / name).read_bytes())
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for option, name in (("--md", "card.md"), ("--out", "card.html")):
        result = runner.invoke(app, ["compare", str(folder), option, str(folder / name)])
        assert result.exit_code == 2, result.output
        assert f"{folder / name}: it is a file of the card {folder} this command reads" in \
            " ".join(result.output.split())
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    beside = tmp_path / "table.md"  # outside the card's folder: written
    assert runner.invoke(app, ["compare", str(folder), "--md", str(beside)]).exit_code == 0
    assert "| " in beside.read_text(encoding="utf-8")


DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("other", ["atlas/chrf", "atlas-real/bleu-wmt21"])
def test_each_row_once_and_each_cards_budget_and_data_above_the_table(other: str) -> None:
    """Two published cards (two of one evaluator on other data, too): the terminal's and the
    Markdown's table and the page name each card's budget, example count and data hash once
    above the rows, the two columns are told apart, and no row of the table comes twice."""
    paths = [DOCS / "atlas/bleu", DOCS / other]
    cards = [read_card(p) for p in paths]
    comparison = compare_cards(cards)
    markdown = compare_markdown(comparison)
    page = compare_html(comparison)
    names = [c.name for c in comparison.columns]
    assert len(set(names)) == 2, names
    for name, card in zip(names, cards, strict=True):
        data = card["data"]
        (line,) = [line for line in markdown.splitlines() if line.startswith(f"| {name} |")]
        for fact in (card["budget"]["name"], f"{data['examples']} of {data['available']} "
                     "examples", data["sha256"][:12], data["source"]):
            assert fact in line, (fact, line)
            assert fact in page
    rows, group = [], ""
    for line in markdown[markdown.index("| test |"):].splitlines()[2:]:
        test = line.split(" | ")[0].removeprefix("| ").strip(" |")
        if test.startswith("**"):
            group = test
        else:
            rows.append((group, test))
    assert len(rows) > 20
    assert len(rows) == len(set(rows)), [r for r in rows if rows.count(r) > 1]
    assert [t for _, t in rows].count("truncation") == 1
    assert [t for _, t in rows].count("blind spot") == 1
    assert page.count("<th scope='row' class='l'>truncation</th>") == 1
