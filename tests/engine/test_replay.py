"""Units replayed from what shards made: the same variants and skips, in the same order, as the
perturbation loop itself, without applying any perturbation."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from evalstress.core.data import Example, builtin_corpus
from evalstress.core.text import TextParser
from evalstress.engine import variantfile
from evalstress.engine.planning import plan_units
from evalstress.engine.replay import MissingUnit, UnitReplay
from evalstress.perturb.base import Perturbation
from evalstress.suites import custom_suite

SUITE = ["truncation", "char-typo", "sentence-switching"]


def _examples() -> list[Example]:
    corpus = builtin_corpus()[:4]
    # one sentence: sentence-switching skips it
    return [*corpus, replace(corpus[0], id="short", hypothesis="Only one sentence here.")]


def test_replayed_units_are_the_loops_in_its_order_with_stopped_and_long_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    examples = _examples()
    suite = custom_suite(SUITE, seeds=2)
    made = plan_units(examples, suite, TextParser(), examples, {}, include=lambda p: True)
    assert [s.example_id for s in made.skips] == ["short"] * 2 * len(
        suite.perturbations[2].grid)
    stopped = frozenset({("truncation", str(suite.perturbations[0].grid[0]))})
    chunk = examples[1:3]
    want = plan_units(chunk, suite, TextParser(), examples, {}, stopped=stopped,
                      include=lambda p: p.name != "char-typo")
    # written and read back as a shard's files are
    variants, skips = tmp_path / variantfile.FILE, tmp_path / "skips.jsonl"
    variantfile.write_part(variants, variantfile.variant_table(made.variants))
    skips.write_text("".join(json.dumps(s.to_json()) + "\n" for s in made.skips))
    replay = UnitReplay()
    replay.add_files(variants, skips, parses=5)
    calls = []
    monkeypatch.setattr(Perturbation, "apply", lambda *args: calls.append(args))
    again = replay.plan(examples, suite, include=lambda p: True)
    assert calls == [] and replay.parses == 5
    assert again.variants == made.variants and again.skips == made.skips
    # a chunk, some units stopped, one plan left to the caller, a row too long for the run
    got = replay.plan(chunk, suite, stopped=stopped, include=lambda p: p.name != "char-typo")
    assert got.variants == want.variants and got.skips == want.skips
    limited = replace(suite, options={"max_chars": 40})
    got = replay.plan(examples[:1], limited, include=lambda p: True)
    assert got.variants == [] and len(got.skips) == 2 * sum(
        len(p.grid) for p in limited.perturbations)
    assert set(got.too_long) == {examples[0].id}


def test_a_unit_no_shard_made_is_an_error_naming_it() -> None:
    examples = _examples()
    suite = custom_suite(["truncation"], seeds=1)
    replay = UnitReplay()
    with pytest.raises(MissingUnit, match=rf"no shard made truncation at severity .* seed 0 "
                                          rf"of example '{examples[0].id}'"):
        replay.plan(examples, suite, include=lambda p: True)
