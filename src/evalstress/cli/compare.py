"""`evalstress compare`: two runs, or evaluators' cards, side by side. What it compares follows
from what it is given: run directories (two: A and B) or cards (card.json files or card
folders, one or more). `card-compare`, the cards' old command, still works for one release."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from evalstress.cli.common import app, console, err, fail, next_steps, renamed
from evalstress.cli.options import CardNamesOption, MarkdownOption, PageOption
from evalstress.cli.rundir import cannot_write, verdicts_of, writable
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError
from evalstress.core.storage import StorageError, atomic_write_text

#: `--md -`: the Markdown on standard output
STDOUT = Path("-")


def is_card(path: Path) -> bool:
    """A card: a JSON file other than a run's results.json, or a folder holding card.json."""
    if path.is_dir():
        return (path / "card.json").is_file()
    return path.suffix == ".json" and path.name != "results.json"


@app.command("compare")
def compare_command(
    items: Annotated[list[Path], typer.Argument(
        metavar="RUN_OR_CARD...", help="Two run directories (A, then B), or one or more "
        "cards (card.json files or card folders).")],
    out: PageOption = None,
    md: MarkdownOption = None,
    name: CardNamesOption = None,
) -> None:
    """Put two runs, or evaluators' cards, side by side.

    Two runs (two evaluators on one suite, or two versions of one evaluator): prints the
    verdicts that changed (a regression is a pass that became anything else) and writes both
    verdict grids, row by row, to one HTML page (--out, default compare.html). Cards: one
    table with the evaluators as columns (one per aspect of an evaluator that rates several)
    and the gate, the findings and each test as rows, printed as Markdown (or written with
    --md) and, with --out, as an HTML page; a difference in the data's hash, the budget or the
    evalstress version is named above the table, and a card whose sanity gate failed is marked
    untrusted. Examples: `evalstress compare runs/bleu runs/chrf`, `evalstress compare
    cards/bleu cards/chrf`.
    """
    cards = [path for path in items if is_card(path)]
    if cards and len(cards) < len(items):
        run = next(path for path in items if not is_card(path))
        raise fail(f"compare takes runs or cards, not both: {cards[0]} is a card, {run} a "
                   "run directory")
    if cards:
        compare_cards(items, md=md, html=out, names=name)
        return
    for option, value in (("--md", md), ("--name", name)):
        if value:
            raise fail(f"{option} applies to cards; {items[0]} is a run directory")
    if len(items) != 2:
        raise fail(f"compare takes two run directories (A and B), not {len(items)}")
    compare_runs(items[0], items[1], out or Path("compare.html"))


def compare_runs(run_a: Path, run_b: Path, out: Path) -> None:
    """Two runs' verdicts: the changes printed, both grids written to `out`."""
    from rich.table import Table

    from evalstress.report.compare import (
        changes,
        paired_outcomes,
        relabelled,
        render_compare,
        unchanged_note,
    )

    writable(out, "--out", (run_a, run_b))
    a, b = (verdicts_of(run, "compare", applicable=False) for run in (run_a, run_b))
    try:
        atomic_write_text(out, render_compare(a, b, name_a=str(run_a), name_b=str(run_b)))
    except OSError as exc:
        raise fail(cannot_write(exc, out)) from None
    paired = paired_outcomes(a, b)
    listed = changes(*paired)
    for label_b, label_a in relabelled(a, b).items():
        console.print(f"B's {escape(label_b)} is paired with A's {escape(label_a)}: the same "
                      "evaluator with the same parameters under another label.")
    table = Table(title=f"Changed verdicts: A = {run_a}, B = {run_b}")
    for column in ("analysis", "evaluator / aspect", "test", "A", "B", "change"):
        table.add_column(column)
    for c in listed:
        table.add_row(c.analysis, c.subject, c.test, c.before or "-", c.after or "-",
                      f"[red]{c.kind}[/]" if c.kind == "regression" else c.kind)
    console.print(table if listed else unchanged_note(*paired))
    print_wrapped(console, f"Wrote {out}", hang=2)
    next_steps(out, ["check", str(run_b)], "B's expectations as a CI gate")


def compare_cards(cards: list[Path], *, md: Path | None, html: Path | None,
                  names: list[str] | None, html_flag: str = "--out") -> None:
    """Cards in one table: printed as Markdown unless `md`; also an HTML page with `html`
    (given as `html_flag`)."""
    from evalstress.card.compare import compare_cards, compare_html, compare_markdown, read_card
    from evalstress.card.model import CARD_JSON, write_atomic
    from evalstress.engine.outdir import check_not_run_file, check_output_file

    if names and len(names) != len(cards):
        raise fail(f"--name: {len(names)} names for {len(cards)} cards; give one per card, in "
                   "order")
    read_files = [path / CARD_JSON if path.is_dir() else path for path in cards]
    try:
        for option, path in (("--md", None if md == STDOUT else md), (html_flag, html)):
            if path is not None:
                check_output_file(path, option, read_files)
                # nor a file of an input card's folder (its card.md, card.html, ...)
                check_not_run_file(path, [f.parent for f in read_files], option, kind="card")
    except StorageError as exc:
        raise fail(str(exc)) from None
    try:
        read = [read_card(path) for path in cards]
    except DataError as exc:
        raise fail(str(exc)) from None
    comparison = compare_cards(read, names or None)
    markdown = compare_markdown(comparison)
    to_stdout = md == STDOUT
    for path, text in ((None if to_stdout else md, markdown),
                       (html, compare_html(comparison) if html else "")):
        if path is not None:
            try:
                write_atomic(path, text)
            except OSError as exc:
                raise fail(f"{path}: cannot be written ({exc.strerror or exc})") from None
            print_wrapped(err, f"Wrote {path}", hang=2)
    if to_stdout:  # a Markdown document: its table rows cannot be wrapped
        console.print(markdown, markup=False, highlight=False, soft_wrap=True)
    elif md is None:
        from rich.markdown import Markdown

        console.print(Markdown(markdown))
    if html is not None or (md is not None and not to_stdout):
        shown = [str(path) for path in cards]
        next_steps(html or md, ["compare", *shown, "--md", "-"] if html else
                   ["compare", *shown, "--out", "compare.html"],
                   "the table as Markdown, to paste" if html else "the table as a page")


@app.command("card-compare", hidden=True)
def card_compare_command(
    cards: Annotated[list[Path], typer.Argument(
        metavar="CARD...", help="card.json files (or card folders) to put side by side.")],
    md: MarkdownOption = None,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Write the table as a self-contained HTML page here.")] = None,
    name: CardNamesOption = None,
) -> None:
    """The old name of `evalstress compare CARD...` (kept for one release)."""
    renamed("card-compare", "compare")
    compare_cards(cards, md=md, html=html, names=name, html_flag="--html")
