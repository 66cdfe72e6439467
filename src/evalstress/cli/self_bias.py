"""`evalstress self-bias`: do evaluators favour texts of their own backbone (paper 002,
sec. 5.4)?"""

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
    BackboneOption,
    CacheDirOption,
    ConfigOption,
    DataArgument,
    ForceOption,
    LimitOption,
    MapOption,
    MaxMissingOption,
    NoCacheOption,
    OtherSystemsOption,
    QuietOption,
    RunDirOption,
    SeedOption,
    TaskOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError, load_examples
from evalstress.core.strict import UnknownNameError, check_names
from evalstress.engine.runhealth import above


@app.command("self-bias")
def self_bias_command(
    ctx: typer.Context,
    data: DataArgument = None,
    model: BackboneOption = None,
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
    config: ConfigOption = None,
) -> None:
    """Self-evaluation bias (paper 002, sec. 5.4): do evaluators favour their own backbone?

    Each backbone writes texts (top-k 50 sampling, or 5-beam summaries) and backs an evaluator;
    every evaluator scores every system, human texts included. Example: `evalstress self-bias
    wikitext.jsonl -m hypothesis=text --task open-ended --model small=PATH_A --model
    large=PATH_B --referee gpt-ppl:model=PATH_C`.
    """
    flags = given(ctx, locals())
    from evalstress.engine.rundir import fresh_staging
    from evalstress.engine.scoring import configure_caches
    from evalstress.job.studysettings import SelfBiasSettings
    from evalstress.report import write_study_outputs
    from evalstress.studies.selfbias import Backbone, run_self_bias, self_bias_table

    s = settings_of(SelfBiasSettings, flags, config)
    assert s.data is not None  # required: checked by the settings

    scorers: dict[str, str] = {}  # --evaluator-model: backbone name -> evaluator weights
    for item in s.evaluator_model or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise fail(f"--evaluator-model '{item}' must look like NAME=PATH")
        scorers[name] = path
    backbones = []
    for item in s.model:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise fail(f"--model '{item}' must look like NAME=PATH")
        backbones.append(Backbone(name, path, scorers.get(name, "")))
    try:
        check_names("backbone", scorers, [bb.name for bb in backbones], "--evaluator-model")
    except UnknownNameError as exc:
        raise fail(str(exc)) from None
    try:
        examples = load_examples(s.data, s.map, task=s.task, limit=s.limit)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    extra: dict[str, dict[str, str]] = {}
    if s.systems_field:
        for example in examples:
            found = (example.meta or {}).get(s.systems_field)
            if not isinstance(found, dict):
                raise fail(f"{s.data}: example '{example.id}', field '{s.systems_field}': "
                           "missing or not a mapping of system name to text")
            for system, text in found.items():
                extra.setdefault(str(system), {})[example.id] = str(text)
    referees = make_evaluators(list(s.referee or []))
    reachable(referees)
    out_dir = s.out or Path(f"runs/self-bias-{s.data.stem}")
    with owned_out(out_dir, force=s.force, inputs=[("input data", s.data)], cache_dir=s.cache_dir,
                   no_cache=s.no_cache):
        configure_caches(referees, s.cache_dir, s.no_cache)
        try:
            result, texts = run_self_bias(
                examples, backbones, kind=s.kind, referees=referees, extra_systems=extra,
                prompt_words=s.prompt_words, max_new_tokens=s.max_new_tokens, seed=s.seed,
                cache=score_cache(s.cache_dir, s.no_cache),
                progress=progress_bars(enabled=not s.quiet))
        except ValueError as exc:
            raise fail(str(exc)) from None
        files = fresh_staging(out_dir)
        with files.path("texts.jsonl").open("w", encoding="utf-8") as handle:
            for row in texts:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        record = {"command": "self-bias", "data": str(s.data), "kind": s.kind,
                  "models": list(s.model), "referees": list(s.referee or []),
                  "evaluator_models": list(s.evaluator_model or []),
                  "systems_field": s.systems_field, "seed": s.seed, "limit": s.limit}
        paths = write_study_outputs(files, out_dir, config=record,
                                    analyses={"self-bias": result},
                                    counts={"examples": len(examples), "texts": len(texts)},
                                    title=f"evalstress self-bias: {s.data.name}", force=s.force)
    if not s.quiet:
        console.print(self_bias_table(result))
        print_wrapped(console, f"Wrote {paths['report']}, {paths['results']}, "
                      f"{paths['texts']}", hang=2)
    next_steps(paths["report"], ["correlate", "DOCS.jsonl", "-e", "bleu"],
               "whether an evaluator follows human scores", quiet=s.quiet)
    exit_if_mostly_missing(above(result.missing, s.max_missing), s.max_missing)
