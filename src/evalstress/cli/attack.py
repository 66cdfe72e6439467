"""`evalstress attack`: search for texts an evaluator gets wrong (paper 004, AdvEval) and
compare the baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import (
    MaxMissingOption,
    app,
    console,
    exit_if_mostly_missing,
    fail,
    progress_bars,
    score_cache,
)
from evalstress.core.data import DataError, load_examples
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING


@app.command("attack")
def attack_command(
    data: Annotated[Path, typer.Argument(help="JSONL, CSV or Parquet file of examples.")],
    victim: Annotated[list[str], typer.Option(
        "--victim", "-v", help="Evaluator under attack, repeatable; pick an aspect of a "
        "multi-aspect evaluator with @: rouge@rougeL, bertscore@f, bleu.")],
    gold: Annotated[list[str], typer.Option(
        "--gold", "-g", help="Gold evaluator standing in for human readers, repeatable (several "
        "= their mean): 'judge:model=NAME,base_url=URL' (defaults: scale=0-100, "
        "form=score-only, n=--gold-samples, temperature=0.5).")],
    generator: Annotated[str | None, typer.Option(
        help="LLM that writes candidates (adveval): 'model=NAME,base_url=URL,temperature=1'.")]
    = None,
    method: Annotated[list[str] | None, typer.Option(
        "--method", help="adveval (default), textfooler[:sim=0.84,...], rules, rule:NAME, "
        "appendix-j:model=PATH[,noise=0.2]; repeatable.")] = None,
    direction: Annotated[str, typer.Option(
        help="good (gold high, victim low), bad (gold low, victim high) or both.")] = "both",
    budget: Annotated[int, typer.Option(help="Victim queries per attack.")] = 300,
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
    patience: Annotated[int, typer.Option(
        help="Iterations in a row without a usable candidate before giving up.")] = 3,
    seed: Annotated[int, typer.Option(help="Seed of random starts and sampled positions.")] = 0,
    criteria: Annotated[str | None, typer.Option(
        help="Evaluation criteria for the generator: an aspect name (faithfulness), a file, or "
        "the text itself.")] = None,
    reference: Annotated[str, typer.Option(
        help="What reference-based victims compare with: example (its references) or original "
        "(the original text, as paper 004's code and paper 002 app. J do).")] = "example",
    range_: Annotated[list[str] | None, typer.Option(
        "--range", help="Score range of a victim for the 0-100 scale, NAME=LO:HI (default: "
        "declared range, else min-max over the originals).")] = None,
    map_: Annotated[list[str] | None, typer.Option(
        "--map", "-m", help="Field mapping, e.g. -m hypothesis=highlight -m "
        "references=references.")] = None,
    task: Annotated[str | None, typer.Option(help="Task of rows without a task field.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Attack only the first N examples.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Score and response cache folder.")]
    = None,
    no_cache: Annotated[bool, typer.Option(help="Score and generate everything afresh.")]
    = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars or tables.")] = False,
    max_missing: MaxMissingOption = DEFAULT_MAX_MISSING,
) -> None:
    """Search for texts your evaluator gets wrong (paper 004, AdvEval), and compare baselines.

    For each example, direction and method, a search looks for a text the gold judge rates
    high and the victim low (good) or the reverse (bad), within a budget of victim queries.
    Writes attacks.jsonl (every search with its trajectory), results.json (the ASR table) and
    report.html. Every generation and score is cached: rerun the same command after a crash
    and it goes on where it stopped. Example: `evalstress attack summeval.jsonl -m
    hypothesis=highlight -m references=references --task summarization -v rouge@rougeL -v bleu
    -g 'judge:model=m,base_url=http://127.0.0.1:8080/v1' --generator
    'model=m,base_url=http://127.0.0.1:8080/v1' --method adveval --method textfooler
    --method rules`
    """
    from evalstress.analyses.adversarial import asr_terminal_table
    from evalstress.studies.attack.objective import AttackParams
    from evalstress.studies.attack.setup import build_attacker, close, write_attack_outputs

    try:
        examples = load_examples(data, map_, task=task, limit=limit)
        params = AttackParams(tau_plus=tau_plus, tau_minus=tau_minus, delta=delta, lam=lambda_,
                              budget=budget, candidates=candidates, trajectory=trajectory,
                              max_iterations=max_iterations, gold_samples=gold_samples,
                              stop_threshold=stop_threshold, patience=patience, seed=seed)
        attacker = build_attacker(
            examples, victims=victim, gold=gold, generator=generator,
            methods=method or ["adveval"], direction=direction, params=params,
            criteria=criteria, reference=reference, ranges=range_ or [],
            cache=score_cache(cache_dir, no_cache), cache_dir=cache_dir, no_cache=no_cache,
            progress=progress_bars(enabled=not quiet))
    except (DataError, KeyError, ValueError, ImportError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    out_dir = out or Path(f"runs/attack-{data.stem}")
    try:
        records = attacker.run(out_dir / "attacks.jsonl")
    except ValueError as exc:
        raise fail(str(exc)) from None
    finally:
        close(attacker)
    result = attacker.result(records)
    config = {"command": "attack", "data": str(data), "map": map_, "task": task, "limit": limit,
              "victims": victim, "gold": gold, "generator": generator,
              "methods": method or ["adveval"], "direction": direction,
              "criteria": criteria, "reference": reference, "ranges": range_ or []}
    paths = write_attack_outputs(result, out_dir, config=config)
    if not quiet:
        console.print(asr_terminal_table(result))
        for note in result.notes:
            console.print(f"[dim]note: {note}[/]")
        console.print(f"Wrote {paths['attacks']}, {paths['results']}, {paths['report']}")
    from evalstress.engine.runhealth import above, attack_missing_shares

    shares = attack_missing_shares(records,
                                   attacker.generator.usage if attacker.generator else None)
    exit_if_mostly_missing(above(shares, max_missing), max_missing)
