"""What the commands that read a finished run share (report, check, combine, export,
compare): its verdicts, and an output file checked before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalstress.cli.common import fail
from evalstress.core.storage import StorageError, check_target, describe
from evalstress.engine.outdir import (
    check_not_run_file,
    check_output_file,
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
