"""The `dhp` suite plans paper 003's rule-based perturbations per task as its Tables 1 and 2 say."""

from __future__ import annotations

import pytest

from evalstress.core.data import Example
from evalstress.engine.planning import plan_dataset
from evalstress.perturb.base import Skip
from evalstress.suites import load_suite
from tests.perturb.conftest import MARKET, run, text_of

# Paper 003, Table 1 (rule-based cells) with Table 2's levels: (perturbation, severity) per task
TABLE_1 = {
    "summarization": {("char-deletion", "minor"), ("char-deletion", "major"),
                      ("char-typo", "minor"), ("char-typo", "major"),
                      ("sentence-reordering", "minor"), ("sentence-reordering", "major")},
    "story": {("char-deletion", "minor"), ("char-typo", "minor"), ("random-ending", "default"),
              ("wrong-ending", "default")},
    "qa": {("char-deletion", "minor"), ("char-deletion", "major"), ("char-typo", "minor"),
           ("char-typo", "major"), ("random-answer", "default")},
    "translation": {("char-deletion", "minor"), ("char-deletion", "major"),
                    ("char-typo", "minor"), ("char-typo", "major"),
                    ("word-span-deletion", "minor"), ("word-span-deletion", "major")},
}


def _planned(task: str) -> set[tuple[str, str]]:
    return {(plan.name, str(severity)) for plan, severity, seed in
            load_suite("dhp").units(task) if seed == 0}


@pytest.mark.parametrize("task", sorted(TABLE_1))
def test_each_task_gets_its_table_1_set(task: str) -> None:
    planned = _planned(task)
    if task == "story":
        # the suite's char grid is minor/major for every task; the story's major skips (below)
        planned -= {("char-deletion", "major"), ("char-typo", "major")}
    assert planned == TABLE_1[task]


def test_word_span_deletion_endings_and_random_answer_stay_in_their_task() -> None:
    for task in ("summarization", "story", "qa"):
        assert not {p for p, _ in _planned(task)} & {"word-span-deletion"}
    for task in ("summarization", "qa", "translation"):
        assert not {p for p, _ in _planned(task)} & {"random-ending", "wrong-ending"}
    for task in ("summarization", "story", "translation"):
        assert "random-answer" not in {p for p, _ in _planned(task)}
    # paragraph-length tasks of the product follow summarization
    assert _planned("dialogue") == _planned("summarization")


def test_story_characters_have_one_level_of_five() -> None:
    story = "Tom found a key. He opened the box. Inside was a map of the island."
    for name in ("char-deletion", "char-typo"):
        major = run(name, story, "major", task="story")
        assert isinstance(major, Skip) and "one level only" in major.reason
    deleted = text_of(run("char-deletion", story, "minor", task="story"))
    assert sum(c.isalnum() for c in story) - sum(c.isalnum() for c in deleted) == 5
    # a suite can still ask for a story major level explicitly
    forced = run("char-deletion", story, "major", task="story", params={"k": {"major": 25}})
    assert sum(c.isalnum() for c in story) - sum(
        c.isalnum() for c in text_of(forced)) == 25


@pytest.mark.parametrize(("task", "minor", "major"), [
    ("summarization", 10, 50), ("translation", 10, 50), ("qa", 5, 25)])
def test_character_k_per_task_follows_table_2(task: str, minor: int, major: int) -> None:
    for severity, k in (("minor", minor), ("major", major)):
        out = text_of(run("char-deletion", MARKET, severity, task=task))
        assert sum(c.isalnum() for c in MARKET) - sum(c.isalnum() for c in out) == k


def test_a_mixed_dataset_plans_each_example_with_its_own_set() -> None:
    examples = [Example("s1", "summarization", "src", MARKET),
                Example("t1", "translation", "Quelle", MARKET),
                Example("q1", "qa", "passage", "The answer is that the market closed early "
                        "because of the storm."),
                Example("q2", "qa", "passage", "It opened again on Monday morning."),
                Example("st1", "story", "Start.", "Tom found a key. He opened the box.",
                        meta={"wrong_ending": "He sold the box."})]
    plan = plan_dataset(examples, load_suite("dhp"))
    by_example: dict[str, set[str]] = {}
    for variant in plan.variants:
        by_example.setdefault(variant.example_id, set()).add(variant.perturbation)
    assert by_example["s1"] == {"char-deletion", "char-typo", "sentence-reordering"}
    assert by_example["t1"] == {"char-deletion", "char-typo", "word-span-deletion"}
    assert by_example["q1"] == {"char-deletion", "char-typo", "random-answer"}
    assert by_example["st1"] == {"char-deletion", "char-typo", "wrong-ending"}
    reasons = {s.reason for s in plan.skips if s.example_id == "st1"}
    assert any("one level only" in r for r in reasons)  # story major char units
    assert any("no other 'story' example" in r for r in reasons)  # random-ending: one story
