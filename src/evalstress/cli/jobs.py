"""The face of `evalstress.job.run_job` that `quickstart`, `run` and `criteria-levels` share:
their settings resolved, the job built and run, what it found printed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstress.cli.common import (
    console,
    err,
    exit_if_mostly_missing,
    fail,
    next_steps,
    progress_bars,
    settings_of,
    use_cache_dir,
)
from evalstress.cli.guard import keeps
from evalstress.core.consoles import print_wrapped
from evalstress.core.interrupts import set_resume_hint
from evalstress.core.wording import plural

if TYPE_CHECKING:  # the run machinery loads when a command runs: --help stays light
    from evalstress.engine.result import RunResult
    from evalstress.job import JobResult, RunSettings, StressJob


def execute(job: StressJob, *, quiet: bool, then: Sequence[str] = (),
            why: str = "") -> JobResult:
    """The face of `run_job` for `run`, `quickstart` and `criteria-levels`: run the job, print
    what it found and where (unless `quiet`), then the command `then` worth trying next (with
    `why`), exit EXIT_MOSTLY_MISSING (3) after writing when an
    evaluator's scores are mostly missing. A storage error (a full disk) goes to the command
    group, which names it and says what became of `--out`."""
    from evalstress.engine.rundir import staging_for
    from evalstress.job import JobError, run_job
    from evalstress.report.generation import print_generation
    from evalstress.report.terminal import print_analyses, print_summary

    try:
        use_cache_dir(job.cache_dir)
        if job.out is not None:
            keeps(job.out)
            set_resume_hint(f"finished chunks in {staging_for(job.out)}")
        done = run_job(job)
    except JobError as exc:
        raise fail(str(exc)) from None
    result = done.run
    if not quiet:
        print_summary(console, result, done.analyses.get("blindspot"),
                      untrusted=[share.evaluator for share in done.untrusted
                                 if share.evaluator in result.stats])
        print_generation(console, result.plan.generation)
        print_analyses(console, done.analyses)
        print_wrapped(console, wrote_line(done.paths, ("report", "results", "scores",
                                                         "variants")), hang=2)
        if "report" in done.paths:
            next_steps(done.paths["report"], then, why)
    _warn_long_rows(result)
    for found in done.degenerate:  # verdicts about it rest on no variation
        print_wrapped(err, found.describe(), lead="warning:", lead_style="yellow", hang=2)
    exit_if_mostly_missing(done.untrusted, job.max_missing)
    return done


def wrote_line(paths: dict[str, Path], keys: tuple[str, ...]) -> str:
    """'Wrote A, B, C': the files of `keys` that were written, in that order (report.html
    first where there is one: it is the file a reader opens)."""
    written = [str(paths[k]) for k in keys if k in paths and paths[k].exists()]
    return f"Wrote {', '.join(written)}" if written else ""


def _warn_long_rows(result: RunResult) -> None:
    """Rows left out for their length: a warning each (five at most, then a count)."""
    from evalstress.engine.runhealth import long_text_skips

    long_rows = long_text_skips(result)
    for reason in long_rows[:5]:
        print_wrapped(err, f"skipped {reason}", lead="warning:", lead_style="yellow", hang=2)
    if len(long_rows) > 5:
        print_wrapped(err, f"and {plural(len(long_rows) - 5, 'more row')} beyond the limit",
                      lead="warning:", lead_style="yellow", hang=2)


def job_from(settings: RunSettings, **extra: Any) -> StressJob:
    """`build_job` for a command: a setting or input that cannot be used ends the command in
    one line (exit 2) before any work; the job's notes (the built-in corpus) go to stderr."""
    from evalstress.core.data import DataError
    from evalstress.job import SettingsError, build_job

    try:
        job = build_job(settings, progress=progress_bars(enabled=not settings.quiet), **extra)
    except (DataError, SettingsError, KeyError, ValueError, ImportError,
            FileNotFoundError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    for note in job.notes:
        print_wrapped(err, note, hang=2)
    return job


def settings_from(flags: dict[str, Any], config: Path | None = None, *,
                  face: str = "run") -> RunSettings:
    """The run's settings (flags > --config > defaults); a bad one ends it (exit 2)."""
    from evalstress.job import RunSettings

    return settings_of(RunSettings, flags, config, face=face)
