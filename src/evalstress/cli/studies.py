"""`evalstress self-bias` and `evalstress correlate`: studies of evaluators beyond the stress
suites (paper 002, sec. 5.4; correlation with human scores)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import (
    app,
    console,
    exit_if_mostly_missing,
    fail,
    make_evaluators,
    owned_out,
    progress_bars,
    reachable,
    score_cache,
)
from evalstress.cli.options import (
    BackboneOption,
    CacheDirOption,
    DataArgument,
    DocumentsArgument,
    DocumentsTaskOption,
    EvaluatorsOption,
    ForceOption,
    LimitOption,
    MapOption,
    MaxMissingOption,
    NoCacheOption,
    OtherSystemsOption,
    OutputsFieldOption,
    QuietOption,
    RunDirOption,
    SeedOption,
    TaskOption,
)
from evalstress.core.data import DataError, load_examples
from evalstress.core.strict import UnknownNameError, check_names
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING, above, frame_missing_shares


@app.command("self-bias")
def self_bias_command(
    data: DataArgument,
    model: BackboneOption,
    kind: Annotated[str, typer.Option(
        help="lm: continuations of each text's first words, scored by GPT-PPL; seq2seq: "
        "summaries of each source, scored by BARTScore faithfulness.")] = "lm",
    map_: MapOption = None,
    task: TaskOption = None,
    evaluator_model: Annotated[list[str] | None, typer.Option(
        "--evaluator-model", help="NAME=PATH: the evaluator of backbone NAME runs on PATH "
        "instead of NAME's generator (paper 002: fine-tuned generator, off-the-shelf "
        "evaluator). Repeatable.")] = None,
    referee: Annotated[list[str] | None, typer.Option(
        "--referee", help="Evaluator spec that owns no system and ranks them all (repeatable), "
        "e.g. 'gpt-ppl:model=PATH' of a larger model.")] = None,
    systems_field: OtherSystemsOption = None,
    prompt_words: Annotated[int, typer.Option(help="lm: words of the prompt.")] = 32,
    max_new_tokens: Annotated[int, typer.Option(help="Tokens each backbone writes.")] = 60,
    seed: SeedOption = 0,
    limit: LimitOption = None,
    out: RunDirOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
    max_missing: MaxMissingOption = None,
    force: ForceOption = False,
) -> None:
    """Self-evaluation bias (paper 002, sec. 5.4): do evaluators favour their own backbone?

    Each backbone writes texts (top-k 50 sampling, or 5-beam summaries) and backs an evaluator;
    every evaluator scores every system, human texts included. Example: `evalstress self-bias
    wikitext.jsonl -m hypothesis=text --task open-ended --model small=PATH_A --model
    large=PATH_B --referee gpt-ppl:model=PATH_C`.
    """
    from evalstress.engine.rundir import fresh_staging
    from evalstress.engine.scoring import configure_caches
    from evalstress.report import write_study_outputs
    from evalstress.studies.selfbias import Backbone, run_self_bias, self_bias_table

    scorers: dict[str, str] = {}  # --evaluator-model: backbone name -> evaluator weights
    for item in evaluator_model or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise fail(f"--evaluator-model '{item}' must look like NAME=PATH")
        scorers[name] = path
    backbones = []
    for item in model:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise fail(f"--model '{item}' must look like NAME=PATH")
        backbones.append(Backbone(name, path, scorers.get(name, "")))
    try:
        check_names("backbone", scorers, [bb.name for bb in backbones], "--evaluator-model")
    except UnknownNameError as exc:
        raise fail(str(exc)) from None
    try:
        examples = load_examples(data, map_, task=task, limit=limit)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    extra: dict[str, dict[str, str]] = {}
    if systems_field:
        for example in examples:
            found = (example.meta or {}).get(systems_field)
            if not isinstance(found, dict):
                raise fail(f"{data}: example '{example.id}', field '{systems_field}': missing or "
                            "not a mapping of system name to text")
            for system, text in found.items():
                extra.setdefault(str(system), {})[example.id] = str(text)
    referees = make_evaluators(list(referee or []))
    reachable(referees)
    out_dir = out or Path(f"runs/self-bias-{data.stem}")
    with owned_out(out_dir, force=force, inputs=[("input data", data)], cache_dir=cache_dir,
                   no_cache=no_cache):
        configure_caches(referees, cache_dir, no_cache)
        try:
            result, texts = run_self_bias(
                examples, backbones, kind=kind, referees=referees, extra_systems=extra,
                prompt_words=prompt_words, max_new_tokens=max_new_tokens, seed=seed,
                cache=score_cache(cache_dir, no_cache),
                progress=progress_bars(enabled=not quiet))
        except ValueError as exc:
            raise fail(str(exc)) from None
        files = fresh_staging(out_dir)
        with files.path("texts.jsonl").open("w", encoding="utf-8") as handle:
            for row in texts:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        config = {"command": "self-bias", "data": str(data), "kind": kind,
                  "models": list(model), "referees": list(referee or []),
                  "evaluator_models": list(evaluator_model or []),
                  "systems_field": systems_field, "seed": seed, "limit": limit}
        paths = write_study_outputs(files, out_dir, config=config,
                                    analyses={"self-bias": result},
                                    counts={"examples": len(examples), "texts": len(texts)},
                                    title=f"evalstress self-bias: {data.name}", force=force)
    if not quiet:
        console.print(self_bias_table(result))
        console.print(f"Wrote {paths['report']}, {paths['results']}, {paths['texts']}")
    cap = DEFAULT_MAX_MISSING if max_missing is None else max_missing
    exit_if_mostly_missing(above(result.missing, cap), cap)


@app.command("correlate")
def correlate_command(
    data: DocumentsArgument,
    evaluator: EvaluatorsOption = None,
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
) -> None:
    """Correlate evaluators with human scores at segment and system level (SummEval layout).

    Defaults fit SummEval's layout, which the example summaries `evalstress data examples`
    copies follow:
    `evalstress correlate examples/summaries.jsonl -e rouge -e bleu -m references=references`.
    Segment level is reported both per document (correlation across systems, averaged over
    documents) and globally (all pairs); system level correlates
    per-system means. CIs: seeded bootstrap over documents. Scores go through the score cache.
    """
    from evalstress.analyses.correlation import human_correlation
    from evalstress.engine.rundir import fresh_staging
    from evalstress.engine.scoring import configure_caches
    from evalstress.job import LEXICAL_DEFAULT
    from evalstress.report import write_study_outputs
    from evalstress.report.terminal import correlation_tables
    from evalstress.studies.correlate import load_system_outputs, score_system_outputs

    bad = [part for part in map_ or [] if "=" not in part or not part.split("=", 1)[0].strip()]
    if bad:
        raise fail(f"--map '{bad[0]}' must look like FIELD=NAME, e.g. -m references=references")
    mapping = dict(part.split("=", 1) for part in (map_ or ["references=references"]))
    try:
        docs = load_system_outputs(data, systems_field=systems_field, text_field=text_field,
                                   system_id_field=system_id_field, id_field=id_field,
                                   human_fields=[h.strip() for h in human.split(",") if h.strip()],
                                   source_field=mapping.get("source", "source"),
                                   reference_fields=[f for f in mapping.get("references", "")
                                                     .split(",") if f], task=task, limit=limit)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    specs = evaluator or LEXICAL_DEFAULT
    evaluators = make_evaluators(list(specs))
    reachable(evaluators)
    out_dir = out or Path(f"runs/correlate-{data.stem}")
    with owned_out(out_dir, force=force, inputs=[("input data", data)], cache_dir=cache_dir,
                   no_cache=no_cache):
        cache = score_cache(cache_dir, no_cache)
        configure_caches(evaluators, cache_dir, no_cache)  # judges answer into the same folder
        try:
            scores, human_frame, stats = score_system_outputs(
                docs, evaluators, cache=cache, progress=progress_bars(enabled=not quiet))
        finally:
            for ev in evaluators:
                ev.close()
        result = human_correlation(scores, human_frame, n_boot=n_boot, seed=seed)
        files = fresh_staging(out_dir)
        scores.to_parquet(files.path("scores.parquet"), index=False)
        config = {"command": "correlate", "data": str(data), "evaluators": list(specs),
                  "human": human, "map": mapping, "n_boot": n_boot, "seed": seed,
                  "limit": limit}
        paths = write_study_outputs(
            files, out_dir, config=config, analyses={"correlation": result},
            counts={"documents": len(docs), "outputs": len(human_frame),
                    "missing_scores": int(scores["score"].isna().sum())},
            extra={"evaluators": stats}, title=f"evalstress correlate: {data.name}",
            force=force)
    if not quiet:
        for table in correlation_tables(result):
            console.print(table)
        console.print(f"Wrote {paths['report']}, {paths['results']}, {paths['scores']}")
    cap = DEFAULT_MAX_MISSING if max_missing is None else max_missing
    exit_if_mostly_missing(above(frame_missing_shares(scores), cap), cap)
