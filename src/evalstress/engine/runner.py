"""Run a suite: the streaming pipeline from examples to a run directory, and the dry run's
estimate of what scoring would cost.

`run` streams: it works in chunks of examples and writes each chunk's variants and scores to
disk (see `pipeline.py`), so memory does not grow with the dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example
from evalstress.core.records import Progress
from evalstress.core.text import TextParser
from evalstress.engine.generation import GenerationSetup
from evalstress.engine.pipeline import ChunkPolicy, StreamingRun, execution_sizes
from evalstress.engine.planning import long_rows
from evalstress.engine.replay import UnitReplay
from evalstress.engine.result import Plan, RunResult
from evalstress.engine.scoring import evaluator_usage, request_for
from evalstress.evaluators.base import Evaluator, ScoreRequest
from evalstress.suites import Suite


def run(examples: Sequence[Example], suite: Suite, evaluators: Sequence[Evaluator], *,
        cache: SQLiteCache | None = None, parser: TextParser | None = None,
        resources: dict[str, Any] | None = None, progress: Progress | None = None,
        workdir: str | Path | None = None, chunk_size: int | None = None, workers: int = 1,
        generation: GenerationSetup | None = None, policy: ChunkPolicy | None = None,
        pool: Sequence[Example] | None = None, replay: UnitReplay | None = None) -> RunResult:
    """The whole flow short of analysis, streamed chunk by chunk (see `pipeline.py`).

    `workdir` is the staging folder (a run killed there resumes at its first unfinished chunk);
    without one, a temporary folder that lives as long as the result. `workers` > 1 runs rule
    perturbations and CPU-bound evaluators in that many processes (0: every core), with the same
    results. `generation` is the generation stage (LLM-written and imported variants, see
    `evalstress.engine.generation`); `policy` can stop units early (the sequential DHP design). `pool`
    is the dataset perturbations may borrow from (default: `examples`; a shard of a larger run
    passes the whole dataset). `replay` holds rule and model-made units made elsewhere (the Ray
    shards): they are looked up instead of made again."""
    processes, chunk = execution_sizes(len(examples), workers, chunk_size)
    result = StreamingRun(examples, suite, evaluators, cache=cache, parser=parser,
                          resources=resources, progress=progress,
                          workdir=Path(workdir) if workdir is not None else None,
                          chunk_size=chunk, workers=processes,
                          generation=generation, policy=policy, pool=pool,
                          replay=replay).run()
    if generation is not None:
        result.plan.generation = generation.block_json(result.summary.get("generation") or {})
    result.usage = evaluator_usage(evaluators)
    return result


def estimate_plan(plan: Plan, evaluators: Sequence[Evaluator], *,
                  cache: SQLiteCache | None = None,
                  todo_out: dict[str, list[ScoreRequest]] | None = None
                  ) -> list[dict[str, Any]]:
    """What scoring the plan would cost, without scoring: per evaluator the distinct texts, the
    ones already in the score cache, and (via an optional `estimate(requests)`) calls and tokens.
    Evaluators without `estimate` count one call per batch of uncached texts. `todo_out`, when
    given, receives each evaluator's uncached requests by label (the card's dry run measures
    the evaluator's rate on some of them)."""
    by_id = {e.id: e for e in plan.examples}
    too_long = long_rows(plan.examples, plan.suite)
    requests = [request_for(e, e.hypothesis) for e in plan.examples if e.id not in too_long]
    requests += [request_for(by_id[v.example_id], v.text) for v in plan.variants]
    unique = {r.key: r for r in requests}
    out = []
    for evaluator in evaluators:
        row: dict[str, Any] = {"evaluator": evaluator.label, "requested": len(requests),
                               "distinct": len(unique)}
        if evaluator.level == "corpus":
            row.update(todo=len({(v.perturbation, str(v.severity), v.seed)
                                 for v in plan.variants}) + 1, calls=None)
            out.append(row)
            continue
        found = cache.get_many(evaluator.cache_namespace, list(unique)) if cache else {}
        todo = [r for k, r in unique.items() if k not in found]
        row.update(score_cached=len(found), todo=len(todo))
        if todo_out is not None:
            todo_out[evaluator.label] = todo
        estimate = getattr(evaluator, "estimate", None)
        if callable(estimate):
            row.update(estimate(todo))
        else:
            size = max(1, evaluator.batch_size)
            row.update(calls=-(-len(todo) // size))
        out.append(row)
    return out
