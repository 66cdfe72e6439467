"""`evalstress check`: a gate for CI, a finished run against its expectations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import app, console, fail
from evalstress.cli.options import (
    RunDirArgument,
)
from evalstress.cli.rundir import writable
from evalstress.core.consoles import print_wrapped
from evalstress.core.storage import atomic_write_text
from evalstress.core.wording import plural


@app.command("check")
def check_command(
    run_dir: RunDirArgument,
    require: Annotated[list[str] | None, typer.Option(
        "--require", "-r", help="EVALUATOR[/ASPECT]:TEST=VERDICT, repeatable, e.g. "
        "bleu:truncation=pass. TEST: a perturbation, perturbation@severity or analysis:test; "
        "VERDICT: pass, fail, inconclusive or not-applicable.")] = None,
    max_failures: Annotated[int | None, typer.Option(
        help="Fail when more tests than this fail.")] = None,
    min_d: Annotated[float | None, typer.Option(
        help="Fail when an evaluator's D_avg (discernment, all severities) is below this.")]
    = None,
    junit: Annotated[Path | None, typer.Option(help="Also write JUnit XML here.")] = None,
    no_suite: Annotated[bool, typer.Option(
        "--no-suite", help="Ignore the suite's own `expect:` block.")] = False,
) -> None:
    """A gate for CI: exit 0 when the run meets its expectations, 1 when it does not, 2 on a
    usage or input error.

    Expectations: the suite's `expect:` block (require, max_failures, min_d) plus these flags;
    with none at all, every applicable test must pass. One line per broken expectation. A run
    directory that is broken or incomplete (results.json off its schema, scores.parquet gone)
    is an input error, and so is a run with nothing to check (no verdict, or none applicable).

    Example: `evalstress check runs/nightly --require bleu:truncation=pass --max-failures 3
    --junit check.xml`
    """
    from evalstress.report.check import CheckInputError, Expectations, check_run, junit_xml
    from evalstress.report.check import parse_requirement as parse

    if junit is not None:
        writable(junit, "--junit", (run_dir,))
    try:
        flags = Expectations([parse(r) for r in require or []], max_failures, min_d)
        if max_failures is not None and max_failures < 0:
            raise CheckInputError(f"--max-failures must be >= 0, not {max_failures}")
        checks, results = check_run(run_dir, flags, use_suite=not no_suite)
    except CheckInputError as exc:
        raise fail(str(exc)) from None
    broken = [c for c in checks if not c.ok]
    if junit is not None:
        atomic_write_text(junit, junit_xml(checks, properties={
            "run": str(run_dir), "suite": (results.get("suite") or {}).get("name", ""),
            "evalstress": results.get("evalstress", "")}))
    for c in checks:
        print_wrapped(console, c.reason, lead="ok   " if c.ok else "FAIL ", hang=6)
    print_wrapped(console, f"{len(checks) - len(broken)} of "
                  f"{plural(len(checks), 'expectation')} met")
    raise typer.Exit(1 if broken else 0)
