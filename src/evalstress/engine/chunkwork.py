"""The work of one chunk of examples: rule perturbations, CPU-bound scoring, word diffs.

The same `ChunkWorker.process` runs in the runner's own process (`--workers 1`) and in each
worker process of the pool, so pooled and serial runs produce the same variants, scores and files.
A worker owns its parser and its evaluators (rebuilt from their spec), reads and writes the
shared SQLite score cache itself, and returns what the parent writes: rows as columns, the
variants' JSONL lines (diffs included) and the skips.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

import pyarrow as pa

from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example
from evalstress.core.records import SkipRecord
from evalstress.core.text import TextParser
from evalstress.engine.planning import PlannedUnits, Stopped, plan_units, scored_examples
from evalstress.engine.replay import UnitReplay
from evalstress.engine.scoring import EvaluatorStats, score_rows, severity_ranks
from evalstress.engine.variantfile import variant_table
from evalstress.engine.workerstart import start_worker
from evalstress.evaluators.base import Evaluator
from evalstress.perturb.base import Variant
from evalstress.suites import Suite


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
    display_name: str | None = None  # name=, or the run's distinct label: rows carry it

    def build(self) -> Evaluator:
        evaluator = self.cls(**self.params)
        evaluator.spec_params = dict(self.spec_params)
        evaluator.display_name = self.display_name
        return evaluator


def recipe_for(evaluator: Evaluator) -> EvaluatorRecipe | None:
    """A recipe that rebuilds `evaluator` with the same signature, or None if none does."""
    for params in (evaluator.spec_params, evaluator.params):
        try:
            rebuilt = type(evaluator)(**params)
        except Exception:
            continue
        if rebuilt.cache_namespace == evaluator.cache_namespace:
            return EvaluatorRecipe(type(evaluator), dict(params), dict(evaluator.spec_params),
                                   evaluator.display_name)
    return None


@dataclass
class ChunkTask:
    index: int
    positions: list[int]  # the chunk's examples, as positions in the run's example list
    extra_variants: list[Variant] = field(default_factory=list)  # made by the parent (LLM)
    stopped: Stopped | None = None  # units left out (sequential design)
    return_variants: bool = False


@dataclass
class ChunkOutcome:
    index: int
    skips: list[SkipRecord]
    variant_rows: pa.Table  # the chunk's rows of variants.parquet
    variant_count: int
    rows: dict[str, pa.Table]  # Arrow, not Python lists: a worker hands it over as buffers
    stats: dict[str, EvaluatorStats]
    parses: int
    variants: list[Variant] | None = None


class ChunkWorker:
    """Plans rule perturbations and scores CPU-bound evaluators for chunks of one run."""

    def __init__(self, suite: Suite, examples: Sequence[Example], pool: Sequence[Example],
                 resources: dict[str, Any], evaluators: Sequence[Evaluator],
                 cache: SQLiteCache | None, parser: TextParser | None = None, *,
                 parent_names: frozenset[str] = frozenset(), replay: UnitReplay | None = None):
        self.suite = suite
        self.replay = replay  # units made elsewhere (Ray shards): looked up, not made again
        # plans the parent process makes (LLM-written, imported, model-made): never here
        self.parent_names = parent_names
        self.examples = examples  # chunk positions index this list
        self.pool = pool  # the dataset perturbations may borrow from
        self.resources = resources
        self.evaluators = list(evaluators)
        self.cache = cache
        self.parser = parser or TextParser(forgetful=True)  # forgets each chunk's parses
        self.ranks = severity_ranks(suite)

    def plan(self, examples: Sequence[Example], stopped: Stopped | None) -> PlannedUnits:
        """The rule units of a chunk (the parent makes LLM-written, imported and model-made
        variants); the chunk's parses are forgotten after it."""
        if self.replay is not None:
            return self.replay.plan(examples, self.suite, stopped=stopped, include=lambda p: (
                p.perturbation.method == "rule" and p.name not in self.parent_names))
        made = plan_units(examples, self.suite, self.parser, self.pool, self.resources,
                          include=lambda p: (p.perturbation.method == "rule"
                                             and p.name not in self.parent_names),
                          stopped=stopped)
        forget = getattr(self.parser, "forget", None)
        if callable(forget):
            forget()  # parses of this chunk are not needed again: memory stays flat
        return made

    def process(self, task: ChunkTask) -> ChunkOutcome:
        examples = [self.examples[i] for i in task.positions]
        made = self.plan(examples, task.stopped)
        variants = [*made.variants, *task.extra_variants]
        scored = scored_examples(examples, variants, task.stopped, made.too_long)
        rows: dict[str, pa.Table] = {}
        stats: dict[str, EvaluatorStats] = {}
        for evaluator in self.evaluators:
            columns, stats[evaluator.label] = score_rows(
                evaluator, scored, variants, self.ranks, self.cache)
            rows[evaluator.label] = columns.to_arrow()
        return ChunkOutcome(task.index, made.skips, variant_table(variants), len(variants), rows,
                            stats, made.parses,
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


def init_worker(spec: WorkerSpec) -> None:
    """Build this worker process's ChunkWorker from its spec (`workerstart.start_worker` calls
    it once the watch on the parent runs)."""
    global _WORKER
    cache = SQLiteCache(spec.cache_path, spec.cache_table) if spec.cache_path else None
    _WORKER = ChunkWorker(spec.suite, spec.examples, spec.pool, spec.resources,
                          [r.build() for r in spec.evaluators], cache,
                          parent_names=spec.parent_names)


def _process(task: ChunkTask) -> ChunkOutcome:
    assert _WORKER is not None, "worker process not initialised"
    return _WORKER.process(task)


@contextlib.contextmanager
def interrupts_blocked() -> Iterator[None]:
    """Hold a Ctrl-C back for a moment, e.g. while a worker process is spawned: the process
    starts with SIGINT blocked (as multiprocessing's own resource tracker does), and the
    parent's KeyboardInterrupt waits until the spawn has written the worker's start data (a
    spawn cut in half leaves a child that dies with a traceback of its own). Blocking the
    signal in this thread is not enough: the kernel hands it to another thread (the pool's
    manager, a progress bar) and Python raises it here all the same, so the Python-level
    handler is held back too. A Ctrl-C that comes meanwhile is raised at the end, never lost."""
    handler = signal.getsignal(signal.SIGINT)
    # only the main thread may set handlers; one set outside Python (None) is left alone
    in_main = threading.current_thread() is threading.main_thread() and handler is not None
    pending: list[int] = []
    if in_main:
        signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if in_main:
            signal.signal(signal.SIGINT, handler)
            if pending:
                signal.raise_signal(signal.SIGINT)


#: a -W option for the processes multiprocessing starts: its resource tracker (the helper that
#: removes the pool's semaphores when the parent dies without doing so) would otherwise warn
#: about "leaked semaphore objects" after every kill -9, while it removes them as it should
TRACKER_QUIET = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Start the resource tracker (and the pool's workers) with TRACKER_QUIET: a child
    process receives the -W options of `sys.warnoptions` when it starts."""
    if TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_QUIET)


class ChunkExecutor:
    """Runs chunk tasks in this process, or in a pool of `workers` processes."""

    def __init__(self, worker: ChunkWorker, workers: int, spec: WorkerSpec | None):
        self.worker = worker
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        if workers > 1 and spec is not None:
            # spawn: a clean interpreter per worker, safe beside threads of the parent
            quiet_resource_tracker()
            # the spec goes pickled, so that a worker starts watching this process before it
            # imports what unpickling the spec needs (`workerstart`)
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                                             initializer=start_worker,
                                             initargs=(os.getpid(), pickle.dumps(spec)))

    @property
    def parallel(self) -> bool:
        return self._pool is not None

    def submit(self, task: ChunkTask) -> Future[ChunkOutcome]:
        if self._pool is not None:
            with interrupts_blocked():  # a worker spawned here inherits the blocked signal
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
