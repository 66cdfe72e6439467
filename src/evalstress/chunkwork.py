"""The work of one chunk of examples: rule perturbations, CPU-bound scoring, word diffs.

The same `ChunkWorker.process` runs in the runner's own process (`--workers 1`) and in each
worker process of the pool, so pooled and serial runs produce the same variants, scores and files.
A worker owns its parser and its evaluators (rebuilt from their spec), reads and writes the
shared SQLite score cache itself, and returns what the parent writes: rows as columns, the
variants' JSONL lines (diffs included) and the skips.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from evalstress.cache import SQLiteCache
from evalstress.data import Example
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow
from evalstress.perturb.base import PerturbContext, Skip, Variant
from evalstress.redact import redact
from evalstress.scoretable import ScoreColumns
from evalstress.suites import Suite
from evalstress.text import TextParser, length_skip, max_chars_option
from evalstress.worddiff import word_diff

ORIGINAL = "original"
Unit = tuple[str, str]  # (perturbation name, severity as string)


def is_stopped(stopped: frozenset[tuple[str, ...]] | None, task: str, name: str,
               severity: Any) -> bool:
    """Whether a unit is left out: listed as (perturbation, severity) or (task, perturbation,
    severity), the severity as a string."""
    if not stopped:
        return False
    return (name, str(severity)) in stopped or (task, name, str(severity)) in stopped


def default_workers() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class EvaluatorRecipe:
    """How a worker process rebuilds an evaluator: its class and constructor parameters."""

    cls: type[Evaluator]
    params: dict[str, Any]
    spec_params: dict[str, Any]

    def build(self) -> Evaluator:
        evaluator = self.cls(**self.params)
        evaluator.spec_params = dict(self.spec_params)
        return evaluator


def recipe_for(evaluator: Evaluator) -> EvaluatorRecipe | None:
    """A recipe that rebuilds `evaluator` with the same signature, or None if none does."""
    for params in (evaluator.spec_params, evaluator.params):
        try:
            rebuilt = type(evaluator)(**params)
        except Exception:
            continue
        if rebuilt.cache_namespace == evaluator.cache_namespace:
            return EvaluatorRecipe(type(evaluator), dict(params), dict(evaluator.spec_params))
    return None


@dataclass
class ChunkTask:
    index: int
    positions: list[int]  # the chunk's examples, as positions in the run's example list
    extra_variants: list[Variant] = field(default_factory=list)  # made by the parent (LLM)
    stopped: frozenset[tuple[str, ...]] | None = None  # units left out (sequential design)
    return_variants: bool = False


@dataclass
class EvaluatorStats:
    requested: int = 0  # score rows the table needs
    distinct: int = 0  # distinct texts (with context) among them
    cached: int = 0  # found in the cache
    scored: int = 0  # sent to the evaluator
    calls: int = 0  # batches sent
    missing: int = 0  # rows with at least one missing aspect
    truncated: int = 0  # distinct inputs cut to the model's window (Score.extra["truncated"])

    def add(self, other: EvaluatorStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class ChunkOutcome:
    index: int
    skips: list[tuple[str, str, Any, int, str]]
    variant_lines: str
    variant_count: int
    rows: dict[str, ScoreColumns]
    stats: dict[str, EvaluatorStats]
    parses: int
    variants: list[Variant] | None = None


def request_for(example: Example, text: str) -> ScoreRequest:
    return ScoreRequest(text, example.source, example.references, example.task)


def severity_ranks(suite: Suite) -> dict[Unit, int]:
    return {(p.name, str(s)): i for p in suite.perturbations for i, s in enumerate(p.grid)}


def add_rows(out: ScoreColumns, evaluator: Evaluator, base: dict[str, Any], row: ScoreRow) -> int:
    """Append one row per aspect; returns how many are missing."""
    missing = 0
    for aspect in evaluator.aspects:
        score = row.get(aspect) or Score.missing("the evaluator returned no score for this aspect")
        missing += not score.ok
        out.append(**base, evaluator=evaluator.label, aspect=aspect,
                   score=score.value if score.ok else float("nan"),
                   higher_is_better=evaluator.higher_is_better(aspect),
                   status="ok" if score.ok else "missing", reason=redact(score.reason or ""))
    return missing


def score_rows(evaluator: Evaluator, examples: Sequence[Example], variants: Sequence[Variant],
               ranks: dict[Unit, int], cache: SQLiteCache | None,
               progress: Any = None) -> tuple[ScoreColumns, EvaluatorStats]:
    """Score a chunk's originals and variants with one evaluator; its rows and stats."""
    from evalstress.runner import Scorer

    by_id = {e.id: e for e in examples}
    originals = [request_for(e, e.hypothesis) for e in examples]
    noised = [request_for(by_id[v.example_id], v.text) for v in variants]
    scorer = Scorer(evaluator, cache, progress)
    scores = scorer.score([*originals, *noised])
    out = ScoreColumns()
    missing = 0
    for example, request in zip(examples, originals, strict=True):
        missing += add_rows(out, evaluator, {
            "example_id": example.id, "task": example.task, "perturbation": ORIGINAL,
            "severity": "", "severity_rank": -1, "seed": -1, "noise_ratio": 0.0},
            scores[request.key])
    for variant, request in zip(variants, noised, strict=True):
        severity = str(variant.severity)
        missing += add_rows(out, evaluator, {
            "example_id": variant.example_id, "task": by_id[variant.example_id].task,
            "perturbation": variant.perturbation, "severity": severity,
            "severity_rank": ranks.get((variant.perturbation, severity), 0), "seed": variant.seed,
            "noise_ratio": variant.noise_ratio}, scores[request.key])
    stats = EvaluatorStats(**vars(scorer.stats))
    stats.missing = missing
    end_chunk = getattr(evaluator, "end_chunk", None)
    if callable(end_chunk):
        end_chunk()  # per-example memos (references) of this chunk are not needed again
    return out, stats


def long_rows(examples: Sequence[Example], suite: Suite) -> dict[str, str]:
    """Skip reasons of the rows whose text is beyond the run's length limit (suite option
    `max_chars`), by row id: they are neither parsed, perturbed nor scored."""
    limit = max_chars_option(suite.options)
    reasons = {e.id: length_skip(e.id, e.hypothesis, limit) for e in examples}
    return {row: reason for row, reason in reasons.items() if reason is not None}


def scored_examples(examples: Sequence[Example], variants: Sequence[Variant],
                    stopped: frozenset[tuple[str, ...]] | None,
                    too_long: Mapping[str, str] | None = None) -> list[Example]:
    """Examples whose originals are scored: all within the length limit, unless units were
    stopped (the sequential design), then only those with a variant left in the chunk."""
    if stopped is None:
        return [e for e in examples if not too_long or e.id not in too_long]
    keep = {v.example_id for v in variants}
    return [e for e in examples if e.id in keep]


def variant_line(variant: Variant, original: str) -> str:
    row: dict[str, Any] = {
        "id": variant.id, "example_id": variant.example_id, "perturbation": variant.perturbation,
        "severity": variant.severity, "seed": variant.seed, "noise_ratio": variant.noise_ratio,
        "text": variant.text, "diff": word_diff(original, variant.text),
    }
    if variant.provenance:  # LLM-written or imported: how the text was made
        row.update(method=variant.provenance.get("method"), provenance=dict(variant.provenance))
    return json.dumps(row, ensure_ascii=False) + "\n"


class ChunkWorker:
    """Plans rule perturbations and scores CPU-bound evaluators for chunks of one run."""

    def __init__(self, suite: Suite, examples: Sequence[Example], pool: Sequence[Example],
                 resources: dict[str, Any], evaluators: Sequence[Evaluator],
                 cache: SQLiteCache | None, parser: TextParser | None = None, *,
                 parent_names: frozenset[str] = frozenset()):
        self.suite = suite
        # plans the parent process makes (LLM-written, imported, model-made): never here
        self.parent_names = parent_names
        self.examples = examples  # chunk positions index this list
        self.pool = pool  # the dataset perturbations may borrow from
        self.resources = resources
        self.evaluators = list(evaluators)
        self.cache = cache
        self.parser = parser or TextParser()
        self.ranks = severity_ranks(suite)

    def plan(self, examples: Sequence[Example], stopped: frozenset[tuple[str, ...]] | None
             ) -> tuple[list[Variant], list[tuple[str, str, Any, int, str]], int]:
        before = self.parser.parses
        too_long = long_rows(examples, self.suite)
        self.parser.parse_many([e.hypothesis for e in examples if e.id not in too_long])
        variants: list[Variant] = []
        skips: list[tuple[str, str, Any, int, str]] = []
        for example in examples:
            ctx = PerturbContext(example, self.parser, self.pool, self.resources)
            for plan, severity, seed in self.suite.units(example.task):
                if plan.perturbation.method != "rule" or plan.name in self.parent_names:
                    continue  # LLM-written, imported and model-made variants: the parent
                if is_stopped(stopped, example.task, plan.name, severity):
                    continue
                if example.id in too_long:
                    skips.append((example.id, plan.name, severity, seed, too_long[example.id]))
                    continue
                result = plan.perturbation.apply(ctx, severity, seed)
                if isinstance(result, Skip):
                    skips.append((example.id, plan.name, severity, seed, result.reason))
                else:
                    variants.append(result)
        parses = self.parser.parses - before
        forget = getattr(self.parser, "forget", None)
        if callable(forget):
            forget()  # parses of this chunk are not needed again: memory stays flat
        return variants, skips, parses

    def process(self, task: ChunkTask) -> ChunkOutcome:
        examples = [self.examples[i] for i in task.positions]
        variants, skips, parses = self.plan(examples, task.stopped)
        variants.extend(task.extra_variants)
        scored = scored_examples(examples, variants, task.stopped,
                                 long_rows(examples, self.suite))
        rows: dict[str, ScoreColumns] = {}
        stats: dict[str, EvaluatorStats] = {}
        for evaluator in self.evaluators:
            rows[evaluator.label], stats[evaluator.label] = score_rows(
                evaluator, scored, variants, self.ranks, self.cache)
        originals = {e.id: e.hypothesis for e in examples}
        lines = "".join(variant_line(v, originals[v.example_id]) for v in variants)
        return ChunkOutcome(task.index, skips, lines, len(variants), rows, stats, parses,
                            variants if task.return_variants else None)


# --- worker processes ----------------------------------------------------------------------

_WORKER: ChunkWorker | None = None


@dataclass
class WorkerSpec:
    suite: Suite
    examples: list[Example]
    pool: list[Example]
    resources: dict[str, Any]
    evaluators: list[EvaluatorRecipe]
    cache_path: str | None
    cache_table: str
    parent_names: frozenset[str] = frozenset()


def _init_worker(spec: WorkerSpec) -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group: the parent decides, and terminates the pool
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # one thread per worker: native thread pools (fastchrf's rayon) would otherwise start a
    # thread per core in every worker and fight the pool for the same cores
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    cache = SQLiteCache(spec.cache_path, spec.cache_table) if spec.cache_path else None
    _WORKER = ChunkWorker(spec.suite, spec.examples, spec.pool, spec.resources,
                          [r.build() for r in spec.evaluators], cache,
                          parent_names=spec.parent_names)


def _process(task: ChunkTask) -> ChunkOutcome:
    assert _WORKER is not None, "worker process not initialised"
    return _WORKER.process(task)


class ChunkExecutor:
    """Runs chunk tasks in this process, or in a pool of `workers` processes."""

    def __init__(self, worker: ChunkWorker, workers: int, spec: WorkerSpec | None):
        self.worker = worker
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        if workers > 1 and spec is not None:
            # spawn: a clean interpreter per worker, safe beside threads of the parent
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                                             initializer=_init_worker, initargs=(spec,))

    @property
    def parallel(self) -> bool:
        return self._pool is not None

    def submit(self, task: ChunkTask) -> Future[ChunkOutcome]:
        if self._pool is not None:
            return self._pool.submit(_process, task)
        future: Future[ChunkOutcome] = Future()
        try:
            future.set_result(self.worker.process(task))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            future.set_exception(exc)
        return future

    def close(self, *, cancel: bool = False, terminate: bool = False) -> None:
        """Shut the pool down; `terminate` stops the workers mid-chunk (after a Ctrl-C: what
        they finished is in the cache, the chunk itself is redone on resume)."""
        if self._pool is not None:
            if terminate:
                _terminate_workers(self._pool)
            self._pool.shutdown(wait=True, cancel_futures=cancel)
            self._pool = None


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """Python 3.14's `terminate_workers`; before it, the executor's own process table."""
    method = getattr(pool, "terminate_workers", None)
    if callable(method):
        method()
        return
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(Exception):
            process.terminate()


def skip_counts(skips: Sequence[tuple[str, str, Any, int, str]]) -> Counter[tuple[str, str]]:
    return Counter((s[1], s[4]) for s in skips)
