"""plan -> variants -> deduplicated, cached, batched scoring -> the long score table.

Every distinct text is scored once per evaluator (originals are never re-scored per perturbation);
each batch (each model batch, for evaluators that hand back parts: `Evaluator.score_parts`) goes
to the SQLite cache as soon as it is scored, so a rerun after a crash resumes and costs nothing
for what was already done. `run` streams: it works in chunks of examples and writes
each chunk's variants and scores to disk (see `pipeline.py`), so memory does not grow with the
dataset; `make_plan` and `score_plan` are the in-memory steps for small sets and tests.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalstress.cache import SQLiteCache, default_cache_dir
from evalstress.chunkwork import EvaluatorStats, default_workers, long_rows
from evalstress.data import Example
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow
from evalstress.perturb.base import PerturbContext, Skip, Variant
from evalstress.redact import redact
from evalstress.rundir import RunFiles, StoredSequence
from evalstress.scoretable import ScoreTable
from evalstress.suites import Suite
from evalstress.text import TextParser

if TYPE_CHECKING:
    from evalstress.generation import GenerationSetup
    from evalstress.llm.accounting import Usage

ORIGINAL = "original"
CORPUS = "*"  # example_id of corpus-level rows

SCORE_COLUMNS = [
    "example_id", "task", "perturbation", "severity", "severity_rank", "seed", "noise_ratio",
    "evaluator", "aspect", "score", "higher_is_better", "status", "reason",
]

class Progress:
    """What the runner reports while it works; the CLI draws bars from it, tests stay silent."""

    def start(self, label: str, total: int) -> None:  # pragma: no cover - trivial
        pass

    def advance(self, label: str, amount: int = 1) -> None:  # pragma: no cover - trivial
        pass

    def finish(self, label: str) -> None:  # pragma: no cover - trivial
        pass

@dataclass
class SkipRecord:
    example_id: str
    perturbation: str
    severity: Any
    seed: int
    reason: str

@dataclass
class Plan:
    """The variants a suite makes of a dataset, and the skips with their reasons.

    In memory (lists) from `make_plan`; read on demand from the run directory after `run`."""

    examples: list[Example]
    suite: Suite
    variants: Sequence[Variant]
    skips: Sequence[SkipRecord]
    parses: int = 0
    generation: dict[str, Any] | None = None  # results.json's `generation` block (generation.py)


__all__ = ["CORPUS", "ORIGINAL", "SCORE_COLUMNS", "EvaluatorStats", "Plan", "Progress",
           "RunResult", "Scorer", "SkipRecord", "estimate_plan", "make_plan", "open_cache", "run",
           "score_plan", "shard_examples"]


class RunResult:
    """A scored run: its plan, the long score table, per-evaluator stats and signatures.

    A streamed run keeps its table on disk: `scores` is the Parquet-backed `ScoreTable` that
    analyses read column by column; `table` loads the whole table (fine for small runs).
    """

    def __init__(self, plan: Plan, table: pd.DataFrame | None = None,
                 stats: dict[str, EvaluatorStats] | None = None,
                 signatures: dict[str, Any] | None = None, *, files: RunFiles | None = None,
                 summary: dict[str, Any] | None = None):
        self.plan = plan
        self._table = table
        self.stats = stats or {}
        self.signatures = signatures or {}
        self.files = files
        self._summary = summary
        self.usage: dict[str, Usage] = {}  # LLM accounting per evaluator label (results.json)

    @classmethod
    def from_files(cls, files: RunFiles, examples: list[Example], suite: Suite, *,
                   signatures: dict[str, Any], plan_type: type[Plan] = Plan) -> RunResult:
        summary = json.loads(files.path("summary.json").read_text(encoding="utf-8"))
        plan = plan_type(examples, suite, StoredSequence(files, "variants.jsonl",
                                                         int(summary["variants"]), "variant"),
                         StoredSequence(files, "skips.jsonl", int(summary["skipped"]), "skip"),
                         int(summary["parses"]))
        stats = {label: EvaluatorStats(**values) for label, values in summary["stats"].items()}
        return cls(plan, None, stats, signatures, files=files, summary=summary)

    @property
    def table(self) -> pd.DataFrame:
        if self._table is None:
            self._table = self.scores.read() if self.files is not None else pd.DataFrame(
                columns=SCORE_COLUMNS)
        return self._table

    @table.setter
    def table(self, value: pd.DataFrame) -> None:
        self._table = value

    @property
    def scores(self) -> ScoreTable:
        """The score table for analyses: Parquet on disk after a streamed run."""
        if self.files is not None and self.files.path("scores.parquet").exists():
            return ScoreTable(self.files.path("scores.parquet"))
        return ScoreTable(self.table)

    @property
    def summary(self) -> dict[str, Any]:
        """Counts, skip and missing reasons (and generation counts) of the run."""
        if self._summary is None:
            self._summary = summarize(self)
        return self._summary


def summarize(run: RunResult) -> dict[str, Any]:
    """The summary of an in-memory run (a streamed run writes its own as it goes)."""
    skips = pd.DataFrame([vars(s) for s in run.plan.skips],
                         columns=["example_id", "perturbation", "severity", "seed", "reason"])
    reasons = (skips.groupby(["perturbation", "reason"]).size().reset_index(name="count")
               .to_dict(orient="records") if not skips.empty else [])
    missing = run.table[run.table["status"] != "ok"]
    missing_reasons = (missing.groupby(["evaluator", "aspect", "reason"]).size()
                       .reset_index(name="count").to_dict(orient="records")
                       if not missing.empty else [])
    return {"examples": len(run.plan.examples), "variants": len(run.plan.variants),
            "skipped": len(run.plan.skips), "parses": run.plan.parses,
            "missing_scores": len(missing), "skip_reasons": reasons,
            "missing_reasons": missing_reasons,
            "stats": {label: vars(s) for label, s in run.stats.items()}, "generation": {}}


def shard_examples(examples: Sequence[Example], shard: tuple[int, int] | None) -> list[Example]:
    """Deterministic sharding by example id: shard (i, n) keeps ids whose hash mod n is i."""
    if shard is None:
        return list(examples)
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"shard {index}/{count} is out of range")
    return [e for e in examples
            if int(hashlib.sha256(e.id.encode()).hexdigest(), 16) % count == index]

def make_plan(examples: Sequence[Example], suite: Suite, *, parser: TextParser | None = None,
              resources: dict[str, Any] | None = None,
              progress: Progress | None = None,
              generation: GenerationSetup | None = None) -> Plan:
    """Apply every perturbation x severity x seed to every example; parse each text once.

    LLM-written perturbations (and imported variants) come from the generation stage
    (`evalstress.generation`); a suite with LLM units and no generator fails before any work."""
    from evalstress.generation import GenerationSetup  # late: it imports this module's records

    stage = generation or GenerationSetup()
    stage.check(suite, examples)
    parser = parser or TextParser()
    progress = progress or Progress()
    before = parser.parses
    too_long = long_rows(examples, suite)
    fitting = [e for e in examples if e.id not in too_long]
    parser.parse_many([e.hypothesis for e in fitting])
    shared = dict(resources or {})
    variants: list[Variant] = []
    skips: list[SkipRecord] = []
    progress.start("perturbing", len(examples))
    for example in examples:
        ctx = PerturbContext(example, parser, fitting, shared)
        for plan, severity, seed in suite.units(example.task):
            if example.id in too_long:  # neither parsed, perturbed, generated nor scored
                skips.append(SkipRecord(example.id, plan.name, severity, seed,
                                        too_long[example.id]))
                continue
            if stage.handles(plan):  # written by an LLM or imported: the stage below
                continue
            result = plan.perturbation.apply(ctx, severity, seed)
            if isinstance(result, Skip):
                skips.append(SkipRecord(example.id, plan.name, severity, seed, result.reason))
            else:
                variants.append(result)
        progress.advance("perturbing")
    progress.finish("perturbing")
    generated = stage.run(fitting, suite, parser, progress)
    variants.extend(generated.variants)
    skips.extend(generated.skips)
    return Plan(list(examples), suite, variants, skips, parser.parses - before,
                stage.block(generated.counts))

def _request(example: Example, text: str) -> ScoreRequest:
    return ScoreRequest(text, example.source, example.references, example.task)

class Scorer:
    """Scores distinct requests through the cache, in length-sorted batches."""

    def __init__(self, evaluator: Evaluator, cache: SQLiteCache | None,
                 progress: Progress | None = None):
        self.evaluator = evaluator
        self.cache = cache
        self.progress = progress or Progress()
        self.stats = EvaluatorStats()

    def score(self, requests: Iterable[ScoreRequest]) -> dict[str, ScoreRow]:
        unique: dict[str, ScoreRequest] = {}
        for request in requests:
            self.stats.requested += 1
            unique.setdefault(request.key, request)
        self.stats.distinct += len(unique)
        namespace = self.evaluator.cache_namespace
        results: dict[str, ScoreRow] = {}
        if self.cache is not None:
            for key, value in self.cache.get_many(namespace, list(unique)).items():
                results[key] = {a: Score.from_json(s) for a, s in value.items()}
        self.stats.cached += len(results)
        todo = sorted((r for k, r in unique.items() if k not in results), key=lambda r: len(r.text))
        label = f"scoring {self.evaluator.label}"
        self.progress.start(label, len(todo))
        size = max(1, self.evaluator.batch_size)
        for start in range(0, len(todo), size):
            batch = todo[start:start + size]
            done = 0
            for rows in self.evaluator.score_parts(batch):  # cached part by part
                part = batch[done:done + len(rows)]
                if len(rows) != len(part):
                    raise RuntimeError(f"evaluator {self.evaluator.label} returned "
                                       f"{done + len(rows)} rows for {len(batch)} requests")
                done += len(rows)
                self._keep(namespace, part, rows, results)
                self.progress.advance(label, len(part))
            if done != len(batch):
                raise RuntimeError(f"evaluator {self.evaluator.label} returned {done} rows "
                                   f"for {len(batch)} requests")
            self.stats.calls += 1
            self.stats.scored += len(batch)
        self.progress.finish(label)
        self.stats.truncated += sum(1 for key in unique if any(
            s.extra.get("truncated") for s in results.get(key, {}).values()))
        return results

    def _keep(self, namespace: str, part: Sequence[ScoreRequest], rows: Sequence[ScoreRow],
              results: dict[str, ScoreRow]) -> None:
        """Record a scored part and cache its complete rows at once."""
        complete = []
        for request, row in zip(part, rows, strict=True):
            results[request.key] = row
            if all(s.ok for s in row.values()):
                complete.append((request.key, {a: s.to_json() for a, s in row.items()}))
        if self.cache is not None:
            self.cache.put_many(namespace, complete)  # missing scores are retried next run

def _rows(evaluator: Evaluator, base: dict[str, Any], row: ScoreRow) -> list[dict[str, Any]]:
    out = []
    for aspect in evaluator.aspects:
        score = row.get(aspect) or Score.missing("the evaluator returned no score for this aspect")
        out.append({**base, "evaluator": evaluator.label, "aspect": aspect,
                    "score": score.value if score.ok else float("nan"),
                    "higher_is_better": evaluator.higher_is_better(aspect),
                    "status": "ok" if score.ok else "missing",
                    "reason": redact(score.reason or "")})
    return out

def _severity_ranks(suite: Suite) -> dict[tuple[str, str], int]:
    return {(p.name, str(s)): i for p in suite.perturbations for i, s in enumerate(p.grid)}

def score_plan(plan: Plan, evaluators: Sequence[Evaluator], *, cache: SQLiteCache | None = None,
               progress: Progress | None = None) -> RunResult:
    """Score originals and variants with every evaluator and build the long score table."""
    by_id = {e.id: e for e in plan.examples}
    ranks = _severity_ranks(plan.suite)
    records: list[dict[str, Any]] = []
    stats: dict[str, EvaluatorStats] = {}
    too_long = long_rows(plan.examples, plan.suite)  # skipped rows: their originals too
    scored = [e for e in plan.examples if e.id not in too_long]
    originals = {e.id: _request(e, e.hypothesis) for e in scored}
    noised = [_request(by_id[v.example_id], v.text) for v in plan.variants]
    for evaluator in evaluators:
        scorer = Scorer(evaluator, cache, progress)
        if evaluator.level == "corpus":
            records.extend(_score_corpus(evaluator, plan, scorer, ranks))
        else:
            scores = scorer.score([*originals.values(), *noised])
            for example in scored:
                base = {"example_id": example.id, "task": example.task, "perturbation": ORIGINAL,
                        "severity": "", "severity_rank": -1, "seed": -1, "noise_ratio": 0.0}
                records.extend(_rows(evaluator, base, scores[originals[example.id].key]))
            for variant, request in zip(plan.variants, noised, strict=True):
                base = {"example_id": variant.example_id, "task": by_id[variant.example_id].task,
                        "perturbation": variant.perturbation, "severity": str(variant.severity),
                        "severity_rank": ranks.get((variant.perturbation, str(variant.severity)), 0),
                        "seed": variant.seed, "noise_ratio": variant.noise_ratio}
                records.extend(_rows(evaluator, base, scores[request.key]))
        scorer.stats.missing = sum(1 for r in records
                                   if r["evaluator"] == evaluator.label and r["status"] != "ok")
        stats[evaluator.label] = scorer.stats
    table = pd.DataFrame.from_records(records, columns=SCORE_COLUMNS)
    signatures = {e.label: e.signature() for e in evaluators}
    result = RunResult(plan, table, stats, signatures)
    result.usage = _usage(evaluators)
    return result

def _score_corpus(evaluator: Evaluator, plan: Plan, scorer: Scorer,
                  ranks: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """Distribution-level evaluators: one score per set (the gold set, each noised set)."""
    by_id = {e.id: e for e in plan.examples}
    too_long = long_rows(plan.examples, plan.suite)
    gold = [_request(e, e.hypothesis) for e in plan.examples if e.id not in too_long]
    groups: dict[tuple[str, str, int], list[Variant]] = defaultdict(list)
    for variant in plan.variants:
        groups[(variant.perturbation, str(variant.severity), variant.seed)].append(variant)
    records = []
    ratio_of: dict[tuple[str, str, int], float] = {}
    sets: dict[tuple[str, str, int], list[ScoreRequest]] = {(ORIGINAL, "", -1): gold}
    for key, members in groups.items():
        sets[key] = [_request(by_id[v.example_id], v.text) for v in members]
        ratio_of[key] = sum(v.noise_ratio for v in members) / len(members)
    set_requests = {key: _set_request(requests) for key, requests in sets.items()}
    # each set is cached as one pseudo-request whose text is the hash of its members
    cached = scorer.cache.get_many(evaluator.cache_namespace,
                                   [r.key for r in set_requests.values()]) if scorer.cache else {}
    scorer.progress.start(f"scoring {evaluator.label}", len(sets))
    for key, requests in sets.items():
        pseudo = set_requests[key]
        scorer.stats.requested += len(requests)
        if pseudo.key in cached:
            row = {a: Score.from_json(s) for a, s in cached[pseudo.key].items()}
            scorer.stats.cached += 1
        else:
            row = evaluator.score_sets(gold, requests)
            scorer.stats.calls += 1
            scorer.stats.scored += 1
            if scorer.cache is not None and all(s.ok for s in row.values()):
                scorer.cache.put(evaluator.cache_namespace, pseudo.key,
                                 {a: s.to_json() for a, s in row.items()})
        pert, severity, seed = key
        base = {"example_id": CORPUS, "task": plan.examples[0].task if plan.examples else "",
                "perturbation": pert, "severity": severity,
                "severity_rank": ranks.get((pert, severity), -1), "seed": seed,
                "noise_ratio": ratio_of.get(key, 0.0)}
        records.extend(_rows(evaluator, base, row))
        scorer.progress.advance(f"scoring {evaluator.label}")
    scorer.progress.finish(f"scoring {evaluator.label}")
    scorer.stats.distinct = len(sets)
    return records

def _set_request(requests: Sequence[ScoreRequest]) -> ScoreRequest:
    digest = hashlib.sha256("\n".join(sorted(r.key for r in requests)).encode()).hexdigest()
    return ScoreRequest(text=f"set:{digest}", task="corpus")

def _usage(evaluators: Sequence[Evaluator]) -> dict[str, Usage]:
    if not any(hasattr(e, "usage") for e in evaluators):
        return {}  # no LLM evaluator: the client's modules need not load
    from evalstress.llm.accounting import evaluator_usage

    return evaluator_usage(evaluators)

def open_cache(path: str | Path | None = None) -> SQLiteCache:
    return SQLiteCache(Path(path) if path else default_cache_dir() / "scores.sqlite", "scores")

def run(examples: Sequence[Example], suite: Suite, evaluators: Sequence[Evaluator], *,
        cache: SQLiteCache | None = None, parser: TextParser | None = None,
        resources: dict[str, Any] | None = None, progress: Progress | None = None,
        workdir: str | Path | None = None, chunk_size: int | None = None, workers: int = 1,
        generation: GenerationSetup | None = None, policy: Any = None,
        pool: Sequence[Example] | None = None) -> RunResult:
    """The whole flow short of analysis, streamed chunk by chunk (see `pipeline.py`).

    `workdir` is the staging folder (a run killed there resumes at its first unfinished chunk);
    without one, a temporary folder that lives as long as the result. `workers` > 1 runs rule
    perturbations and CPU-bound evaluators in that many processes (0: every core), with the same
    results. `generation` is the generation stage (LLM-written and imported variants, see
    `evalstress.generation`); `policy` can stop units early (the sequential DHP design). `pool`
    is the dataset perturbations may borrow from (default: `examples`; a shard of a larger run
    passes the whole dataset)."""
    from evalstress.pipeline import StreamingRun, default_chunk_size

    processes = workers if workers > 0 else default_workers()
    result = StreamingRun(examples, suite, evaluators, cache=cache, parser=parser,
                          resources=resources, progress=progress,
                          workdir=Path(workdir) if workdir is not None else None,
                          chunk_size=chunk_size or default_chunk_size(len(examples), processes),
                          workers=processes,
                          generation=generation, policy=policy, pool=pool).run()
    if generation is not None:
        result.plan.generation = generation.block_json(result.summary.get("generation") or {})
    result.usage = _usage(evaluators)
    return result


def estimate_plan(plan: Plan, evaluators: Sequence[Evaluator], *,
                  cache: SQLiteCache | None = None) -> list[dict[str, Any]]:
    """What scoring the plan would cost, without scoring: per evaluator the distinct texts, the
    ones already in the score cache, and (via an optional `estimate(requests)`) calls and tokens.
    Evaluators without `estimate` count one call per batch of uncached texts."""
    by_id = {e.id: e for e in plan.examples}
    too_long = long_rows(plan.examples, plan.suite)
    requests = [_request(e, e.hypothesis) for e in plan.examples if e.id not in too_long]
    requests += [_request(by_id[v.example_id], v.text) for v in plan.variants]
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
        estimate = getattr(evaluator, "estimate", None)
        if callable(estimate):
            row.update(estimate(todo))
        else:
            size = max(1, evaluator.batch_size)
            row.update(calls=-(-len(todo) // size))
        out.append(row)
    return out
