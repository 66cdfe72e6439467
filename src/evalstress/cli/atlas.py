"""`evalstress atlas`: the cards of the evaluators that run offline, published with their docs
page; with --data-dir, the atlas on the public sets the papers used."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import (
    app,
    console,
    err,
    fail,
    next_steps,
    progress_line,
    use_cache_dir,
)
from evalstress.cli.options import (
    AtlasOnlyOption,
    BackendOption,
    CacheDirOption,
    CardsWorkOption,
    DryRunOption,
    ExhaustiveOption,
    ForceOption,
    MadePageOption,
    NoMeasureOption,
    PageOnlyOption,
    QuietOption,
    RayAddressOption,
    ShardOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError
from evalstress.core.storage import StorageError
from evalstress.core.strict import ConfigError


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
    backend: BackendOption = None,
    ray_address: RayAddressOption = None,
    shard: ShardOption = None,
    exhaustive: ExhaustiveOption = False,
    no_measure: NoMeasureOption = False,
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
    from evalstress.job import SettingsError
    from evalstress.job.studysettings import check_card_execution

    try:
        check_card_execution(backend or "local", ray_address, shard)
    except SettingsError as exc:
        raise fail(str(exc)) from None
    backend = backend or "local"
    if dry_run and data_dir is None:
        raise fail("--dry-run: applies to the atlas on real data; give --data-dir DIR")
    if no_measure and not dry_run:
        raise fail("--no-measure: applies to --dry-run")
    try:
        if data_dir is not None:
            _real_atlas(data_dir, only, page_only=page_only, dry_run=dry_run, work=work,
                        published=published, page=page, cache_dir=cache_dir, quiet=quiet,
                        force=force, backend=backend, ray_address=ray_address,
                        exhaustive=exhaustive, measure=not no_measure)
            return
        from evalstress.card.atlas import PAGE, PUBLISHED, WORK, build_atlas, entries, write_page

        page = page or PAGE
        chosen = entries(only)
        if page_only:
            write_page(published or PUBLISHED, page, force=force)
        else:
            use_cache_dir(cache_dir)
            say = progress_line("atlas", quiet)
            took = build_atlas(chosen, work=work or WORK, published=published or PUBLISHED,
                               page=page, cache_dir=cache_dir, force=force, say=say,
                               backend=backend, ray_address=ray_address,
                               exhaustive=exhaustive)
            for name_, seconds in took.items():
                say(f"{name_}: {seconds:.0f} s")
    except (CardError, StorageError, DataError, ConfigError, ValueError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    if not quiet:
        print_wrapped(err, f"Wrote {page}", hang=2)
    atlas_next(page, published or PUBLISHED, [entry.name for entry in chosen], quiet)


def atlas_next(page: Path, published: Path, names: list[str], quiet: bool) -> None:
    """The atlas's last lines: its page, and two of its cards side by side."""
    cards = [str(published / name) for name in names[:2]]
    next_steps(page, ["compare", *cards, *(["OTHER_CARD"] if len(cards) < 2 else []), "--out",
                      "compare.html"], "two cards side by side", quiet=quiet)


def _real_atlas(data_dir: Path, only: list[str] | None, *, page_only: bool, dry_run: bool,
                work: Path | None, published: Path | None, page: Path | None,
                cache_dir: Path | None, quiet: bool, force: bool,
                backend: str, ray_address: str | None,
                exhaustive: bool = False, measure: bool = True) -> None:
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
        from evalstress.card.dryrun import duration_text

        measured = 0
        for entry in chosen:
            plan = realatlas.plan_real(entry, data_dir, exhaustive=exhaustive or backend == "ray")
            timed = realatlas.estimate_card_time(plan, work or realatlas.WORK, entry.rate,
                                                 cache_dir=cache_dir, measure=measure)
            if timed.seconds is None:
                shown = "unknown (no rate)"
            elif timed.least_seconds is not None:
                shown = (f"at most {duration_text(timed.seconds)} (at least "
                         f"{duration_text(timed.least_seconds)} if the sequential design "
                         "settles every test at its first look)")
            else:
                shown = duration_text(timed.seconds)
            print_wrapped(console, f"{entry.name}: {len(plan.examples)} examples, "
                          f"{timed.texts:,} texts to score, estimated {shown}; rate "
                          f"{timed.rate.line()}", hang=2)
            measured += timed.rate.texts
        console.print("Nothing was made." + (
            f" The {measured:,} texts scored to time the evaluators are kept in the score "
            "cache." if measured else ""))
        return
    if not page_only:
        use_cache_dir(cache_dir)
        say = progress_line("atlas", quiet)
        took = realatlas.build_real_atlas(chosen, data_dir, work=work or realatlas.WORK,
                                          published=published, page=page,
                                          cache_dir=cache_dir, force=force, say=say,
                                          backend=backend, ray_address=ray_address,
                                          exhaustive=exhaustive)
        for name_, seconds in took.items():
            say(f"{name_}: {seconds:.0f} s")
    write_real_page(published, page, force=force)
    if not quiet:
        print_wrapped(err, f"Wrote {page}", hang=2)
    atlas_next(page, published, [entry.name for entry in chosen], quiet)
