"""`evalstress criteria-levels`: one judge with its criteria at every level of detail.

The command clones a judge spec once per criteria level (`level=...`), runs them on the same
perturbed texts (suite `criteria-rules` by default: paper 000's rule attacks), and writes the
description-type comparison (`analyses.description_types`) as a table, a chart and a page beside
the usual run outputs. Every judgment goes through the score and response caches, so adding a
level later costs only that level's calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import (
    app,
    console,
    fail,
    given,
    make_evaluators,
    next_steps,
    settings_of,
)
from evalstress.cli.jobs import execute, job_from, settings_from, wrote_line
from evalstress.cli.options import (
    CacheDirOption,
    ConfigOption,
    DataArgument,
    ForceOption,
    LimitOption,
    MapOption,
    NoCacheOption,
    ProtocolOption,
    QuietOption,
    RunDirOption,
    SeedsOption,
    SuiteOption,
    TaskOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.storage import atomic_write_text
from evalstress.core.strict import check_names
from evalstress.engine.outdir import record_files


def level_specs(judge: str, levels: list[str]) -> list[str]:
    """The judge spec once per level; the spec itself must not fix a level."""
    from evalstress.criteria import LEVELS
    from evalstress.evaluators.base import parse_spec

    name, params = parse_spec(judge)
    if name != "judge":
        raise ValueError(f"--judge takes an LLM judge spec (judge:model=...,base_url=...), "
                         f"not '{name}'")
    if "level" in params:
        raise ValueError("--judge must not set level=: the command runs the judge at every "
                         "level given by --levels")
    check_names("criteria level", levels, LEVELS, "--levels")
    if len(set(levels)) < 2:
        raise ValueError("--levels needs two or more different levels to compare")
    joiner = "," if ":" in judge else ":"
    return [f"{judge}{joiner}level={level}" for level in dict.fromkeys(levels)]


@app.command("criteria-levels")
def criteria_levels_command(
    ctx: typer.Context,
    data: DataArgument = None,
    judge: Annotated[str | None, typer.Option(
        "--judge", "-j", help="The LLM judge (required), without level=: e.g. "
        "'judge:model=m,base_url=URL,"
        "aspect=fluency coherence informativeness' (URL: the server's /v1 address, such as "
        "http://127.0.0.1:8080/v1).")] = None,
    levels: Annotated[str | None, typer.Option(
        help="Comma-separated criteria levels to compare (default: every level: default, "
        "simplified, term, detailed, list, term-only, empty).")] = None,
    suite: SuiteOption = "criteria-rules",
    map_: MapOption = None,
    task: TaskOption = None,
    protocol: ProtocolOption = None,
    seeds: SeedsOption = None,
    limit: LimitOption = None,
    out: RunDirOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
    force: ForceOption = False,
    config: ConfigOption = None,
) -> None:
    """Compare one judge with its criteria at each level of detail (paper 000, fig. 4a and 8).

    Per level: how many should-move items (S_T) pass the directional test and how far their
    scores move, how many should-stay items (S_F) the judge moves anyway, how alike its aspects
    score; and the Pearson correlation between levels. Writes description-types.{svg,html,md}
    beside results.json.

    Example (after `evalstress data examples`): `evalstress criteria-levels
    examples/summaries.jsonl -m hypothesis=highlight --task
    summarization --limit 20 -j 'judge:model=m,base_url=http://127.0.0.1:8080/v1,aspect=fluency
    coherence'`. Paper 000's setting: `--protocol paper` (its fixed rule attacks, one seed) and
    `preset=paper-000` in the judge spec (analyze-rate, temperature 1, 10 samples).
    """
    flags = given(ctx, locals())
    import evalstress.analyses.description_types  # noqa: F401  (registers the analysis)
    from evalstress.job.studysettings import LevelsSettings
    from evalstress.report.levels import levels_html, levels_markdown, levels_svg, levels_tables

    s = settings_of(LevelsSettings, flags, config)
    assert s.data is not None and s.judge is not None  # required: checked by the settings

    wanted = [x.strip() for x in s.levels.split(",") if x.strip()]
    try:
        specs = level_specs(s.judge, wanted)
    except ValueError as exc:
        raise fail(str(exc)) from None
    out_dir = s.out or Path(f"runs/criteria-levels-{s.data.stem}")
    settings = settings_from({"data": s.data, "map": s.map, "task": s.task, "suite": s.suite,
                              "protocol": s.protocol, "seeds": s.seeds, "limit": s.limit,
                              "out": out_dir,
                              "evaluators": specs, "rel_tol": 0.01, "cache_dir": s.cache_dir,
                              "no_cache": s.no_cache, "quiet": True, "force": s.force},
                             face="criteria-levels")
    evaluators = make_evaluators(specs)
    by_label = {ev.label: spec.rsplit("level=", 1)[1] for ev, spec in
                zip(evaluators, specs, strict=True)}
    job = job_from(settings, evaluators=evaluators, analyses=("description-types",),
                   options={"levels": by_label},
                   record={"judge": s.judge, "levels": list(by_label.values())})
    done = execute(job, quiet=True)
    comparison = done.analyses["description-types"]
    title = f"Criteria levels: {s.data.name}"
    atomic_write_text(out_dir / "description-types.svg", levels_svg(comparison))
    atomic_write_text(out_dir / "description-types.html", levels_html(comparison, title))
    atomic_write_text(out_dir / "description-types.md", levels_markdown(comparison))
    record_files(out_dir, ["description-types.svg", "description-types.html",
                           "description-types.md"])  # the run directory's files, as its own
    if not s.quiet:
        for table in levels_tables(comparison):
            console.print(table)
        for note in comparison.notes:
            console.print(f"[dim]note: {note}[/]")
        paths = {"levels": out_dir / "description-types.html", **done.paths}
        print_wrapped(console, wrote_line(paths, ("levels", "report", "results")), hang=2)
    next_steps(out_dir / "description-types.html", ["card", s.judge, "--budget", "small"],
               "the judge's card", quiet=s.quiet)
