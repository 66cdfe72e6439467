"""`evalstress correlate`: evaluators against human scores of several systems' outputs, at
segment and system level."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from evalstress.cli.common import (
    app,
    console,
    exit_if_mostly_missing,
    fail,
    given,
    make_evaluators,
    next_steps,
    owned_out,
    progress_bars,
    reachable,
    score_cache,
    settings_of,
)
from evalstress.cli.options import (
    CacheDirOption,
    ConfigOption,
    DocumentsArgument,
    DocumentsTaskOption,
    EvaluatorsOption,
    ForceOption,
    LimitOption,
    MapOption,
    MaxMissingOption,
    NoCacheOption,
    OutputsFieldOption,
    PreferencesOption,
    QuietOption,
    RunDirOption,
    SeedOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError
from evalstress.engine.runhealth import above, frame_missing_shares


def agreement_table(block: Mapping[str, Any]) -> Table:
    """The agreement block (`card.agreement`'s rows) as a terminal table."""
    from evalstress.card import agreement as words

    table = Table(*words.HEADERS[:1], "evaluator", *words.HEADERS[1:],
                  title="Agreement with the human raters (tau-b, ordinal alpha on ranks; "
                        "the corrected CI: Holm)")
    for row, cells in zip(block.get("rows") or [], words.table_rows(block), strict=True):
        cells[3] = row["statistic"]  # tau_b or alpha: the title says which alpha
        table.add_row(str(cells[0]), str(row["evaluator"]),
                      *("-" if c is None else f"{c:.3f}" if isinstance(c, float) else str(c)
                        for c in cells[1:]))
    return table


@app.command("correlate")
def correlate_command(
    ctx: typer.Context,
    data: DocumentsArgument = None,
    preferences: PreferencesOption = None,
    evaluators: EvaluatorsOption = None,
    systems_field: OutputsFieldOption = "systems",
    text_field: Annotated[str, typer.Option(help="Field of an output holding its text.")]
    = "summary",
    system_id_field: Annotated[str, typer.Option(help="Field of an output naming its system.")]
    = "system",
    id_field: Annotated[str, typer.Option(help="Field of a document holding its id.")] = "id",
    human: Annotated[str, typer.Option(help="Comma-separated human score fields of an output.")]
    = "coherence,consistency,fluency,relevance",
    map_: MapOption = None,
    task: DocumentsTaskOption = "summarization",
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples for the CIs.")] = 1000,
    seed: SeedOption = 0,
    limit: LimitOption = None,
    out: RunDirOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
    max_missing: MaxMissingOption = None,
    force: ForceOption = False,
    config: ConfigOption = None,
) -> None:
    """Correlate evaluators with human scores at segment and system level (SummEval layout).

    Defaults fit SummEval's layout, which the example summaries `evalstress data examples`
    copies follow:
    `evalstress correlate examples/summaries.jsonl -e rouge -e bleu -m references=references`.
    Segment level is reported both per document (correlation across systems, averaged over
    documents) and globally (all pairs); system level correlates
    per-system means. CIs: seeded bootstrap over documents. Beside them, the agreement block:
    Kendall tau-b and Krippendorff's alpha at item and system level, Holm-corrected per
    evaluator. Scores go through the score cache.
    """
    flags = given(ctx, locals())
    from evalstress.analyses.agreement import agreement
    from evalstress.analyses.correlation import human_correlation
    from evalstress.engine.rundir import fresh_staging
    from evalstress.engine.scoring import configure_caches
    from evalstress.job.studysettings import CorrelateSettings
    from evalstress.report import write_study_outputs
    from evalstress.report.terminal import correlation_tables
    from evalstress.studies.correlate import load_system_outputs, score_system_outputs

    s = settings_of(CorrelateSettings, flags, config)
    if s.data is None and s.preferences is None:
        raise fail("DATA is required: give it on the command line or in the --config file "
                   "(documents with scored system outputs), or give --preferences FILE (pairs "
                   "of outputs with the human preference)")
    if s.data is None:
        assert s.preferences is not None
        correlate_preferences(s.preferences, s)
        return

    bad = [part for part in s.map or [] if "=" not in part or not part.split("=", 1)[0].strip()]
    if bad:
        raise fail(f"--map '{bad[0]}' must look like FIELD=NAME, e.g. -m references=references")
    mapping = dict(part.split("=", 1) for part in (s.map or ["references=references"]))
    try:
        docs = load_system_outputs(s.data, systems_field=s.systems_field,
                                   text_field=s.text_field,
                                   system_id_field=s.system_id_field, id_field=s.id_field,
                                   human_fields=[h.strip() for h in s.human.split(",")
                                                 if h.strip()],
                                   source_field=mapping.get("source", "source"),
                                   reference_fields=[f for f in mapping.get("references", "")
                                                     .split(",") if f], task=s.task, limit=s.limit)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    specs = s.evaluators
    made = make_evaluators(list(specs))
    reachable(made)
    out_dir = s.out or Path(f"runs/correlate-{s.data.stem}")
    with owned_out(out_dir, force=s.force, inputs=[("input data", s.data)], cache_dir=s.cache_dir,
                   no_cache=s.no_cache):
        cache = score_cache(s.cache_dir, s.no_cache)
        configure_caches(made, s.cache_dir, s.no_cache)  # judges answer into the same folder
        try:
            scores, human_frame, stats = score_system_outputs(
                docs, made, cache=cache, progress=progress_bars(enabled=not s.quiet))
        finally:
            for ev in made:
                ev.close()
        result = human_correlation(scores, human_frame, n_boot=s.n_boot, seed=s.seed)
        result.agreement = agreement(scores, human_frame, n_boot=s.n_boot,
                                     seed=s.seed).to_dict()
        files = fresh_staging(out_dir)
        scores.to_parquet(files.path("scores.parquet"), index=False)
        record = {"command": "correlate", "data": str(s.data), "evaluators": list(specs),
                  "human": s.human, "map": mapping, "n_boot": s.n_boot, "seed": s.seed,
                  "limit": s.limit}
        paths = write_study_outputs(
            files, out_dir, config=record, analyses={"correlation": result},
            counts={"documents": len(docs), "outputs": len(human_frame),
                    "missing_scores": int(scores["score"].isna().sum())},
            extra={"evaluators": stats}, title=f"evalstress correlate: {s.data.name}",
            force=s.force)
    if not s.quiet:
        for table in correlation_tables(result):
            console.print(table)
        console.print(agreement_table(result.agreement))
        print_wrapped(console, f"Wrote {paths['report']}, {paths['results']}, "
                      f"{paths['scores']}", hang=2)
    next_steps(paths["report"], ["card", (list(specs) or ["bleu"])[0], "--budget", "small"],
               "where else the evaluator can be trusted", quiet=s.quiet)
    exit_if_mostly_missing(above(frame_missing_shares(scores), s.max_missing), s.max_missing)


def preference_table(result: Mapping[str, Any]) -> Table:
    """The preference block as a terminal table: each test's accuracy, corrected item
    interval and verdict (card.md has every column)."""
    from evalstress.card.agreement import PREFERENCE_VERDICTS, bounds, level_share

    table = Table("evaluator", "aspect", "human", "reading", "pairs", "accuracy",
                  "corrected CI", "verdict",
                  title="Agreement with the human preferences (chance 0.5; Holm, items drawn)")
    for r in result.get("rows") or []:
        table.add_row(str(r["evaluator"]), str(r["aspect"]), str(r["human"]), str(r["reading"]),
                      str(r["pairs"]), "-" if r["accuracy"] is None else f"{r['accuracy']:.3f}",
                      f"{bounds(r.get('low'), r.get('high'))} ({level_share(r['conf'])})",
                      PREFERENCE_VERDICTS.get(r["verdict"], r["verdict"]))
    return table


def correlate_preferences(path: Path, s: Any) -> None:
    """`correlate --preferences FILE` without DATA: every evaluator against the pairs."""
    from evalstress.core.preferences import load_preferences
    from evalstress.engine.rundir import fresh_staging
    from evalstress.engine.scoring import configure_caches
    from evalstress.report import write_study_outputs
    from evalstress.studies.preference import preference_study

    try:
        data = load_preferences(path)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    specs = s.evaluators
    made = make_evaluators(list(specs))
    reachable(made)
    out_dir = s.out or Path(f"runs/correlate-{path.stem}")
    with owned_out(out_dir, force=s.force, inputs=[("preference data", path)],
                   cache_dir=s.cache_dir, no_cache=s.no_cache):
        cache = score_cache(s.cache_dir, s.no_cache)
        configure_caches(made, s.cache_dir, s.no_cache)
        try:
            result, cost, missing = preference_study(made, data, cache=cache,
                                            progress=progress_bars(enabled=not s.quiet),
                                            n_boot=s.n_boot, seed=s.seed)
        finally:
            for ev in made:
                ev.close()
        block = result.to_dict()
        block["data"] = data.describe()
        files = fresh_staging(out_dir)
        record = {"command": "correlate", "preferences": str(path), "evaluators": list(specs),
                  "n_boot": s.n_boot, "seed": s.seed}
        paths = write_study_outputs(
            files, out_dir, config=record, analyses={"preference": result},
            counts={"pairs": result.pairs, "items": result.items},
            extra={"evaluators": cost}, title=f"evalstress correlate: {path.name}",
            force=s.force)
    if not s.quiet:
        console.print(preference_table(block))
        for note in block["notes"]:
            print_wrapped(console, note, hang=2)
        print_wrapped(console, f"Wrote {paths['report']}, {paths['results']}", hang=2)
    next_steps(paths["report"], ["card", (list(specs) or ["bleu"])[0], "--preferences",
                                 str(path), "--budget", "small"],
               "where else the evaluator can be trusted", quiet=s.quiet)
    exit_if_mostly_missing(above(missing, s.max_missing), s.max_missing)
