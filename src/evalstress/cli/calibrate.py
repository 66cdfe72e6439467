"""`evalstress calibrate`: the card checked against known answers, on cards of evaluators with
planted defects (docs/calibration.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import app, err, fail, next_steps, progress_line, use_cache_dir
from evalstress.cli.options import (
    CacheDirOption,
    CalibrationBudgetsOption,
    CalibrationOnlyOption,
    CardsWorkOption,
    ForceOption,
    MadePageOption,
    PageOnlyOption,
    QuietOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError
from evalstress.core.storage import StorageError
from evalstress.core.strict import ConfigError


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
                                     say=progress_line("calibrate", quiet))
            write_results(graded, page, results, force=force)
    except (CardError, StorageError, DataError, ConfigError, ValueError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    if not quiet:
        print_wrapped(err, f"Wrote {page} and {results}", hang=2)
    next_steps(page, ["card", "planted:defect=order-blind", "--budget", "small", "--out",
                      "cards/order-blind"], "one planted defect's card on its own", quiet=quiet)
