"""Criteria texts: every aspect at every level, user files, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstress.criteria import (
    LEVELS,
    ancestors,
    aspects,
    builtin_criteria,
    criterion_text,
    expectations,
    load_criteria,
)


def test_every_aspect_has_distinct_texts_at_every_level() -> None:
    table = builtin_criteria()
    assert list(table) == list(aspects()) or set(table) == set(aspects())
    for name, criterion in table.items():
        texts = {level: criterion.text(level) for level in LEVELS}
        assert texts["empty"] == "" and texts["term-only"] == criterion.name
        written = [texts[level] for level in ("default", "simplified", "term", "detailed", "list")]
        assert len(set(written)) == 5, name
        assert len(texts["detailed"]) > len(texts["default"]) > len(texts["term"])
        assert texts["list"].count("\n- ") == 5


def test_list_level_follows_the_scale() -> None:
    text = criterion_text("coherence", "list", (0, 100))
    assert [line.split(":")[0] for line in text.splitlines()[1:]] == [
        "- 100", "- 75", "- 50", "- 25", "- 0"]


def test_user_file_adds_criteria_and_bad_files_are_named(tmp_path: Path) -> None:
    good = tmp_path / "mine.yaml"
    good.write_text("humour:\n  name: Humour\n  default: Is it funny?\n  simplified: Funny?\n"
                    "  term: Is the text humorous?\n  checks: Look for jokes.\n"
                    "  anchors: {1: 'no', 2: barely, 3: some, 4: often, 5: very}\n")
    table = load_criteria(str(good))
    assert table["humour"].text("term-only") == "Humour" and "fluency" in table
    bad = tmp_path / "bad.yaml"
    bad.write_text("humour:\n  name: Humour\n  default: Is it funny?\n")
    with pytest.raises(ValueError, match=r"bad\.yaml: aspect 'humour' lacks field\(s\) simplified"):
        load_criteria(str(bad))
    with pytest.raises(ValueError, match="unknown criteria level"):
        builtin_criteria()["fluency"].text("verbose")


def test_table_21_expectations_are_the_papers_not_the_hierarchys() -> None:
    # Table 21's right-hand column, read off the paper: the target and its ancestors move,
    # except that the three non-contradiction attacks also expect informativeness to move
    beyond_the_tree = {"000:different-entity": {"informativeness"},
                       "000:conflicting-fact": {"informativeness"},
                       "000:negation": {"informativeness"}}
    for attack, row in expectations().items():
        assert row.target is not None
        from_tree = {row.target, *ancestors(row.target)}
        moved = {aspect for aspect, moves in row.expected.items() if moves}
        assert moved - from_tree == beyond_the_tree.get(attack, set()), attack
        assert from_tree <= moved, attack


def test_a_criterion_variant_rewords_each_builtin_definition_and_nothing_else(
        tmp_path: Path) -> None:
    from evalstress.criteria import paraphrases

    builtin, words = builtin_criteria(), paraphrases()
    for variant in (1, 2):
        reworded = load_criteria(None, variant)
        for aspect, criterion in reworded.items():
            assert criterion.default == words[aspect][variant - 1]
            assert criterion.default != builtin[aspect].default
            assert (criterion.simplified, criterion.anchors) == (
                builtin[aspect].simplified, builtin[aspect].anchors)
    own = tmp_path / "mine.yaml"
    own.write_text("fluency:\n  name: Fluency\n  default: My own words.\n  simplified: s\n"
                   "  term: t\n  checks: c\n  anchors: {5: a, 4: b, 3: c, 2: d, 1: e}\n",
                   encoding="utf-8")
    mine = load_criteria(str(own), 1)
    assert mine["fluency"].default == "My own words."  # no rewording of a user's criterion
    assert mine["coherence"].default == words["coherence"][0]
    with pytest.raises(ValueError, match=r"criterion_variant=3: .* 1 to 2"):
        load_criteria(None, 3)


def test_a_judge_signs_its_criterion_variant_only_when_given() -> None:
    from evalstress.evaluators.base import create_evaluator

    base = "judge:model=m,base_url=https://judge.example/v1,aspect=coherence"
    plain = create_evaluator(base)
    worded = create_evaluator(base + ",criterion_variant=2")
    assert "criterion_variant" not in plain.signature()["params"]
    assert worded.signature()["params"]["criterion_variant"] == 2
    assert "build on each other" in worded.criterion_text("coherence")
