"""The runner: a run killed mid-way resumes from the score cache, and the streaming run skips a
row beyond the text length limit and scores the rest."""

from __future__ import annotations

import pytest

from evalstress.core.data import Example, builtin_corpus
from evalstress.engine.runner import run
from evalstress.engine.scoring import open_cache
from evalstress.suites import custom_suite
from tests.engine.test_planning import LONG_ROW, SHORT_ROW
from tests.engine.test_scoring import SUITE_NAMES, CountingEvaluator


@pytest.fixture
def examples() -> list[Example]:
    return builtin_corpus()[:4]


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
