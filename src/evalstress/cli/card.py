"""`evalstress card`: where an evaluator can be trusted and where not, in one folder (card.md,
card.json and the methods' run directories)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from evalstress.cli.common import (
    app,
    console,
    err,
    exit_if_mostly_missing,
    fail,
    given,
    progress_bars,
    settings_of,
    use_cache_dir,
)
from evalstress.cli.guard import keeps
from evalstress.cli.options import (
    AtlasOnlyOption,
    CacheDirOption,
    CalibrationBudgetsOption,
    CalibrationOnlyOption,
    CardBudgetOption,
    CardDirOption,
    CardGoldOption,
    CardsWorkOption,
    ConfigOption,
    DataOption,
    DryRunOption,
    ForceOption,
    GeneratorOption,
    MadePageOption,
    MapOption,
    MaxCharsOption,
    NoCacheOption,
    PageOnlyOption,
    QuietOption,
    TaskOption,
    WorkersOption,
)
from evalstress.core.data import DataError
from evalstress.core.interrupts import set_resume_hint
from evalstress.core.storage import StorageError
from evalstress.core.strict import ConfigError

if TYPE_CHECKING:  # the card's machinery loads when a card is made: --help stays light
    from evalstress.card import CardOptions, CardPlan


@app.command("card")
def card_command(
    ctx: typer.Context,
    specs: Annotated[list[str] | None, typer.Argument(
        metavar="SPEC...", help="Evaluator spec(s), one card each: bleu, rouge, "
        "'judge:model=local,form=score-only', 'python:target=pkg.mod:fn'.")] = None,
    data: DataOption = None,
    map_: MapOption = None,
    task: TaskOption = None,
    budget: CardBudgetOption = "standard",
    gold: CardGoldOption = None,
    generator: GeneratorOption = None,
    out: CardDirOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    workers: WorkersOption = None,
    quiet: QuietOption = False,
    dry_run: DryRunOption = False,
    max_chars: MaxCharsOption = None,
    force: ForceOption = False,
    config: ConfigOption = None,
) -> None:
    """Make the evaluator card: run every method that applies and say where it can be trusted.

    Runs the blind-spot tests (paper 002), discernment (paper 003), the criteria response
    (paper 000) and, with --gold, the adversarial search (paper 004), after a sanity gate on
    the evaluator itself (does it vary, does it rank an original above heavy damage, are its
    scores there). Writes card.md and card.json, with each method's run directory under
    runs/. A card killed halfway resumes where it stopped. Example: `evalstress card bleu`.
    """
    flags = given(ctx, locals())
    from evalstress.card import CardError, CardOptions, card_folders, make_card, plan_card
    from evalstress.card.make import check_endpoints
    from evalstress.card.run import card_workers, check_same_card
    from evalstress.engine.runhealth import MissingShare
    from evalstress.job import SettingsError
    from evalstress.job.studysettings import CardSettings

    s = settings_of(CardSettings, flags, config)

    try:
        plans = [plan_card(spec, data=s.data, field_map=s.map, task=s.task, budget=s.budget,
                           gold=s.gold, generator=s.generator, max_chars=s.max_chars)
                 for spec in s.specs]
    except (DataError, SettingsError, KeyError, ValueError, ImportError,
            FileNotFoundError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    for note in dict.fromkeys(note for plan in plans for note in plan.notes):
        err.print(f"[yellow]warning:[/] {escape(note)}", soft_wrap=True)
    use_cache_dir(s.cache_dir)
    folders = card_folders(plans, s.out)
    if s.dry_run:
        for plan, folder in zip(plans, folders, strict=True):
            _print_plan(plan, CardOptions(folder, cache_dir=s.cache_dir, no_cache=s.no_cache,
                                          workers=card_workers(len(plan.examples), s.workers)))
        return
    try:  # every card's folder and endpoints, before the first card runs
        for plan, folder in zip(plans, folders, strict=True):
            check_same_card(folder, plan, force=s.force)
        for plan in plans:
            check_endpoints(plan)
    except CardError as exc:
        raise fail(str(exc)) from None
    mostly_missing = []
    for plan, folder in zip(plans, folders, strict=True):
        options = CardOptions(folder, cache_dir=s.cache_dir, no_cache=s.no_cache,
                              workers=card_workers(len(plan.examples), s.workers), force=s.force,
                              progress=progress_bars(enabled=not s.quiet),
                              say=_progress_line(plan.evaluator.label, s.quiet))
        keeps(folder)
        set_resume_hint(f"run the same command again: methods finished in {folder}/runs are "
                        "kept")
        try:
            made = make_card(plan, options)
        except (CardError, StorageError) as exc:
            raise fail(str(exc)) from None
        if not s.quiet:
            _print_card(made.to_dict(), folder)
        failed = [s for s in made.methods.values() if s["status"] == "failed"]
        for section in failed:
            err.print(f"[bold red]error:[/] {escape(section['title'])}: "
                      f"{escape(section['reason'])}", soft_wrap=True)
        if failed:
            raise typer.Exit(2)
        if made.mostly_missing:
            mostly_missing.append(made)
    if mostly_missing:
        exit_if_mostly_missing(
            [MissingShare(c.evaluator["label"], c.gate.missing.missing, c.gate.missing.rows,
                          c.gate.missing.top_reason) for c in mostly_missing],
            mostly_missing[0].gate.missing.max_missing)


def _progress_line(label: str, quiet: bool) -> Callable[[str], None]:
    """The card's progress line per method, on stderr (nothing when quiet)."""

    def say(line: str) -> None:
        if not quiet:
            err.print(f"[bold]{escape(label)}[/] {escape(line)}", soft_wrap=True)

    return say


def _print_plan(plan: CardPlan, options: CardOptions) -> None:
    """The dry run's table: per method what it would spend."""
    from rich.table import Table

    from evalstress.card.estimate import estimate_card
    from evalstress.card.model import count_text

    rows = estimate_card(plan, options)
    table = Table(title=f"Card plan for {plan.evaluator.label} ({plan.budget.name} budget, "
                  f"{count_text(plan.data)}) -> {options.out}")
    for column in ("method", "examples", "variants", "texts to score", "calls", "tokens",
                   "est. time", "note"):
        table.add_column(column, justify="left" if column in ("method", "note") else "right")

    def shown(value: object) -> str:
        return "-" if value is None else str(value)

    for row in rows:
        if not row.runs:
            table.add_row(row.title, "", "", "", "", "", "", f"not run: {row.reason}")
            continue
        seconds = "unknown" if row.seconds is None else f"~{row.seconds:.0f} s"
        table.add_row(row.title, shown(row.examples), shown(row.variants), shown(row.texts),
                      shown(row.calls), shown(row.tokens),
                      seconds if row.key not in ("correlation",) else "-", row.note)
    console.print(table)
    console.print("Nothing was scored. Texts to score are net of the score cache; calls are "
                  "what the evaluator would be sent (an attack's: an upper bound); time is "
                  "estimated only for evaluators with a measured rate.")


def _print_card(card: dict[str, Any], folder: Path) -> None:
    """The gate and the findings in the terminal, then where the card is."""
    gate = card["gate"]
    colour = {"pass": "green", "warn": "yellow", "fail": "red"}[gate["verdict"]]
    console.print(f"[bold]{escape(card['evaluator']['label'])}[/] "
                  f"{escape(card['evaluator']['short_signature'])}")
    console.print(f"sanity gate: [{colour}]{gate['verdict']}[/]")
    for reason in gate["reasons"]:
        console.print(f"  - {escape(reason)}", soft_wrap=True)
    if card.get("preliminary") and card["findings"]:
        console.print(f"preliminary: {escape(str(card.get('preliminary_reason') or ''))}",
                      soft_wrap=True)
    for number, finding in enumerate(card["findings"], 1):
        console.print(f"{number}. {escape(finding['text'])}", soft_wrap=True)
    for section in card["methods"].values():
        if section["status"] == "not run":
            console.print(f"{escape(section['title'])}: not run: {escape(section['reason'])}",
                          soft_wrap=True)
    console.print(escape(f"Wrote {folder / 'card.html'}, {folder / 'card.md'}, "
                         f"{folder / 'card.json'}"))


@app.command("atlas")
def atlas_command(
    only: AtlasOnlyOption = None,
    data_dir: Annotated[Path | None, typer.Option(
        "--data-dir", help="The folder of the public sets (summeval.jsonl, wmt21_de_en.jsonl, "
        "ted_zh_en.jsonl, wikitext_paragraphs.jsonl): make the atlas on real data "
        "(runs/atlas-real, docs/atlas-real, docs/atlas-real.md) instead of the built-in "
        "corpus's.")] = None,
    page_only: PageOnlyOption = False,
    dry_run: DryRunOption = False,
    work: CardsWorkOption = None,
    published: Annotated[Path | None, typer.Option(
        "--published", help="Where each card's card.json and figures are published (default "
        "docs/atlas, with --data-dir docs/atlas-real).")] = None,
    page: MadePageOption = None,
    cache_dir: CacheDirOption = None,
    quiet: QuietOption = False,
    force: ForceOption = False,
) -> None:
    """Make the atlas: the cards of the evaluators that run offline, and their docs page.

    The cards of BLEU, chrF, TER, ROUGE-1/2/L, BERTScore and GPT-PPL on the shipped models and
    the shipped judge (score only), on the built-in corpus; the page is "Blind spots of common
    evaluators" (docs/atlas.md). With --data-dir, the atlas on real data: one card per
    evaluator and public set (SummEval, WMT21 de-en, TED zh-en, WikiText) under the papers'
    protocols, with SummEval's human correlation (docs/atlas-real.md). Each card is made in
    --work (finished methods are reused), its card.json and figures are published in
    --published, and the page is written from every published card. Example: `evalstress
    atlas --only bleu`.
    """
    from evalstress.card import CardError

    if dry_run and data_dir is None:
        raise fail("--dry-run: applies to the atlas on real data; give --data-dir DIR")
    try:
        if data_dir is not None:
            _real_atlas(data_dir, only, page_only=page_only, dry_run=dry_run, work=work,
                        published=published, page=page, cache_dir=cache_dir, quiet=quiet,
                        force=force)
            return
        from evalstress.card.atlas import PAGE, PUBLISHED, WORK, build_atlas, entries, write_page

        page = page or PAGE
        chosen = entries(only)
        if page_only:
            write_page(published or PUBLISHED, page, force=force)
        else:
            use_cache_dir(cache_dir)
            say = _progress_line("atlas", quiet)
            took = build_atlas(chosen, work=work or WORK, published=published or PUBLISHED,
                               page=page, cache_dir=cache_dir, force=force, say=say)
            for name_, seconds in took.items():
                say(f"{name_}: {seconds:.0f} s")
    except (CardError, StorageError, DataError, ConfigError, ValueError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    if not quiet:
        err.print(escape(f"Wrote {page}"), soft_wrap=True)


@app.command("calibrate")
def calibrate_command(
    summeval: Annotated[Path | None, typer.Option(
        help="SummEval's JSONL (../shared/data/summeval.jsonl): calibrate on it too, its "
        "highlights as the texts.")] = None,
    budget: CalibrationBudgetsOption = None,
    only: CalibrationOnlyOption = None,
    page_only: PageOnlyOption = False,
    work: CardsWorkOption = None,
    page: MadePageOption = None,
    results: Annotated[Path, typer.Option(help="The graded cards, as JSON.")]
    = Path("docs/calibration.json"),
    cache_dir: CacheDirOption = None,
    quiet: QuietOption = False,
    force: ForceOption = False,
) -> None:
    """Check the card against known answers: cards of evaluators with planted defects.

    Makes a card of each planted evaluator (`planted:defect=...`: order-blind,
    punctuation-blind, length-only, constant, random, deletion-rewarding, saturating, and the
    clean control `none`; chrF and ROUGE-L as real evaluators of known answer) on the
    built-in corpus (and SummEval with --summeval), for each budget, grades each against its
    known answer, and writes the detection rate and false alarms to docs/calibration.md (the
    results of cards not made again are kept). Example: `evalstress calibrate --budget
    standard --only order-blind`.
    """
    from evalstress.card import CardError
    from evalstress.card.calibration import (
        BUDGETS,
        BUILTIN,
        check_targets,
        entries,
        run_calibration,
        write_page,
        write_results,
    )
    from evalstress.card.calibration import summeval as summeval_data
    from evalstress.card.plan import get_budget

    work, page = work or Path("runs/calibration"), page or Path("docs/calibration.md")
    try:
        chosen = entries(only)
        budgets = list(budget or BUDGETS)
        for name_ in budgets:
            get_budget(name_)
        if page_only:
            write_page(page, results, force=force)
        else:
            if summeval is not None and not summeval.is_file():
                raise ValueError(f"--summeval {summeval}: no such file")
            check_targets(page, results, force=force)
            use_cache_dir(cache_dir)
            datasets = [BUILTIN] + ([summeval_data(summeval)] if summeval else [])
            graded = run_calibration(datasets, budgets, chosen, work=work,
                                     cache_dir=cache_dir, force=force,
                                     say=_progress_line("calibrate", quiet))
            write_results(graded, page, results, force=force)
    except (CardError, StorageError, DataError, ConfigError, ValueError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    if not quiet:
        err.print(escape(f"Wrote {page} and {results}"), soft_wrap=True)
def _real_atlas(data_dir: Path, only: list[str] | None, *, page_only: bool, dry_run: bool,
                work: Path | None, published: Path | None, page: Path | None,
                cache_dir: Path | None, quiet: bool, force: bool) -> None:
    """`evalstress atlas --data-dir DIR`: the real-data atlas's cards (or their estimates) and
    its page."""
    from evalstress.card import realatlas
    from evalstress.card.realpage import write_real_page

    published = published or realatlas.PUBLISHED
    page = page or realatlas.PAGE
    if not data_dir.is_dir():
        raise DataError(data_dir, None, None, "--data-dir: no such folder")
    chosen = realatlas.real_entries(only)
    if dry_run:
        for entry in chosen:
            plan = realatlas.plan_real(entry, data_dir)
            texts, estimate = realatlas.estimate_card_time(plan, work or realatlas.WORK,
                                                           entry.rate)
            shown = "unknown (no measured rate)" if estimate is None else f"~{estimate:.0f} min"
            console.print(escape(f"{entry.name}: {len(plan.examples)} examples, {texts:,} "
                                 f"texts to score, estimated {shown}"), soft_wrap=True)
        console.print("Nothing was made.")
        return
    if not page_only:
        use_cache_dir(cache_dir)
        say = _progress_line("atlas", quiet)
        took = realatlas.build_real_atlas(chosen, data_dir, work=work or realatlas.WORK,
                                          published=published, page=page,
                                          cache_dir=cache_dir, force=force, say=say)
        for name_, seconds in took.items():
            say(f"{name_}: {seconds:.0f} s")
    write_real_page(published, page, force=force)
    if not quiet:
        err.print(escape(f"Wrote {page}"), soft_wrap=True)
