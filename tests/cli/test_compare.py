"""`evalstress compare` takes runs or cards; `card-compare`, the cards' old command, still
works for one release with a one-line notice."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app

runner = CliRunner()
ATLAS = Path(__file__).resolve().parents[2] / "docs" / "atlas"


def _cards(tmp_path: Path) -> tuple[Path, Path]:
    """Two published cards (BLEU's and chrF's), copied to card folders."""
    folders = []
    for name in ("bleu", "chrf"):
        folder = tmp_path / "cards" / name
        folder.mkdir(parents=True)
        shutil.copy(ATLAS / name / "card.json", folder / "card.json")
        folders.append(folder)
    return folders[0], folders[1]


def test_compare_puts_cards_side_by_side(tmp_path: Path) -> None:
    bleu, chrf = _cards(tmp_path)
    result = runner.invoke(app, ["compare", str(bleu), str(chrf / "card.json"), "--md", "-"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if line.startswith("| test |"))
    assert header.replace(" ", "") == "|test|bleu|chrf|"
    assert "note:" not in result.output


def test_the_old_name_still_works_with_a_one_line_notice(tmp_path: Path) -> None:
    bleu, chrf = _cards(tmp_path)
    page = tmp_path / "c.html"
    old = runner.invoke(app, ["card-compare", str(bleu), str(chrf), "--html", str(page)])
    assert old.exit_code == 0, old.output
    notes = [line for line in old.output.splitlines() if line.startswith("note:")]
    assert notes == ["note: `evalstress card-compare` is now `evalstress compare`; the old "
                     "name goes in the next release"]
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    old = runner.invoke(app, ["card-compare", str(bleu), str(chrf), "--md", "-"])
    new = runner.invoke(app, ["compare", str(bleu), str(chrf), "--md", "-"])
    assert any(x.startswith("| test |") for x in new.output.splitlines())
    assert [x for x in old.output.splitlines() if x.startswith("| ")] == [
        x for x in new.output.splitlines() if x.startswith("| ")]


def test_runs_and_cards_together_are_refused_before_any_work(tmp_path: Path) -> None:
    bleu, _ = _cards(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    page = tmp_path / "c.html"
    result = runner.invoke(app, ["compare", str(run), str(bleu), "--out", str(page)])
    assert result.exit_code == 2, result.output
    assert (f"compare takes runs or cards, not both: {bleu} is a card, {run} a run directory"
            in " ".join(result.output.split()))
    assert not page.exists()


def test_compare_of_runs_takes_two(tmp_path: Path) -> None:
    runs = [tmp_path / name for name in ("a", "b", "c")]
    for run in runs:
        run.mkdir()
    result = runner.invoke(app, ["compare", *map(str, runs)])
    assert result.exit_code == 2, result.output
    assert "compare takes two run directories (A and B), not 3" in result.output
    named = runner.invoke(app, ["compare", str(runs[0]), str(runs[1]), "--name", "x"])
    assert named.exit_code == 2 and "--name applies to cards" in named.output
