"""`evalstress card`: where an evaluator can be trusted and where not, in one folder (card.md,
card.json and the methods' run directories)."""

from __future__ import annotations

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
    next_steps,
    progress_bars,
    progress_line,
    settings_of,
    use_cache_dir,
)
from evalstress.cli.guard import keeps
from evalstress.cli.options import (
    BackendOption,
    CacheDirOption,
    CardBudgetOption,
    CardDirOption,
    CardGoldOption,
    ConfigOption,
    DataOption,
    DryRunOption,
    ExhaustiveOption,
    ForceOption,
    GeneratorOption,
    MapOption,
    MaxCharsOption,
    NoCacheOption,
    NoMeasureOption,
    PreferencesOption,
    QuietOption,
    RayAddressOption,
    ShardOption,
    TaskOption,
    WorkersOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError
from evalstress.core.interrupts import set_resume_hint
from evalstress.core.storage import StorageError

if TYPE_CHECKING:  # the card's machinery loads when a card is made: --help stays light
    from evalstress.card import CardOptions, CardPlan
    from evalstress.job.studysettings import CardSettings


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
    preferences: PreferencesOption = None,
    force: ForceOption = False,
    config: ConfigOption = None,
    backend: BackendOption = None,
    ray_address: RayAddressOption = None,
    shard: ShardOption = None,
    exhaustive: ExhaustiveOption = False,
    no_measure: NoMeasureOption = False,
) -> None:
    """Make the evaluator card: run every method that applies and say where it can be trusted.

    Runs the blind-spot tests (paper 002), discernment (paper 003), the criteria response
    (paper 000) and, with --gold, the adversarial search (paper 004), after a sanity gate on
    the evaluator itself (does it vary, does it rank an original above heavy damage, are its
    scores there). Writes card.html (the page to open), card.md and card.json, with each
    method's run directory under runs/. A card killed halfway resumes where it stopped.
    Example: `evalstress card bleu`.
    """
    flags = given(ctx, locals())
    from evalstress.card import CardError, CardOptions, card_folders, make_card, plan_card
    from evalstress.card.make import check_endpoints
    from evalstress.card.run import card_workers, check_same_card
    from evalstress.job import SettingsError
    from evalstress.job.studysettings import CardSettings

    s = settings_of(CardSettings, flags, config)

    try:
        plans = [plan_card(spec, data=s.data, field_map=s.map, task=s.task, budget=s.budget,
                           gold=s.gold, generator=s.generator, max_chars=s.max_chars,
                           preferences=s.preferences,
                           exhaustive=s.exhaustive or s.backend == "ray")
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
                                          workers=card_workers(len(plan.examples), s.workers)),
                        measure=not s.no_measure)
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
                              say=progress_line(plan.evaluator.label, s.quiet),
                              backend=s.backend, ray_address=s.ray_address)
        keeps(folder)
        set_resume_hint(f"run the same command again: methods finished in {folder}/runs are "
                        "kept")
        try:
            made = make_card(plan, options)
        except (CardError, StorageError) as exc:
            raise fail(str(exc)) from None
        if not s.quiet:
            _print_card(made.to_dict(), folder)
            next_steps(folder / "card.html", quiet=s.quiet)
        failed = [s for s in made.methods.values() if s["status"] == "failed"]
        for section in failed:
            err.print(f"[bold red]error:[/] {escape(section['title'])}: "
                      f"{escape(section['reason'])}", soft_wrap=True)
        if failed:
            raise typer.Exit(2)
        if made.mostly_missing:
            mostly_missing.append(made)
    next_steps(None, *card_next(s, folders), quiet=s.quiet)
    if mostly_missing:
        exit_if_mostly_missing([share for c in mostly_missing for share in c.missing_shares()],
                               mostly_missing[0].gate.missing.max_missing)


def card_next(s: CardSettings, folders: list[Path]) -> tuple[list[str], str]:
    """What to try after a card: on the small budget, the standard one in folders of its own
    (the small cards stay); after a larger one, the cards side by side."""
    if s.budget == "small":
        out = (folders[0].parent / f"{folders[0].name}-standard" if len(folders) == 1
               else folders[0].parent / "standard")
        data = ["--data", str(s.data)] if s.data is not None else []
        same = [part for flag, values in (("-m", s.map or []), ("--task", [s.task] if s.task
                                                                     else []),
                                          ("--gold", [s.gold] if s.gold else []),
                                          ("--generator", [s.generator] if s.generator else []),
                                          *where_it_ran(s))
                for value in values for part in (flag, value)]
        return (["card", *s.specs, *data, *same, "--budget", "standard", "--out", str(out)],
                "more examples and seeds decide more")
    others = [str(folder) for folder in folders] if len(folders) > 1 else [str(folders[0]),
                                                                             "OTHER_CARD"]
    return ["compare", *others, "--out", "compare.html"], "cards side by side"


def where_it_ran(s: CardSettings) -> list[tuple[str, list[str]]]:
    """The backend options a card was given, for the command suggested after it."""
    return [("--backend", [s.backend] if s.backend != "local" else []),
            ("--ray-address", [s.ray_address] if s.ray_address else [])]


def _print_plan(plan: CardPlan, options: CardOptions, measure: bool = True) -> None:
    """The dry run's table: per method what it would spend, timed here (`card.dryrun`), then
    the card's time and where its rate came from."""
    from rich.table import Table

    from evalstress.card.dryrun import time_card, time_lines
    from evalstress.card.model import count_text

    timed = time_card(plan, options, measure=measure)
    rows = timed.rows
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
    for line in time_lines(timed):
        print_wrapped(console, line, hang=2)
    console.print("Texts to score are net of the score cache and of the methods above; calls "
                  "are what the evaluator would be sent (an attack's: an upper bound); time is "
                  "estimated only where the evaluator has a rate.")


def _print_card(card: dict[str, Any], folder: Path) -> None:
    """The gate and the findings in the terminal, each wrapped at the console's width, then
    where the card is."""
    gate = card["gate"]
    colour = {"pass": "green", "warn": "yellow", "fail": "red"}[gate["verdict"]]
    print_wrapped(console, card["evaluator"]["short_signature"], hang=2,
                  lead=card["evaluator"]["label"], lead_style="bold")
    console.print(f"sanity gate: [{colour}]{gate['verdict']}[/]")
    for reason in gate["reasons"]:
        print_wrapped(console, reason, lead="  -", hang=4)
    if card.get("preliminary") and card["findings"]:
        print_wrapped(console, str(card.get("preliminary_reason") or ""), lead="preliminary:",
                      hang=2)
    for number, finding in enumerate(card["findings"], 1):
        print_wrapped(console, finding["text"], lead=f"{number}.", hang=len(f"{number}. "))
    from evalstress.card.plan import judge_methods_note

    note = judge_methods_note(card["methods"])
    for key, section in card["methods"].items():
        if section["status"] == "not run" and (note is None or not note.covers(key)):
            print_wrapped(console, f"{section['title']}: not run: {section['reason']}", hang=2)
    if note is not None:
        print_wrapped(console, note.line, hang=2)
    from evalstress.card.agreement import preference_lines

    for line in preference_lines(card["methods"].get("correlation")):
        print_wrapped(console, line, hang=2)

    from evalstress.card.sequential import design_line

    for section in card["methods"].values():
        if (design := design_line(section)) is not None:
            print_wrapped(console, f"{section['title']}: {design}", hang=2)
    print_wrapped(console, f"Wrote {folder / 'card.html'}, {folder / 'card.md'}, "
                  f"{folder / 'card.json'}", hang=2)
