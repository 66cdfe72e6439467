"""The streaming run: plan, perturb, score and write chunk by chunk with bounded memory.

Examples are cut into chunks. For each chunk, LLM-written (and model-made) variants are made in
this process, rule perturbations and CPU-bound evaluators run in a `ChunkWorker` (here or in a
pool of processes), the other evaluators (judges, local models) score here, and the chunk's
rows, variants and skips go to part files in the staging folder before the next chunk's results
are taken. What stays in memory is one chunk, plus small counters. Corpus-level evaluators
(MAUVE) need whole sets of texts, so their sets are gathered across chunks and scored at the end.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalstress.core import interrupts
from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example
from evalstress.core.freed import give_back
from evalstress.core.phases import phase
from evalstress.core.records import Progress, SkipRecord
from evalstress.core.redact import redact
from evalstress.core.scoretable import ScoreColumns
from evalstress.core.text import TextParser
from evalstress.core.version import __version__
from evalstress.engine import variantfile
from evalstress.engine.chunkwork import (
    ChunkExecutor,
    ChunkOutcome,
    ChunkTask,
    ChunkWorker,
    RunData,
    WorkerSpec,
    default_workers,
    recipe_for,
)
from evalstress.engine.generation import GenerationSetup
from evalstress.engine.planning import (
    PlannedUnits,
    Stopped,
    long_rows,
    plan_units,
    scored_examples,
)
from evalstress.engine.replay import UnitReplay
from evalstress.engine.result import RunResult
from evalstress.engine.rundir import Staging
from evalstress.engine.scoring import CorpusSets, EvaluatorStats, score_rows, severity_ranks
from evalstress.evaluators.base import Evaluator
from evalstress.perturb.base import PerturbContext, Variant
from evalstress.suites import Suite

DEFAULT_CHUNK = 64

class ChunkPolicy(Protocol):
    """Decides, chunk by chunk, which units are still planned (the sequential DHP design)."""

    def stopped(self) -> Stopped | None:
        """Units to leave out of the next chunk, as (perturbation, severity) or (task,
        perturbation, severity) with the severity as a string; None: none (and every original
        is scored)."""

    def observe(self, rows: pa.Table) -> None:
        """The score rows of a finished chunk."""

    def describe(self) -> dict[str, Any]:
        """Settings that change what is planned (they enter the run's fingerprint)."""


def fingerprint(examples: Sequence[Example], suite: Suite, evaluators: Sequence[Evaluator],
                chunk_size: int, policy: ChunkPolicy | None) -> str:
    """Everything that changes a chunk's files: a staging folder is resumed only if it matches."""
    digest = hashlib.sha256()
    layout = ([len(chunk) for chunk in chunk_positions(len(examples), chunk_size)]
              if chunk_size > 0 else None)  # 0: a run not cut into chunks (Ray's key)
    digest.update(json.dumps([__version__, chunk_size, layout,
                              policy.describe() if policy is not None else None],
                             default=str).encode())
    for example in examples:
        digest.update(json.dumps([example.id, example.task, example.source, example.hypothesis,
                                  list(example.references)], ensure_ascii=False).encode())
    digest.update(json.dumps([[p.name, p.perturbation.params, [str(s) for s in p.grid],
                               p.tasks] for p in suite.perturbations], default=str).encode())
    digest.update(json.dumps(list(suite.seeds)).encode())
    digest.update(json.dumps([[e.label, e.cache_namespace] for e in evaluators]).encode())
    return digest.hexdigest()


def _warm_resources(suite: Suite, examples: Sequence[Example], pool: Sequence[Example],
                    parser: TextParser, resources: dict[str, Any]) -> None:
    """Build the dataset-wide resources (sentence pools, n-gram tables) once, here, by applying
    each rule perturbation to one example per task; workers then receive them ready-made."""
    first: dict[str, Example] = {}
    too_long = long_rows(examples, suite)
    for example in examples:
        if example.id not in too_long:
            first.setdefault(example.task, example)
    # those building a dataset-wide resource last: its parse is shared with the helpers,
    # which start meanwhile, so the others' warm-up no longer leaves a started helper idle,
    # nor does the pool's first batches run here alone
    plans = sorted(suite.perturbations, key=lambda plan: plan.perturbation.dataset_wide)
    for example in first.values():
        ctx = PerturbContext(example, parser, pool, resources)
        for plan in plans:
            if plan.perturbation.method == "rule" and plan.applies_to(example.task) and plan.grid:
                plan.perturbation.apply(ctx, plan.grid[0], suite.seeds[0] if suite.seeds else 0)
    parser.forget()


#: runs of more chunks than this end in smaller ones (`chunk_positions`)
TAPER_AFTER = 4


def default_chunk_size(examples: int, workers: int) -> int:
    """64 examples, or fewer so that every worker gets about four chunks."""
    if workers <= 1:
        return DEFAULT_CHUNK
    return min(DEFAULT_CHUNK, max(4, -(-examples // (4 * workers))))


def execution_sizes(examples: int, workers: int, chunk_size: int | None) -> tuple[int, int]:
    """(processes, examples per chunk) of a run: `workers` 0 is every core, a chunk size left
    out is fitted to the data and the processes. The one place both are settled."""
    processes = workers if workers > 0 else default_workers()
    return processes, chunk_size or default_chunk_size(examples, processes)


#: the least pooled work worth starting helper processes for, in characters perturbed and
#: scored (each text's length x its rule units x the evaluators the workers score): the
#: break-even of `--workers 2` against `--workers 1`, measured side by side on growing parts of
#: the built-in corpus (bench/README.md, "Figures behind the code").
POOL_MIN_WORK = 5_000_000


def pooled_work(suite: Suite, examples: Sequence[Example], cpu_evaluators: int) -> int:
    """The work a pool would share, in characters: each example's text length times its rule
    units times the evaluators the workers score (at least one: the workers perturb even when
    the parent scores)."""
    rule_units = {task: sum(1 for plan, _, _ in suite.units(task)
                            if plan.perturbation.method == "rule")
                  for task in {example.task for example in examples}}  # per task, not example
    return sum(len(example.hypothesis) * max(1, cpu_evaluators) * rule_units[example.task]
               for example in examples)


def pool_size(workers: int, chunks: int, work: int) -> int:
    """Processes for the chunks still to do: no more than there are chunks, and one (no pool)
    when the work is too small to repay starting workers (`POOL_MIN_WORK`)."""
    if work < POOL_MIN_WORK:
        return 1
    return min(workers, max(1, chunks))


def chunk_positions(count: int, size: int) -> list[list[int]]:
    """The examples' positions cut into chunks of `size`: the run's chunks, which the Ray
    backend's generation pass must cut the same way.

    A run of more than `TAPER_AFTER` chunks ends in chunks that halve in pairs (..., 8, 8, 4, 4,
    2, 2, 1, 1 examples), about 2 x `size` examples in all: in a pool whichever process is free
    takes the next chunk (`chunkschedule`), so the processes end at most about one last chunk
    apart, and the smaller the last few are the closer they finish, whatever an example costs
    (under blindspot-full a 16-example chunk takes many times one example's time)."""
    taper: list[int] = []
    if count > TAPER_AFTER * size and size >= 2:
        piece = 1
        while piece < size and sum(taper) + 2 * piece <= 2 * size:
            taper += [piece, piece]
            piece *= 2
    body = count - sum(taper)
    chunks = [list(range(start, min(start + size, body))) for start in range(0, body, size)]
    start = body
    for piece in reversed(taper):
        chunks.append(list(range(start, start + piece)))
        start += piece
    return chunks


def _example_line(example: Example) -> str:
    return json.dumps({"id": example.id, "task": example.task, "source": example.source,
                       "hypothesis": example.hypothesis, "references": list(example.references)},
                      ensure_ascii=False) + "\n"


def _skip_line(skip: SkipRecord) -> str:
    record = {**skip.to_json(), "reason": redact(skip.reason)}  # a generator's error, say
    return json.dumps(record, ensure_ascii=False) + "\n"


def _merge_generation(total: dict[str, dict[str, Any]],
                      counts: Mapping[str, Mapping[str, Any]]) -> None:
    for name, entry in counts.items():
        into = total.setdefault(name, {"rejections": {}})
        for key, value in entry.items():
            if key == "rejections":
                for reason, n in dict(value).items():
                    into["rejections"][reason] = into["rejections"].get(reason, 0) + int(n)
            elif isinstance(value, int | float) and key != "acceptance_rate":
                into[key] = into.get(key, 0) + value
        planned = into.get("planned", 0)
        into["acceptance_rate"] = into.get("accepted", 0) / planned if planned else None


class StreamingRun:
    """One run over a dataset, chunk by chunk (see the module docstring)."""

    def __init__(self, examples: Sequence[Example], suite: Suite,
                 evaluators: Sequence[Evaluator], *, cache: SQLiteCache | None,
                 parser: TextParser | None, resources: dict[str, Any] | None, progress: Any,
                 workdir: Path | None, chunk_size: int, workers: int,
                 generation: GenerationSetup | None, policy: ChunkPolicy | None,
                 pool: Sequence[Example] | None = None, replay: UnitReplay | None = None):
        self.examples = list(examples)
        # rule and model-made units made elsewhere (Ray shards): looked up, never made here
        self.replay = replay
        # the dataset perturbations borrow from (a Ray shard still sees the whole dataset)
        self.pool = list(pool) if pool is not None else self.examples
        too_long = long_rows(self.pool, suite)  # never borrowed from: they are never parsed
        if too_long:
            self.pool = [e for e in self.pool if e.id not in too_long]
        self.suite = suite
        self.evaluators = list(evaluators)
        self.cache = cache
        self.parser = parser or TextParser()
        self.parser.forgetful = True  # its memo is dropped chunk by chunk
        self.resources = dict(resources or {})
        self.progress = progress or Progress()
        self.workdir = workdir
        self.chunk_size = chunk_size
        self.workers = workers
        # LLM-written and imported variants; without a generator, a plan that needs one fails now
        self.generation = generation or GenerationSetup()
        self.generation.check(suite, self.examples)
        self.policy = policy
        self.ranks = severity_ranks(suite)
        # plans whose variants the parent makes: LLM-written, imported, model-made
        self.parent_names = frozenset(p.name for p in suite.perturbations
                                      if p.perturbation.method != "rule"
                                      or self.generation.handles(p))
        # imported variants may be of names the suite does not list: the stage adds them
        self.parent_units = bool(self.parent_names) or self.generation.adds_variants
        self.corpus = [e for e in self.evaluators if e.level == "corpus"]
        segment = [e for e in self.evaluators if e.level != "corpus"]
        recipes = {e.label: recipe_for(e) for e in segment if getattr(e, "cpu_bound", False)}
        self.cpu = [e for e in segment if recipes.get(e.label) is not None]
        self.here = [e for e in segment if e not in self.cpu]
        self._recipes = [r for r in (recipes[e.label] for e in self.cpu) if r is not None]
        # the sets corpus-level evaluators score, gathered chunk by chunk
        self._sets = CorpusSets()
        # what scoring every original before the first look cost (`_score_originals_first`)
        self._first_stats: dict[str, EvaluatorStats] = {}

    # -- the parent's share of a chunk --------------------------------------------------------

    def _parent_variants(self, examples: Sequence[Example], stopped: Stopped | None
                         ) -> tuple[list[Variant], list[SkipRecord], dict[str, Any]]:
        """Variants made here: LLM-written through the generation stage, model-made in place."""
        if not self.parent_units:
            return [], [], {}
        if self.parent_names and self.replay is not None:
            made = self.replay.plan(examples, self.suite, stopped=stopped,
                                    include=lambda p: p.name in self.parent_names,
                                    generated=self.generation.handles)
        elif self.parent_names:
            made = plan_units(examples, self.suite, self.parser, self.pool, self.resources,
                              include=lambda p: p.name in self.parent_names,
                              generated=self.generation.handles, stopped=stopped)
        else:  # only imported variants of other names: nothing to parse here
            made = PlannedUnits(too_long=long_rows(examples, self.suite))
        fitting = [e for e in examples if e.id not in made.too_long]
        generated = self.generation.run(fitting, self.suite, self.parser, self.progress)
        self.parser.forget()
        left_out = self.generation.long_row_skips(examples, made.too_long, self.suite)
        return ([*made.variants, *generated.variants],
                [*made.skips, *generated.skips, *left_out],
                {name: c.to_json() for name, c in generated.counts.items()})

    def _finish_chunk(self, staging: Staging, outcome: ChunkOutcome, examples: list[Example],
                      extra_skips: list[SkipRecord], generation: dict[str, Any],
                      stopped: Stopped | None) -> dict[str, Any]:
        variants = outcome.variants if outcome.variants is not None else []
        rows = dict(outcome.rows)
        stats = dict(outcome.stats)
        scored = scored_examples(examples, variants, None if self._originals_first else stopped,
                                 long_rows(examples, self.suite))
        for evaluator in self.here:
            columns, stats[evaluator.label] = score_rows(
                evaluator, scored, variants, self.ranks, self.cache, self.progress)
            rows[evaluator.label] = columns.to_arrow()
        if self.corpus:
            self._gather_sets(examples, variants)
        skips = [*outcome.skips, *extra_skips]
        tables = [rows[e.label] for e in self.evaluators if e.label in rows]
        missing: Counter[tuple[str, str, str]] = Counter()
        for table in tables:
            failed = table.filter(pc.not_equal(table.column("status"), "ok"))
            for evaluator, aspect, reason in zip(
                    *(failed.column(c).to_pylist() for c in ("evaluator", "aspect", "reason")),
                    strict=True):
                missing[(evaluator, aspect, reason)] += 1
        summary = {
            "index": outcome.index, "examples": len(examples), "variants": outcome.variant_count,
            "parses": outcome.parses,
            "stats": {label: asdict(s) for label, s in stats.items()},
            "skip_reasons": [[p, r, n] for (p, r), n in Counter(
                (s.perturbation, s.reason) for s in skips).items()],
            "missing_reasons": [[e, a, r, n] for (e, a, r), n in missing.items()],
            "generation": generation,
        }
        staging.write_chunk(outcome.index, scores=tables, variants=outcome.variant_rows,
                            skips="".join(_skip_line(s) for s in skips),
                            examples="".join(_example_line(e) for e in examples), summary=summary)
        if self.policy is not None:
            self.policy.observe(pa.concat_tables(tables) if tables else
                                ScoreColumns().to_arrow())
        return summary

    @property
    def _originals_first(self) -> bool:
        return bool(getattr(self.policy, "originals_first", False))

    def _score_originals_first(self) -> None:
        """A design whose tolerance is read off the originals (the sequential verdicts) gets
        every example's original scored before its first look; each chunk then scores its
        originals again, from the cache, so the run's table holds all of them."""
        if not self._originals_first or self.policy is None:
            return
        originals = scored_examples(self.examples, [], None, long_rows(self.examples, self.suite))
        tables = []
        with phase("originals first (the sequential design's tolerance)"):
            for evaluator in [*self.here, *self.cpu]:
                columns, self._first_stats[evaluator.label] = score_rows(
                    evaluator, originals, [], self.ranks, self.cache, self.progress)
                tables.append(columns.to_arrow())
        if tables:
            self.policy.observe_originals(pa.concat_tables(tables))  # type: ignore[attr-defined]

    def _gather_sets(self, examples: Sequence[Example], variants: Iterable[Variant]) -> None:
        too_long = long_rows(examples, self.suite)
        # the gold set holds the texts the run scores
        self._sets.add_originals(e for e in examples if e.id not in too_long)
        self._sets.add_variants({e.id: e for e in examples}, variants)

    def _score_corpus(self) -> tuple[pa.Table, dict[str, EvaluatorStats], Counter[Any]]:
        """Distribution-level evaluators: one score per set (the gold set, each noised set)."""
        out = ScoreColumns()
        stats: dict[str, EvaluatorStats] = {}
        missing: Counter[tuple[str, str, str]] = Counter()
        task = self.examples[0].task if self.examples else ""
        for evaluator in self.corpus:
            rows, stats[evaluator.label], lost = self._sets.score(
                evaluator, self.cache, self.ranks, task, self.progress)
            out.extend(rows)
            missing.update(lost)
        return out.to_arrow(), stats, missing

    # -- the whole run --------------------------------------------------------------------------

    def run(self) -> RunResult:
        staging = Staging.open(self.workdir, fingerprint(
            self.examples, self.suite, self.evaluators, self.chunk_size, self.policy))
        if not staging.finalized:
            self._run_chunks(staging)
        return RunResult.from_files(staging.files, self.examples, self.suite,
                                    signatures={e.label: e.signature() for e in self.evaluators},
                                    specs={e.label: e.spec for e in self.evaluators})

    def _run_chunks(self, staging: Staging) -> None:
        chunks = chunk_positions(len(self.examples), self.chunk_size)
        summaries: dict[int, dict[str, Any]] = {}
        todo = []
        for index in range(len(chunks)):
            summary = staging.summary(index)
            if summary is None:
                todo.append(index)
            else:
                summaries[index] = summary
        rule_units = any(p.perturbation.method == "rule" for p in self.suite.perturbations)
        worker = ChunkWorker(self.suite, self.examples, self.pool, self.resources, self.cpu,
                             self.cache, self.parser, parent_names=self.parent_names,
                             replay=self.replay)
        # replayed units leave helpers nothing to make (their scores are cache lookups), and a
        # sequential design takes one chunk at a time
        if self.replay is not None or self.policy is not None:
            processes = 1
        else:
            work = pooled_work(self.suite, [self.examples[i] for c in todo for i in chunks[c]],
                               len(self.cpu))
            processes = pool_size(self.workers, len(todo), work)
        # helpers start now: their imports and spaCy load overlap the warm-up below
        spec = WorkerSpec(self._recipes, str(self.cache.path) if self.cache is not None else None,
                          self.cache.table if self.cache is not None else "scores",
                          parse=rule_units)
        executor = ChunkExecutor(worker, processes - 1, spec)
        try:
            if todo and rule_units and self.replay is None:
                if executor.parallel:  # the sentence pool's parse is shared with the helpers
                    self.parser.shared_sentences = executor.sentence_parses
                try:
                    with phase("warm-up (one example per task)"):
                        _warm_resources(self.suite, self.examples, self.pool, self.parser,
                                        self.resources)
                finally:
                    self.parser.shared_sentences = None
            executor.share(RunData(self.suite, self.examples, self.pool, self.resources,
                                   self.parent_names), staging.files.chunks / "helpers.pickle")
        except BaseException:
            executor.close(cancel=True, terminate=True)
            raise
        self._score_originals_first()
        self.progress.start("examples", len(self.examples))
        need_variants = bool(self.here or self.corpus)
        prepared: dict[int, tuple[list[SkipRecord], dict[str, Any], Stopped | None]] = {}

        def tasks() -> Iterator[ChunkTask]:
            """The chunks still to do, in order (a finished one is replayed where needed)."""
            for index in range(len(chunks)):
                if index in summaries:
                    if self.corpus:
                        self._gather_done(staging, index, chunks[index])
                    if self.policy is not None:  # replay what the killed run had observed
                        self.policy.observe(pq.read_table(staging.files.part(
                            index, "scores.parquet")))
                    self.progress.advance("examples", len(chunks[index]))
                    continue
                examples = [self.examples[i] for i in chunks[index]]
                stopped = self.policy.stopped() if self.policy is not None else None
                extra, extra_skips, generation = self._parent_variants(examples, stopped)
                prepared[index] = (extra_skips, generation, stopped)
                yield ChunkTask(index, chunks[index], extra, stopped, need_variants)

        # examples taken and not yet written: about two full chunks per process ahead of the
        # oldest unwritten one, so that no process waits on the order of the writes
        window = (2 * executor.processes + 2) * self.chunk_size
        interrupted = finished = False
        try:
            with contextlib.closing(executor.map_chunks(tasks(), window)) as outcomes:
                for outcome in outcomes:
                    extra_skips, generation, stopped = prepared.pop(outcome.index)
                    examples = [self.examples[i] for i in chunks[outcome.index]]
                    summaries[outcome.index] = self._finish_chunk(
                        staging, outcome, examples, extra_skips, generation, stopped)
                    del outcome
                    give_back()  # the chunk's parses, variants and rows are freed
                    self.progress.advance("examples", len(examples))
            finished = True
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            stopping = interrupted or interrupts.requested() is not None
            # every chunk done: the helpers exit while this process joins the parts
            executor.close(cancel=True, terminate=stopping, wait=not finished)
            self.progress.finish("examples")
        corpus_table, corpus_stats, corpus_missing = (self._score_corpus() if self.corpus
                                                      else (None, {}, Counter()))
        order = sorted(summaries)
        if corpus_table is not None:
            extra_index = len(chunks)
            staging.write_chunk(extra_index, scores=[corpus_table], variants=None, skips="",
                                examples="", summary={"index": extra_index})
            order.append(extra_index)
        with phase("join chunk parts"):
            staging.finalize(order, self._total(summaries, corpus_stats, corpus_missing))
            give_back()  # the joined tables are freed

    def _gather_done(self, staging: Staging, index: int, positions: list[int]) -> None:
        path = staging.files.part(index, variantfile.FILE)
        variants = list(variantfile.read_variants(path)) if path.exists() else []
        self._gather_sets([self.examples[i] for i in positions], variants)

    def _total(self, summaries: Mapping[int, Mapping[str, Any]],
               corpus_stats: Mapping[str, EvaluatorStats],
               corpus_missing: Counter[Any]) -> dict[str, Any]:
        stats = {e.label: EvaluatorStats() for e in self.evaluators}
        skips: Counter[tuple[str, str]] = Counter()
        missing: Counter[tuple[str, str, str]] = Counter(corpus_missing)
        generation: dict[str, dict[str, Any]] = {}
        variants = parses = 0
        for summary in summaries.values():
            variants += int(summary["variants"])
            parses += int(summary["parses"])
            for label, values in summary["stats"].items():
                stats.setdefault(label, EvaluatorStats()).add(EvaluatorStats(**values))
            for perturbation, reason, n in summary["skip_reasons"]:
                skips[(perturbation, reason)] += int(n)
            for evaluator, aspect, reason, n in summary["missing_reasons"]:
                missing[(evaluator, aspect, reason)] += int(n)
            _merge_generation(generation, summary.get("generation") or {})
        for label, first in self._first_stats.items():  # the chunks found these in the cache
            total = stats.setdefault(label, EvaluatorStats())
            total.scored += first.scored
            total.calls += first.calls
            total.truncated += first.truncated
            if self.cache is not None:
                total.cached = max(0, total.cached - first.scored)
        for label, value in corpus_stats.items():
            stats[label] = value
        return {
            "examples": len(self.examples), "variants": variants, "parses": parses,
            "skipped": sum(skips.values()),
            "stats": {label: asdict(s) for label, s in stats.items()},
            "skip_reasons": [{"perturbation": p, "reason": r, "count": n}
                             for (p, r), n in sorted(skips.items())],
            "missing_reasons": [{"evaluator": e, "aspect": a, "reason": r, "count": n}
                                for (e, a, r), n in sorted(missing.items())],
            "missing_scores": sum(missing.values()),
            "generation": generation,
            **({"sequential": self.policy.to_dict()} if self.policy is not None
               and hasattr(self.policy, "to_dict") else {}),
        }
