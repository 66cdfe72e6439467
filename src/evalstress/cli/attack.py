"""`evalstress attack`: search for texts an evaluator gets wrong (paper 004, AdvEval) and
compare the baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import (
    app,
    console,
    exit_if_mostly_missing,
    fail,
    given,
    next_steps,
    owned_out,
    progress_bars,
    score_cache,
    settings_of,
)
from evalstress.cli.options import (
    CacheDirOption,
    ConfigOption,
    DataArgument,
    ForceOption,
    GeneratorOption,
    GoldsOption,
    LimitOption,
    MapOption,
    MaxMissingOption,
    NoCacheOption,
    ProtocolOption,
    QueryBudgetOption,
    QuietOption,
    ReferenceModeOption,
    RunDirOption,
    SeedOption,
    TaskOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError, load_examples
from evalstress.engine.runhealth import above


@app.command("attack")
def attack_command(
    ctx: typer.Context,
    data: DataArgument = None,
    victim: Annotated[list[str] | None, typer.Option(
        "--victim", "-v", help="Evaluator under attack (required), repeatable; pick an aspect "
        "of a multi-aspect evaluator with @: rouge@rougeL, bertscore@f, bleu.")] = None,
    gold: GoldsOption = None,
    generator: GeneratorOption = None,
    method: Annotated[list[str] | None, typer.Option(
        "--method", help="adveval (default), adveval-victim (guided by the victim alone), "
        "textfooler[:sim=0.84,vectors=FILE,...], bert-attack:model=PATH, rules, rule:NAME, "
        "appendix-j:model=PATH[,noise=0.2]; repeatable.")] = None,
    direction: Annotated[str, typer.Option(
        help="good (gold high, victim low), bad (gold low, victim high) or both.")] = "both",
    budget: QueryBudgetOption = None,
    candidates: Annotated[int, typer.Option(help="Candidates per iteration (adveval).")] = 8,
    trajectory: Annotated[int, typer.Option(help="Best candidates shown to the generator.")]
    = 10,
    max_iterations: Annotated[int, typer.Option(help="Iterations per search (adveval).")] = 30,
    gold_samples: Annotated[int, typer.Option(help="Ratings averaged per gold score.")] = 8,
    tau_plus: Annotated[float, typer.Option(help="Gold score a good text needs (0-100).")]
    = 70.0,
    tau_minus: Annotated[float, typer.Option(help="Gold score a bad text stays under.")] = 30.0,
    delta: Annotated[float, typer.Option(help="Gap between gold and victim for a success.")]
    = 40.0,
    lambda_: Annotated[float, typer.Option(
        "--lambda", help="Weight of the gold score in the feedback S (paper 004 eq. 2).")] = 1.0,
    stop_threshold: Annotated[float | None, typer.Option(
        help="Stop when S exceeds this (80 in paper 004's code).")] = 80.0,
    patience: Annotated[int | None, typer.Option(
        help="Iterations in a row without a usable candidate before giving up (default 3; 1 "
        "under --protocol paper, which counts only iterations without a parseable text).")]
    = None,
    rescore_final: Annotated[bool | None, typer.Option(
        "--rescore-final/--no-rescore-final",
        help="Ask the gold again, on fresh samples, about the text an adveval search returns "
        "and judge eq. 3 on that rating (paper 004's code; on under --protocol paper).")]
    = None,
    seed: SeedOption = 0,
    protocol: ProtocolOption = None,
    stop_rule: Annotated[str | None, typer.Option(
        help="first-success (default: stop at the first eq. 3 success and return it) or "
        "highest-feedback (paper 004: stop at S > --stop-threshold or the last iteration, "
        "return the highest S and judge that text).")] = None,
    criteria: Annotated[str | None, typer.Option(
        help="Evaluation criteria for the generator: an aspect name (faithfulness), a file, or "
        "the text itself.")] = None,
    reference: ReferenceModeOption = None,
    range_: Annotated[list[str] | None, typer.Option(
        "--range", help="Score range of a victim for the 0-100 scale, NAME=LO:HI (default: a "
        "--scale-reference named for it, under --protocol paper the map of paper 004's code "
        "where it has one, its declared range, a shared --scale-reference, else min-max over "
        "the originals, which the report warns about).")] = None,
    scale_reference: Annotated[list[str] | None, typer.Option(
        help="[NAME=]FILE of examples (read like DATA) whose scores fix a victim's 0-100 scale "
        "at --scale-percentiles: FILE for every victim without a declared range, NAME=FILE for "
        "one victim; repeatable.")] = None,
    scale_percentiles: Annotated[str, typer.Option(
        help="Percentiles of a --scale-reference's scores that map to 0 and 100.")] = "5:95",
    map_: MapOption = None,
    task: TaskOption = None,
    limit: LimitOption = None,
    out: RunDirOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
    max_missing: MaxMissingOption = None,
    force: ForceOption = False,
    config: ConfigOption = None,
) -> None:
    """Search for texts your evaluator gets wrong (paper 004, AdvEval), and compare baselines.

    For each example, direction and method, a search looks for a text the gold judge rates
    high and the victim low (good) or the reverse (bad), within a budget of victim queries.
    Writes attacks.jsonl (every search with its trajectory), results.json (the ASR table) and
    report.html. Every generation and score is cached: rerun the same command after a crash
    and it goes on where it stopped. Example, after `evalstress data examples`: `evalstress
    attack examples/summaries.jsonl -m hypothesis=highlight -m references=references --task
    summarization -v rouge@rougeL -v bleu
    -g 'judge:model=m,base_url=http://127.0.0.1:8080/v1' --generator
    'model=m,base_url=http://127.0.0.1:8080/v1' --method adveval --method textfooler
    --method rules`
    """
    flags = given(ctx, locals())
    from evalstress.job.attack import run_attack_study
    from evalstress.job.studysettings import AttackSettings
    from evalstress.report.terminal import print_analyses
    from evalstress.studies.attack.objective import AttackParams
    from evalstress.studies.attack.protocol import resolve
    from evalstress.studies.attack.setup import build_attacker, parse_scale_references

    s = settings_of(AttackSettings, flags, config)
    assert s.data is not None  # required: checked by the settings
    out_dir = s.out or Path(f"runs/attack-{s.data.stem}")
    with owned_out(out_dir, force=s.force, inputs=[("input data", s.data)],
                   cache_dir=s.cache_dir, no_cache=s.no_cache):
        try:
            examples = load_examples(s.data, s.map, task=s.task, limit=s.limit)
            chosen = resolve(s.protocol, stop_rule=s.stop_rule, reference=s.reference,
                             patience=s.patience, generator=s.generator,
                             rescore_final=s.rescore_final)
            params = AttackParams(
                tau_plus=s.tau_plus, tau_minus=s.tau_minus, delta=s.delta, lam=s.lambda_,
                budget=s.budget, candidates=s.candidates, trajectory=s.trajectory,
                max_iterations=s.max_iterations, gold_samples=s.gold_samples,
                stop_threshold=s.stop_threshold, patience=chosen.patience, seed=s.seed,
                stop_rule=chosen.stop_rule, protocol=chosen.protocol,
                rescore_final=chosen.rescore_final)
            attacker = build_attacker(
                examples, victims=s.victim, gold=s.gold, generator=chosen.generator,
                methods=s.method or ["adveval"], direction=s.direction, params=params,
                criteria=s.criteria, reference=chosen.reference, ranges=s.range_ or [],
                scale_references=parse_scale_references(
                    s.scale_reference or [], field_map=s.map, task=s.task,
                    percentiles=s.scale_percentiles),
                cache=score_cache(s.cache_dir, s.no_cache), cache_dir=s.cache_dir,
                no_cache=s.no_cache, progress=progress_bars(enabled=not s.quiet))
        except (DataError, KeyError, ValueError, ImportError) as exc:
            raise fail(str(exc.args[0] if exc.args else exc)) from None
        record = {"command": "attack", "data": str(s.data), "map": s.map, "task": s.task,
                  "limit": s.limit, "victims": s.victim, "gold": s.gold,
                  "generator": s.generator, "methods": s.method or ["adveval"],
                  "direction": s.direction, "criteria": s.criteria,
                  "reference": chosen.reference, "ranges": s.range_ or [],
                  "protocol": attacker.protocol, "scale_references": s.scale_reference or [],
                  "scale_percentiles": s.scale_percentiles}
        try:
            study = run_attack_study(attacker, out_dir, config=record, force=s.force)
        except ValueError as exc:
            raise fail(str(exc)) from None
        if not s.quiet:
            print_analyses(console, {"adversarial": study.result})
            paths = study.paths
            print_wrapped(console, f"Wrote {paths['attacks']}, {paths['results']}, "
                          f"{paths['report']}", hang=2)
        next_steps(study.paths["report"], ["card", s.victim[0], "--gold", s.gold[0], "--budget",
                                           "small"],
                   "the victim's card, the attack one of its methods", quiet=s.quiet)

    exit_if_mostly_missing(above(study.missing, s.max_missing), s.max_missing)
