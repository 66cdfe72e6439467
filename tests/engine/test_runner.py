from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from evalstress.core.data import Example, builtin_corpus
from evalstress.core.records import CORPUS, ORIGINAL
from evalstress.engine.planning import plan_dataset, shard_examples
from evalstress.engine.runner import run
from evalstress.engine.scoring import open_cache
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow
from evalstress.suites import custom_suite


class CountingEvaluator(Evaluator):
    """Word count as a score; records every text it is asked to score."""

    name = "counting"
    batch_size = 8

    def __init__(self, fail_after_batches: int | None = None):
        super().__init__()
        self.seen: list[str] = []
        self.batches = 0
        self.fail_after_batches = fail_after_batches

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("words",)

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        if self.fail_after_batches is not None and self.batches >= self.fail_after_batches:
            raise KeyboardInterrupt("simulated crash")
        self.batches += 1
        self.seen.extend(r.text for r in requests)
        return [{"words": Score(float(len(r.text.split())))} for r in requests]


@pytest.fixture
def examples() -> list[Example]:
    return builtin_corpus()[:4]


SUITE_NAMES = ["truncation", "token-drop", "sentence-switching"]


def test_each_distinct_text_is_scored_once(examples: list[Example]) -> None:
    evaluator = CountingEvaluator()
    result = run(examples, custom_suite(SUITE_NAMES, seeds=3), [evaluator])
    assert len(evaluator.seen) == len(set(evaluator.seen))
    originals = [e.hypothesis for e in examples]
    assert all(evaluator.seen.count(text) == 1 for text in originals)
    table = result.table
    assert (table["perturbation"] == ORIGINAL).sum() == len(examples)
    stats = result.stats["counting"]
    assert stats.requested == len(examples) + len(result.plan.variants)
    # truncation is deterministic: 3 seeds give one distinct text per severity
    assert stats.distinct < stats.requested


def test_plan_is_deterministic(examples: list[Example]) -> None:
    suite = custom_suite(SUITE_NAMES, seeds=2)
    first = plan_dataset(examples, suite)
    second = plan_dataset(examples, custom_suite(SUITE_NAMES, seeds=2))
    assert [v.text for v in first.variants] == [v.text for v in second.variants]
    assert first.parses == len(examples)  # one parse per text, whatever the suite size


def test_interrupted_run_resumes_from_the_cache(examples: list[Example]) -> None:
    suite = custom_suite(SUITE_NAMES, seeds=2)
    cache = open_cache()
    crashing = CountingEvaluator(fail_after_batches=3)
    with pytest.raises(KeyboardInterrupt):
        run(examples, suite, [crashing], cache=cache)
    assert crashing.batches == 3
    resumed = CountingEvaluator()
    result = run(examples, suite, [resumed], cache=cache)
    stats = result.stats["counting"]
    assert stats.cached == 3 * CountingEvaluator.batch_size
    assert len(resumed.seen) == stats.distinct - stats.cached
    assert not set(crashing.seen) & set(resumed.seen)  # nothing computed twice
    third = CountingEvaluator()
    again = run(examples, suite, [third], cache=cache)
    assert third.seen == [] and again.stats["counting"].scored == 0
    assert again.table["score"].tolist() == result.table["score"].tolist()


def test_missing_scores_are_not_cached_and_are_retried(examples: list[Example]) -> None:
    class Flaky(CountingEvaluator):
        def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
            self.seen.extend(r.text for r in requests)
            return [{"words": Score.missing("backend down")} for _ in requests]

    cache = open_cache()
    suite = custom_suite(["truncation"], seeds=1)
    first = run(examples, suite, [Flaky()], cache=cache)
    assert (first.table["status"] == "missing").all()
    assert set(first.table["reason"]) == {"backend down"}
    retry = CountingEvaluator()
    run(examples, suite, [retry], cache=cache)
    assert len(retry.seen) == first.stats["counting"].distinct


class SetSize(Evaluator):
    name = "set-size"
    level = "corpus"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("mean_words",)

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        raise AssertionError("corpus evaluators are called per set")

    def score_sets(self, gold: Sequence[ScoreRequest], candidates: Sequence[ScoreRequest]) -> ScoreRow:
        self.calls += 1
        return {"mean_words": Score(sum(len(c.text.split()) for c in candidates) / len(candidates))}


def test_corpus_level_evaluators_score_each_set_once(examples: list[Example]) -> None:
    evaluator = SetSize()
    result = run(examples, custom_suite(["truncation"], seeds=2), [evaluator], cache=open_cache())
    table = result.table
    assert set(table["example_id"]) == {CORPUS}
    assert evaluator.calls == 1 + 5 * 2  # gold set + each severity x seed
    gold = table[table["perturbation"] == ORIGINAL]["score"].item()
    assert (table[table["perturbation"] == "truncation"]["score"] < gold).all()
    again = SetSize()
    run(examples, custom_suite(["truncation"], seeds=2), [again], cache=open_cache())
    assert again.calls == 0


def test_shards_partition_the_examples() -> None:
    corpus = builtin_corpus()
    shards = [shard_examples(corpus, (i, 3)) for i in range(3)]
    ids = [e.id for shard in shards for e in shard]
    assert sorted(ids) == sorted(e.id for e in corpus)
    assert all(shards)
    with pytest.raises(ValueError):
        shard_examples(corpus, (3, 3))


def test_a_perturbation_limited_to_tasks_is_planned_only_for_them() -> None:
    from evalstress.suites import Suite

    corpus = builtin_corpus()
    stories = [e for e in corpus if e.task == "story"][:2]
    summaries = [e for e in corpus if e.task == "summarization"][:2]
    suite = Suite.from_dict({"perturbations": {"truncation": {"tasks": ["story"], "grid": [0.5]},
                                               "token-drop": {"grid": [0.5]}}, "seeds": 1})
    plan = plan_dataset([*stories, *summaries], suite)
    truncated = {v.example_id for v in plan.variants if v.perturbation == "truncation"}
    dropped = {v.example_id for v in plan.variants if v.perturbation == "token-drop"}
    assert truncated == {e.id for e in stories}
    assert dropped == {e.id for e in [*stories, *summaries]}
    assert not [s for s in plan.skips if s.perturbation == "truncation"]  # not planned, not skipped
    with pytest.raises(ValueError, match=r"unknown task.*storry"):
        Suite.from_dict({"perturbations": {"truncation": {"tasks": ["storry"]}}})


# --- rows beyond the text length limit (suite option max_chars) -----------------------------

LONG_ROW = Example("long-row", "summarization", "", "Waves broke on the rocks. " * 10)  # 260 chars
SHORT_ROW = Example("short", "summarization", "",
                    "Aunt Rosa planted tomatoes in April. The summer was dry, so she watered them.")


def test_the_streaming_run_skips_a_long_row_and_scores_the_rest() -> None:
    from evalstress.evaluators.base import create_evaluator

    examples = [LONG_ROW, SHORT_ROW]
    suite = custom_suite(["truncation", "token-drop"], [0], ["blindspot"])
    suite.options["max_chars"] = 200  # the long row has 260 characters
    result = run(examples, suite, [create_evaluator("rouge")], workers=1)
    reasons = {r["reason"] for r in result.summary["skip_reasons"]}
    assert reasons == {"row 'long-row': its text of 260 characters is beyond the text length "
                       "limit (200; raise it with --max-chars or the suite option max_chars)"}
    assert set(result.table["example_id"]) == {"short"}


def test_the_whole_dataset_plan_perturbs_neither_variants_nor_original_of_a_long_row() -> None:
    examples = [LONG_ROW, SHORT_ROW]
    suite = custom_suite(["truncation"], [0], ["blindspot"])
    suite.options["max_chars"] = 200
    plan = plan_dataset(examples, suite)
    assert {v.example_id for v in plan.variants} == {"short"}
    assert {s.example_id for s in plan.skips} == {"long-row"}
    assert plan.parses == 1  # the long row was never parsed


class PartsEvaluator(CountingEvaluator):
    """Takes 8 texts per runner call and scores them in model batches of 3 (3, 3, 2)."""

    def __init__(self, fail_in_part: int | None = None, extra_row: bool = False):
        super().__init__()
        self.fail_in_part, self.extra_row = fail_in_part, extra_row

    def score_parts(self, requests: Sequence[ScoreRequest]) -> Iterator[list[ScoreRow]]:
        for number, start in enumerate(range(0, len(requests), 3), 1):
            if number == self.fail_in_part:
                raise RuntimeError("killed mid-batch")
            yield self.score(requests[start:start + 3])
        if self.extra_row:
            yield self.score(requests[:1])


def test_scorer_caches_each_part_an_evaluator_hands_back(tmp_path: Path) -> None:
    from evalstress.engine.scoring import Scorer

    cache = open_cache(tmp_path / "scores.sqlite")
    requests = [ScoreRequest(f"text number {i}") for i in range(8)]
    evaluator = PartsEvaluator(fail_in_part=3)
    with pytest.raises(RuntimeError, match="mid-batch"):
        Scorer(evaluator, cache).score(requests)
    assert cache.count(evaluator.cache_namespace) == 6  # parts 1 and 2, of 3 texts each
    with pytest.raises(RuntimeError, match="returned 9 rows for 8 requests"):
        Scorer(PartsEvaluator(extra_row=True), None).score(requests)
