"""Planning: one perturbation loop for every path (plan_dataset), deterministic shards, units
left out by the sequential design (is_stopped) and rows beyond the text length limit (long_rows)."""

from __future__ import annotations

import pytest

from evalstress.core.data import Example, builtin_corpus
from evalstress.engine.planning import is_stopped, long_rows, plan_dataset, shard_examples
from evalstress.suites import custom_suite


@pytest.fixture
def examples() -> list[Example]:
    return builtin_corpus()[:4]


SUITE_NAMES = ["truncation", "token-drop", "sentence-switching"]


def test_plan_is_deterministic(examples: list[Example]) -> None:
    suite = custom_suite(SUITE_NAMES, seeds=2)
    first = plan_dataset(examples, suite)
    second = plan_dataset(examples, custom_suite(SUITE_NAMES, seeds=2))
    assert [v.text for v in first.variants] == [v.text for v in second.variants]
    assert first.parses == len(examples)  # one parse per text, whatever the suite size


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


def test_the_whole_dataset_plan_perturbs_neither_variants_nor_original_of_a_long_row() -> None:
    examples = [LONG_ROW, SHORT_ROW]
    suite = custom_suite(["truncation", "sentence-switching"], [0], ["blindspot"])
    suite.options["max_chars"] = 200
    plan = plan_dataset(examples, suite)
    assert {v.example_id for v in plan.variants} == {"short"}
    assert {s.example_id for s in plan.skips} == {"long-row"}
    assert plan.parses == 1  # the long row was never parsed


def test_perturbations_that_read_only_the_raw_text_parse_nothing(examples: list[Example]) -> None:
    """Truncation cuts whitespace words: a plan of it alone never runs spaCy (a one-example
    run of it starts in a fraction of the time), and adding a perturbation that reads the
    parse parses each text once."""
    alone = plan_dataset(examples, custom_suite(["truncation"], seeds=1))
    assert alone.variants and alone.parses == 0
    both = plan_dataset(examples, custom_suite(["truncation", "sentence-switching"], seeds=1))
    assert both.parses == len(examples)


def test_long_rows_names_only_the_rows_beyond_the_limit_with_the_reason_a_user_reads() -> None:
    suite = custom_suite(["truncation"], [0], ["blindspot"])
    suite.options["max_chars"] = 200  # the long row has 260 characters, the short one 77
    assert long_rows([LONG_ROW, SHORT_ROW], suite) == {
        "long-row": "row 'long-row': its text of 260 characters is beyond the text length limit "
                    "(200; raise it with --max-chars or the suite option max_chars)"}
    suite.options["max_chars"] = 300
    assert long_rows([LONG_ROW, SHORT_ROW], suite) == {}


def test_a_unit_is_stopped_by_perturbation_and_severity_or_for_one_task_only() -> None:
    # the sequential design stops (perturbation, severity) everywhere, or
    # (task, perturbation, severity) for one task; severities are kept as strings
    stopped = frozenset({("truncation", "0.5"), ("story", "token-drop", "0.3")})
    assert is_stopped(stopped, "summarization", "truncation", 0.5)
    assert is_stopped(stopped, "story", "truncation", "0.5")
    assert is_stopped(stopped, "story", "token-drop", 0.3)
    assert not is_stopped(stopped, "summarization", "token-drop", 0.3)  # stories only
    assert not is_stopped(stopped, "summarization", "truncation", 0.25)  # another severity
    assert not is_stopped(None, "story", "truncation", 0.5)  # nothing stopped yet
