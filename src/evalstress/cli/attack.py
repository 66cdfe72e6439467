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
    owned_out,
    progress_bars,
    score_cache,
)
from evalstress.cli.options import (
    CacheDirOption,
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
from evalstress.core.data import DataError, load_examples
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING, above


@app.command("attack")
def attack_command(
    data: DataArgument,
    victim: Annotated[list[str], typer.Option(
        "--victim", "-v", help="Evaluator under attack, repeatable; pick an aspect of a "
        "multi-aspect evaluator with @: rouge@rougeL, bertscore@f, bleu.")],
    gold: GoldsOption,
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
    from evalstress.job.attack import run_attack_study
    from evalstress.report.terminal import print_analyses
    from evalstress.studies.attack.objective import AttackParams
    from evalstress.studies.attack.protocol import resolve
    from evalstress.studies.attack.setup import build_attacker, parse_scale_references

    out_dir = out or Path(f"runs/attack-{data.stem}")
    with owned_out(out_dir, force=force, inputs=[("input data", data)], cache_dir=cache_dir,
                   no_cache=no_cache):
        try:
            examples = load_examples(data, map_, task=task, limit=limit)
            chosen = resolve(protocol, stop_rule=stop_rule, reference=reference,
                             patience=patience, generator=generator,
                             rescore_final=rescore_final)
            params = AttackParams(
                tau_plus=tau_plus, tau_minus=tau_minus, delta=delta, lam=lambda_, budget=budget,
                candidates=candidates, trajectory=trajectory, max_iterations=max_iterations,
                gold_samples=gold_samples, stop_threshold=stop_threshold,
                patience=chosen.patience, seed=seed, stop_rule=chosen.stop_rule,
                protocol=chosen.protocol, rescore_final=chosen.rescore_final)
            attacker = build_attacker(
                examples, victims=victim, gold=gold, generator=chosen.generator,
                methods=method or ["adveval"], direction=direction, params=params,
                criteria=criteria, reference=chosen.reference, ranges=range_ or [],
                scale_references=parse_scale_references(
                    scale_reference or [], field_map=map_, task=task,
                    percentiles=scale_percentiles),
                cache=score_cache(cache_dir, no_cache), cache_dir=cache_dir, no_cache=no_cache,
                progress=progress_bars(enabled=not quiet))
        except (DataError, KeyError, ValueError, ImportError) as exc:
            raise fail(str(exc.args[0] if exc.args else exc)) from None
        config = {"command": "attack", "data": str(data), "map": map_, "task": task,
                  "limit": limit, "victims": victim, "gold": gold, "generator": generator,
                  "methods": method or ["adveval"], "direction": direction,
                  "criteria": criteria, "reference": chosen.reference,
                  "ranges": range_ or [], "protocol": attacker.protocol,
                  "scale_references": scale_reference or [], "scale_percentiles": scale_percentiles}
        try:
            study = run_attack_study(attacker, out_dir, config=config, force=force)
        except ValueError as exc:
            raise fail(str(exc)) from None
        if not quiet:
            print_analyses(console, {"adversarial": study.result})
            paths = study.paths
            console.print(f"Wrote {paths['attacks']}, {paths['results']}, {paths['report']}")

    cap = DEFAULT_MAX_MISSING if max_missing is None else max_missing
    exit_if_mostly_missing(above(study.missing, cap), cap)
