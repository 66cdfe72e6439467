"""Commands on finished runs: `evalstress report`, `compare`, `check`, `combine` and `export`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from evalstress.cli.common import app, console, fail
from evalstress.cli.options import (
    PageOption,
    RunDirArgument,
    VariantsOutOption,
)
from evalstress.core.consoles import visible_controls
from evalstress.core.data import DataError
from evalstress.core.storage import StorageError, atomic_write_text, check_target, describe
from evalstress.core.wording import plural
from evalstress.engine.outdir import (
    check_not_run_file,
    check_output_file,
    is_recorded,
    record_files,
)


def cannot_write(exc: OSError, path: Path) -> str:
    """One line for a write that failed: the file it was for, and why."""
    return describe(exc, path) or f"cannot write {path}: {exc.strerror or exc}"


def writable(path: Path, what: str, reads: tuple[Path, ...] = (),
             rewrites: tuple[str, ...] = ()) -> None:
    """End the command before any work when its output file cannot be written, is a symbolic
    link or a folder, or would be written over a file of a run it `reads` (other than the ones
    it `rewrites`)."""

    try:
        check_output_file(path, what)  # never through a link evalstress did not make
        check_not_run_file(path, reads, what, allowed=rewrites)
        check_target(path, what)
    except StorageError as exc:
        raise fail(str(exc)) from None


def verdicts_of(run_dir: Path, command: str, *, applicable: bool = True) -> dict[str, Any]:
    """results.json of a run whose test verdicts `command` reads; ends the command (exit 2, one
    line) when the run directory is broken or incomplete, or when the run has no verdict (with
    `applicable`, no verdict other than not-applicable) for it to read."""
    from evalstress.analyses.outcomes import outcomes
    from evalstress.report.check import untested
    from evalstress.report.rundir import RunDirError, read_run

    try:
        results = read_run(run_dir)
    except RunDirError as exc:
        raise fail(str(exc)) from None
    reason = untested(results, outcomes(results), applicable=applicable)
    if reason:
        raise fail(f"nothing to {command} in {run_dir}: {reason}")
    return results


@app.command("report")
def report_command(
    run_dir: RunDirArgument,
    out: PageOption = None,
    max_variants: Annotated[int, typer.Option(
        min=0, help="Variants embedded in the page's browser (a stratified sample; `evalstress "
        "export` writes them all).")] = 4000,
) -> None:
    """Rebuild the HTML report of a run from its directory (one self-contained file).

    A run directory whose results.json does not follow its schema, or that lacks scores.parquet
    or variants.parquet, is refused (exit 2) rather than reported in part.

    Example: `evalstress report runs/summaries && open runs/summaries/report.html`
    """
    from evalstress.report.html import write_report
    from evalstress.report.rundir import RunDirError, read_run

    if out is not None:
        writable(out, "--out", (run_dir,), rewrites=("report.html",))
    own = Path(run_dir) / "report.html"
    rewrites_own = out is None or Path(out).resolve() == own.resolve()
    was_ours = rewrites_own and is_recorded(Path(run_dir), "report.html")
    try:
        results = read_run(run_dir)
        path = write_report(run_dir, out, max_variants=max_variants, results=results)
        if was_ours:  # the run's own report, rebuilt: still evalstress's
            record_files(Path(run_dir), ["report.html"])
    except RunDirError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # a full disk, a read-only folder: named with the file written
        raise fail(cannot_write(exc, out or Path(run_dir) / "report.html")) from None
    console.print(f"Wrote {path}")


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
        typer.echo(("ok    " if c.ok else "FAIL  ") + visible_controls(c.reason))
    typer.echo(f"{len(checks) - len(broken)} of {plural(len(checks), 'expectation')} met")
    raise typer.Exit(1 if broken else 0)


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


@app.command("export")
def export_command(
    run_dir: RunDirArgument,
    variants: VariantsOutOption,
    originals: Annotated[bool, typer.Option(
        "--originals", help="Add each example's original text (column `original`).")] = False,
) -> None:
    """Write a run's variants with their full text and provenance (id, example_id,
    perturbation, severity, seed, noise_ratio, method, provenance, text).

    The run stores them compressed in variants.parquet; this writes them as a file to read,
    filter or edit. The file loads back into a run as it is: `evalstress run DATA --variants
    FILE` scores its texts in place of the suite's perturbations of the same names (edit the
    texts first to stress your own variants).

    Example: `evalstress export runs/summaries --variants variants.csv --originals`
    """
    from evalstress.engine.variantfile import export_variants

    writable(variants, "--variants", (run_dir,))
    try:
        count = export_variants(run_dir, variants, originals=originals)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # a full disk, a read-only folder: named with the file written
        raise fail(cannot_write(exc, variants)) from None
    console.print(f"Wrote {plural(count, 'variant')} to {variants}")
