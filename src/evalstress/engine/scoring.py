"""The scoring service: distinct requests through the score cache, in batches, into score rows.

Every distinct text is scored once per evaluator (originals are never re-scored per
perturbation); each batch (each model batch, for evaluators that hand back parts:
`Evaluator.score_parts`) goes to the SQLite cache as soon as it is scored, so a rerun after a
crash resumes and costs nothing for what was already done. Missing scores are never cached: a
rerun asks again. Corpus-level evaluators (MAUVE) score whole sets as one pseudo-request each.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstress.core.cache import SQLiteCache, default_cache_dir
from evalstress.core.data import Example
from evalstress.core.records import CORPUS, ORIGINAL, Progress
from evalstress.core.redact import redact
from evalstress.core.scoretable import ScoreColumns
from evalstress.core.storage import check_cache_dir
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow

if TYPE_CHECKING:
    from evalstress.llm.accounting import Usage
    from evalstress.perturb.base import Variant
    from evalstress.suites import Suite

Unit = tuple[str, str]  # (perturbation name, severity as string)
SetKey = tuple[str, str, int]  # (perturbation, severity as string, seed) of a corpus-level set


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


def open_cache(path: str | Path | None = None) -> SQLiteCache:
    """The score cache at `path` (default: scores.sqlite in the user's cache folder)."""
    return SQLiteCache(Path(path) if path else default_cache_dir() / "scores.sqlite", "scores")


def open_run_cache(cache_dir: Path | None, no_cache: bool) -> SQLiteCache | None:
    """The score cache of a run: in `cache_dir` when given, none with `no_cache`. The folder is
    proven writable first (a StorageError says why), before any work."""
    if no_cache:
        return None
    folder = cache_dir or default_cache_dir()
    check_cache_dir(folder)
    return open_cache(folder / "scores.sqlite")


def configure_caches(evaluators: Iterable[Any], cache_dir: Path | None, no_cache: bool) -> None:
    """Point the response caches of LLM judges and generators at the run's cache folder (or turn
    them off with `no_cache`); evaluators without one are left alone."""
    if cache_dir is None and not no_cache:
        return  # they already use the default folder
    for evaluator in evaluators:
        configure = getattr(evaluator, "configure_cache", None)
        if callable(configure):
            configure(cache_dir, enabled=not no_cache)


def request_for(example: Example, text: str) -> ScoreRequest:
    """What an evaluator is asked about `text`: the example's source, references and task."""
    return ScoreRequest(text, example.source, example.references, example.task)


def set_request(requests: Sequence[ScoreRequest]) -> ScoreRequest:
    """The pseudo-request that stands for a whole set in the cache: its text is the members'
    hash, so the same set is never scored twice."""
    digest = hashlib.sha256("\n".join(sorted(r.key for r in requests)).encode()).hexdigest()
    return ScoreRequest(text=f"set:{digest}", task="corpus")


def severity_ranks(suite: Suite) -> dict[Unit, int]:
    """Each (perturbation, severity)'s position in its grid: the order of the blind-spot tests."""
    return {(p.name, str(s)): i for p in suite.perturbations for i, s in enumerate(p.grid)}


class Scorer:
    """Scores distinct requests through the cache, in batches sorted by length (or by source,
    for an evaluator whose prompts start with it: `Evaluator.order_by_source`)."""

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
        todo = sorted((r for k, r in unique.items() if k not in results),
                      key=(lambda r: (r.source, r.text)) if self.evaluator.order_by_source
                      else (lambda r: (len(r.text), "")))
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

    def score_set(self, gold: Sequence[ScoreRequest], members: Sequence[ScoreRequest],
                  pseudo: ScoreRequest, cached: Mapping[str, Any]) -> ScoreRow:
        """A corpus-level score of one set against the gold set, through the cache (`pseudo`:
        the set's `set_request`, `cached`: what the cache already holds of such requests)."""
        self.stats.requested += len(members)
        if pseudo.key in cached:
            self.stats.cached += 1
            return {a: Score.from_json(s) for a, s in cached[pseudo.key].items()}
        row = self.evaluator.score_sets(gold, members)
        self.stats.calls += 1
        self.stats.scored += 1
        if self.cache is not None and all(s.ok for s in row.values()):
            self.cache.put(self.evaluator.cache_namespace, pseudo.key,
                           {a: s.to_json() for a, s in row.items()})
        return row

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


def answer_of(score: Score) -> str | None:
    """The label an evaluator answered for a score, where it reports one (judges)."""
    answer = score.extra.get("answer") if score.ok and score.extra else None
    return None if answer is None else str(answer)


def add_rows(out: ScoreColumns, evaluator: Evaluator, base: dict[str, Any], row: ScoreRow) -> int:
    """Append one score-table row per aspect of `row`; returns how many are missing."""
    missing = 0
    for aspect in evaluator.aspects:
        score = row.get(aspect) or Score.missing("the evaluator returned no score for this aspect")
        missing += not score.ok
        out.append(**base, evaluator=evaluator.label, aspect=aspect,
                   score=score.value if score.ok else float("nan"),
                   higher_is_better=evaluator.higher_is_better(aspect),
                   status="ok" if score.ok else "missing", reason=redact(score.reason or ""),
                   answer=answer_of(score))
    return missing


def score_rows(evaluator: Evaluator, examples: Sequence[Example], variants: Sequence[Variant],
               ranks: dict[Unit, int], cache: SQLiteCache | None,
               progress: Progress | None = None) -> tuple[ScoreColumns, EvaluatorStats]:
    """Score a chunk's originals and variants with one evaluator; its rows and stats."""
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


class CorpusSets:
    """The sets a corpus-level evaluator scores: the gold set and one per (perturbation,
    severity, seed), gathered chunk by chunk and scored once at the end of the run."""

    def __init__(self) -> None:
        self.members: dict[SetKey, list[ScoreRequest]] = {}
        self.ratios: dict[SetKey, list[float]] = {}

    def add_originals(self, examples: Iterable[Example]) -> None:
        gold = self.members.setdefault((ORIGINAL, "", -1), [])
        gold.extend(request_for(e, e.hypothesis) for e in examples)

    def add_variants(self, by_id: Mapping[str, Example], variants: Iterable[Variant]) -> None:
        for variant in variants:
            key = (variant.perturbation, str(variant.severity), variant.seed)
            self.members.setdefault(key, []).append(
                request_for(by_id[variant.example_id], variant.text))
            self.ratios.setdefault(key, []).append(variant.noise_ratio)

    def score(self, evaluator: Evaluator, cache: SQLiteCache | None, ranks: dict[Unit, int],
              task: str, progress: Progress | None = None
              ) -> tuple[ScoreColumns, EvaluatorStats, Counter[tuple[str, str, str]]]:
        """One row per set and aspect; the evaluator's stats; missing rows by reason."""
        scorer = Scorer(evaluator, cache, progress)
        out = ScoreColumns()
        missing: Counter[tuple[str, str, str]] = Counter()
        gold = self.members.get((ORIGINAL, "", -1), [])
        pseudo = {key: set_request(members) for key, members in self.members.items()}
        cached = (cache.get_many(evaluator.cache_namespace, [r.key for r in pseudo.values()])
                  if cache is not None else {})
        label = f"scoring {evaluator.label}"
        scorer.progress.start(label, len(self.members))
        for key, members in self.members.items():
            row = scorer.score_set(gold, members, pseudo[key], cached)
            perturbation, severity, seed = key
            ratios = self.ratios.get(key)
            before = len(out)
            scorer.stats.missing += add_rows(out, evaluator, {
                "example_id": CORPUS, "task": task, "perturbation": perturbation,
                "severity": severity, "severity_rank": ranks.get((perturbation, severity), -1),
                "seed": seed, "noise_ratio": sum(ratios) / len(ratios) if ratios else 0.0}, row)
            for i in range(before, len(out)):
                if out.columns["status"][i] != "ok":
                    missing[(evaluator.label, out.columns["aspect"][i],
                             out.columns["reason"][i])] += 1
            scorer.progress.advance(label)
        scorer.progress.finish(label)
        scorer.stats.distinct = len(self.members)
        return out, EvaluatorStats(**vars(scorer.stats)), missing


def evaluator_usage(evaluators: Sequence[Evaluator]) -> dict[str, Usage]:
    """LLM accounting per evaluator label (results.json's `usage`); empty without an LLM."""
    if not any(hasattr(e, "usage") for e in evaluators):
        return {}  # no LLM evaluator: the client's modules need not load
    from evalstress.llm.accounting import evaluator_usage as usage_of

    return usage_of(evaluators)
