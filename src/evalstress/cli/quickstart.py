"""`evalstress quickstart`: the blind-spot suite with the lexical metrics on the built-in
corpus, offline."""

from __future__ import annotations

import typer

from evalstress.cli.common import app, fail, given
from evalstress.cli.jobs import execute, job_from, settings_from
from evalstress.cli.options import (
    CacheDirOption,
    ConfigOption,
    ForceOption,
    LimitOption,
    NoCacheOption,
    QuietOption,
    RunDirOption,
    WorkersOption,
)


@app.command()
def quickstart(
    ctx: typer.Context,
    out: RunDirOption = None,
    limit: LimitOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
    workers: WorkersOption = None,
    force: ForceOption = False,
    config: ConfigOption = None,
) -> None:
    """Run the blind-spot suite on the built-in corpus with the lexical metrics, offline.

    Scores each of the built-in examples and their noised variants with BLEU, chrF and
    ROUGE-1/2/L, then runs the rank and monotonic tests of paper 002.
    """
    flags = given(ctx, locals())
    from evalstress.job import LEXICAL_DEFAULT

    # the built-in corpus, the lexical metrics and the blindspot suite: a config file that
    # chooses otherwise is refused, not silently overruled
    asked = settings_from(flags, config, face="quickstart")
    for key in ("data", "evaluators", "suite", "perturbations"):
        if asked.sources.get(key) == "config":
            raise fail(f"{asked.where(key)}: quickstart always runs the lexical metrics under "
                       "the blindspot suite on the built-in corpus; for other choices use "
                       f"`evalstress run --config {config}`")
    settings = settings_from({**flags, "evaluators": LEXICAL_DEFAULT, "suite": "blindspot"},
                             config, face="quickstart")
    execute(job_from(settings), quiet=settings.quiet, then=["card", "bleu", "--budget", "small"],
            why="where one evaluator can be trusted, in seconds")
