"""`evalstress combine`: which evaluators to combine so that together they pass the most tests."""

from __future__ import annotations

from typing import Annotated

import typer

from evalstress.cli.common import app, console, fail
from evalstress.cli.options import (
    RunDirArgument,
)
from evalstress.cli.rundir import verdicts_of


@app.command("combine")
def combine_command(
    run_dir: RunDirArgument,
    by: Annotated[str, typer.Option(help="aspect: each score is a candidate (rouge/rougeL); "
                                    "evaluator: an evaluator passes when any aspect does.")]
    = "aspect",
) -> None:
    """Which evaluators to combine (paper 002, sec. 8): the smallest set whose union passes the
    most tests, and the tests no evaluator passes."""
    from evalstress.analyses.combination import combine
    from evalstress.analyses.outcomes import outcomes

    if by not in ("aspect", "evaluator"):
        raise fail(f"--by must be aspect or evaluator, not '{by}'")
    results = verdicts_of(run_dir, "combine")
    result = combine(outcomes(results), by=by)  # type: ignore[arg-type]
    console.print(f"Smallest set passing the most tests ({result.covered} of "
                  f"{len(result.tests)}): [bold]{' + '.join(result.best) or '-'}[/]"
                  + ("" if result.exact else " (greedy)"))
    for alt in result.alternatives:
        console.print(f"  equally good: {' + '.join(alt)}")
    if result.uncovered:
        console.print(f"No evaluator passes: {', '.join(result.uncovered)}")
