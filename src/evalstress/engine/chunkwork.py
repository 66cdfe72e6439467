"""The work of one chunk of examples: rule perturbations, CPU-bound scoring, word diffs.

The same `ChunkWorker.process` runs in the runner's own process and in each helper process, so
pooled and serial runs produce the same variants, scores and files. `--workers N` is N
processes sharing the chunks: the run's own process and N - 1 helpers, whichever is free
taking the next chunk (`chunkschedule`). A helper owns its parser and its evaluators (rebuilt
from their recipes), reads and writes the shared SQLite score cache itself, and hands back what
the parent writes (rows as columns, the variants' rows and the skips) in a file of the run's
staging folder.

Helpers start before the parent's warm-up (`ChunkExecutor` spawns them at once) and load what
does not depend on the data meanwhile: imports, evaluators, the spaCy pipeline. What chunks
index (the examples, the dataset-wide resources the warm-up builds) reaches them as a file the
parent writes once the warm-up is done (`RunData`), read by each helper at its first chunk.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalstress.core import models
from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example
from evalstress.core.freed import give_back
from evalstress.core.records import SkipRecord
from evalstress.core.storage import atomic_write_text
from evalstress.core.text import ParsedText, TextParser, load_spacy
from evalstress.engine.chunkschedule import ChunkSchedule
from evalstress.engine.planning import PlannedUnits, Stopped, plan_units, scored_examples
from evalstress.engine.replay import UnitReplay
from evalstress.engine.scoring import EvaluatorStats, score_rows, severity_ranks
from evalstress.engine.variantfile import variant_table
from evalstress.engine.workerstart import THREADS_VARIABLE, start_worker
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
    data: str | None = None  # a helper's `RunData` file (set by `ChunkExecutor`)
    handover: str | None = None  # where a helper leaves the outcome (set by `ChunkExecutor`)


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


# --- helper processes ----------------------------------------------------------------------

@dataclass
class WorkerSpec:
    """What a helper loads while the parent warms up: nothing here depends on the data."""

    evaluators: list[EvaluatorRecipe]
    cache_path: str | None
    cache_table: str
    parse: bool = True  # load the spaCy pipeline now (rule perturbations may read parses)


@dataclass
class RunData:
    """What a helper's chunks index, handed over once the parent's warm-up has built the
    dataset-wide resources."""

    suite: Suite
    examples: list[Example]
    pool: list[Example]
    resources: dict[str, Any]
    parent_names: frozenset[str] = frozenset()


@dataclass
class _Helper:
    """This helper process's state: what its spec built, and its worker once the data came."""

    evaluators: list[Evaluator]
    cache: SQLiteCache | None
    parser: TextParser = field(default_factory=lambda: TextParser(forgetful=True))
    worker: ChunkWorker | None = None
    data: str | None = None


_HELPER: _Helper | None = None


def init_worker(spec: WorkerSpec) -> None:
    """Load what `spec` names in this helper process (`workerstart.start_worker` calls it once
    the watch on the parent runs): the evaluators, the cache, and spaCy when asked."""
    global _HELPER
    cache = SQLiteCache(spec.cache_path, spec.cache_table) if spec.cache_path else None
    _HELPER = _Helper([r.build() for r in spec.evaluators], cache)
    if spec.parse:
        load_spacy()


def _worker_for(data: str) -> ChunkWorker:
    """This helper's ChunkWorker for the run data in the file `data`, read at its first chunk."""
    assert _HELPER is not None, "helper process not initialised"
    if _HELPER.worker is None or _HELPER.data != data:
        with open(data, "rb") as handle:
            run: RunData = pickle.load(handle)
        _HELPER.worker = ChunkWorker(run.suite, run.examples, run.pool, run.resources,
                                     _HELPER.evaluators, _HELPER.cache, _HELPER.parser,
                                     parent_names=run.parent_names)
        _HELPER.data = data
    return _HELPER.worker


def _process(task: ChunkTask) -> ChunkOutcome | str:
    """A helper's chunk; its outcome is left in `task.handover` when one is named."""
    assert task.data is not None, "a helper's task names its run data"
    outcome = _worker_for(task.data).process(task)
    if task.handover is None:
        return outcome
    with open(task.handover, "wb") as handle:
        pickle.dump(outcome, handle, protocol=pickle.HIGHEST_PROTOCOL)
    del outcome
    give_back()  # the chunk's parses, variants and rows are freed
    return task.handover


def _handed_over(path: str) -> ChunkOutcome:
    """The outcome a helper left in `path` (`ChunkExecutor._send`), read once and removed."""
    with open(path, "rb") as handle:
        outcome: ChunkOutcome = pickle.load(handle)
    os.unlink(path)
    return outcome


def _sentence_parses(texts: list[str]) -> list[ParsedText]:
    """A helper's share of a dataset-wide sentence parse (`ChunkExecutor.sentence_parses`)."""
    assert _HELPER is not None, "helper process not initialised"
    return list(_HELPER.parser.sentence_parses(texts))


def _ready() -> int:
    """A first task that spawns a helper at once: its start-up overlaps the parent's warm-up."""
    return os.getpid()


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


def spawned_pool(processes: int, initializer: Callable[..., None],
                 initargs: tuple[Any, ...]) -> ProcessPoolExecutor:
    """A pool of `processes` started the way every process of a run is: spawned (a clean
    interpreter, safe beside threads of this one), with the resource tracker and the processes
    given TRACKER_QUIET (a child receives the -W options of `sys.warnoptions`). Submit its
    first task under `interrupts_blocked`: that is when the processes spawn."""
    if TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_QUIET)
    return ProcessPoolExecutor(max_workers=processes, mp_context=get_context("spawn"),
                               initializer=initializer, initargs=initargs)


#: texts per shared task of a dataset-wide sentence parse (about a second of parsing WikiText
#: paragraphs: long enough to repay the hand-over, short enough to share)
SENTENCE_BATCH = 64


class ChunkExecutor:
    """Runs chunk tasks in this process and in `helpers` helper processes.

    Whichever process is free takes the next task (`map_chunks`, `ChunkSchedule`), so every
    process works until the last chunk. Helpers spawn at once; `share` hands them the run data
    before the first task."""

    def __init__(self, worker: ChunkWorker, helpers: int, spec: WorkerSpec):
        self.worker = worker
        self.helpers = max(0, helpers)
        self._pool: ProcessPoolExecutor | None = None
        self._data: str | None = None
        self._queued: list[Future[Any]] = []  # tasks handed to helpers, not yet done
        self._started: list[Future[int]] = []  # done once a helper has loaded its spec
        self._threads_set = False
        if self.helpers:
            # this process works beside its helpers: one thread for native thread pools here
            # too (fastchrf's rayon reads this at its first use in a process, so a process
            # whose first chrF ran beside helpers keeps one thread for it)
            self._threads_set = THREADS_VARIABLE not in os.environ
            os.environ.setdefault(THREADS_VARIABLE, "1")
            # and a model scoring here (they run only here) takes its share of the cores
            models.share_cores(self.processes)
            # the spec goes pickled, so that a helper starts watching this process before it
            # imports what unpickling the spec needs (`workerstart`)
            self._pool = spawned_pool(self.helpers, start_worker,
                                      (os.getpid(), pickle.dumps(spec)))
            with interrupts_blocked():  # a helper spawned here inherits the blocked signal
                self._started = [self._pool.submit(_ready) for _ in range(self.helpers)]

    @property
    def parallel(self) -> bool:
        return self._pool is not None

    @property
    def started(self) -> int:
        """Helpers that have loaded their spec (at most `helpers`)."""
        return sum(1 for f in self._started if f.done())

    @property
    def processes(self) -> int:
        """Processes doing chunks: this one and its helpers."""
        return 1 + self.helpers

    def share(self, data: RunData, path: Path) -> None:
        """Write what the helpers' chunks index to `path` (a file of the run's staging folder,
        gone with it); without helpers, nothing."""
        if self._pool is None:
            return
        atomic_write_text(path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        self._data = str(path)

    def map_chunks(self, tasks: Iterable[ChunkTask],
                   window: int) -> Generator[ChunkOutcome, None, None]:
        """The outcomes of `tasks`, in their order. Without helpers each runs here in its turn
        (the next task is prepared only after the last outcome was taken: a sequential design
        reads it); with helpers, whichever process is free takes the next one
        (`ChunkSchedule`), at most `window` examples taken and not yet handed back."""
        if self._pool is None:
            for task in tasks:
                yield self.worker.process(task)
            return
        if self._data is None:
            raise RuntimeError("the helpers' run data was not shared before a task")
        schedule: ChunkSchedule[ChunkTask, ChunkOutcome | str] = ChunkSchedule(
            tasks, here=self.worker.process, send=self._send, helpers=self.helpers,
            size=lambda task: len(task.positions), window=window)
        for outcome in schedule.outcomes():
            yield outcome if isinstance(outcome, ChunkOutcome) else _handed_over(outcome)

    def _send(self, task: ChunkTask) -> Future[ChunkOutcome | str]:
        """`task` to a helper, which leaves its outcome in a file beside the run data: a
        chunk's outcome is tens of MB, and through the pool's pipe it comes in 64 KB reads by
        a thread that waits for this busy process's lock each time."""
        if self._pool is None or self._data is None:
            raise RuntimeError("the helpers were closed before a task")
        task.data = self._data
        task.handover = str(Path(self._data).with_name(f"outcome-{task.index}.pickle"))
        with interrupts_blocked():  # a helper respawned here inherits the blocked signal
            return self._pool.submit(_process, task)

    def sentence_parses(self, texts: Sequence[str]) -> Iterator[ParsedText]:
        """Sentence-only parses of `texts`, in order (`TextParser.sentence_parses`), in
        batches shared with the helpers as chunks are: the warm-up's sentence pool parses up
        to a thousand texts before any chunk can start. Helpers need no run data for it, and
        get a batch only once started: a small pool is parsed here before they are up."""
        pending: deque[Future[list[ParsedText]]] = deque()
        parser = self.worker.parser
        for start in range(0, len(texts), SENTENCE_BATCH):
            part = list(texts[start:start + SENTENCE_BATCH])
            pending.append(self._dispatch(
                _sentence_parses, part, lambda p: list(parser.sentence_parses(p, here=True)),
                helpers=self.started))
            while len(pending) > 2 * self.processes:  # results are taken in order
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()

    def _dispatch(self, remote: Callable[[Any], Any], item: Any, here: Callable[[Any], Any],
                  helpers: int) -> Future[Any]:
        """`remote(item)` in a helper while fewer than two tasks per helper (of the first
        `helpers`, those started) wait there, else `here(item)` in this process."""
        self._queued = [f for f in self._queued if not f.done()]
        if self._pool is not None and len(self._queued) < 2 * helpers:
            with interrupts_blocked():  # a helper respawned here inherits the blocked signal
                future = self._pool.submit(remote, item)
            self._queued.append(future)
            return future
        done: Future[Any] = Future()
        try:
            done.set_result(here(item))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            done.set_exception(exc)
        return done

    def close(self, *, cancel: bool = False, terminate: bool = False, wait: bool = True) -> None:
        """Shut the helpers down; `terminate` stops them mid-chunk (after a Ctrl-C: what
        they finished is in the cache, the chunk itself is redone on resume); without `wait`,
        they exit in the background (the interpreter joins them at its exit)."""
        if self._pool is not None:
            if terminate:
                terminate_workers(self._pool)
            self._pool.shutdown(wait=wait or terminate, cancel_futures=cancel)
            self._pool = None
            models.share_cores(1)
        if self._threads_set:
            os.environ.pop(THREADS_VARIABLE, None)
            self._threads_set = False


def terminate_workers(pool: ProcessPoolExecutor) -> None:
    """Python 3.14's `terminate_workers`; before it, the executor's own process table."""
    method = getattr(pool, "terminate_workers", None)
    if callable(method):
        method()
        return
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(Exception):
            process.terminate()
