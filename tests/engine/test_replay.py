"""Units replayed from what shards made: the same variants and skips, in the same order, as the
perturbation loop itself, without applying any perturbation, reading the shards' files forward."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from evalstress.core.data import Example, builtin_corpus
from evalstress.core.text import TextParser
from evalstress.engine import variantfile
from evalstress.engine.pipeline import chunk_positions
from evalstress.engine.planning import PlannedUnits, plan_units
from evalstress.engine.replay import MissingUnit, UnitReplay
from evalstress.perturb.base import Perturbation, Variant
from evalstress.suites import Suite, custom_suite

SUITE = ["truncation", "char-typo", "sentence-switching"]


def _examples() -> list[Example]:
    corpus = builtin_corpus()[:6]
    # one sentence: sentence-switching skips it
    return [*corpus[:2], replace(corpus[0], id="short", hypothesis="Only one sentence here."),
            *corpus[2:]]


def _shard_files(folder: Path, examples: list[Example], suite: Suite, chunk: int
                 ) -> tuple[Path, Path, dict[str, int]]:
    """What a shard's run writes: its chunks' units in order, each chunk's rule units first."""
    variants: list[Variant] = []
    skips = []
    chunk_of = {}
    for index, positions in enumerate(chunk_positions(len(examples), chunk)):
        part = [examples[i] for i in positions]
        made = plan_units(part, suite, TextParser(), examples, {}, include=lambda p: True)
        variants += made.variants
        skips += made.skips
        chunk_of.update({e.id: index for e in part})
    folder.mkdir(exist_ok=True)
    variants_path, skips_path = folder / variantfile.FILE, folder / "skips.jsonl"
    variantfile.write_part(variants_path, variantfile.variant_table(variants))
    skips_path.write_text("".join(json.dumps(s.to_json()) + "\n" for s in skips))
    return variants_path, skips_path, chunk_of


def test_replayed_units_are_the_loops_in_its_order_with_stopped_and_long_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    examples = _examples()
    suite = custom_suite(SUITE, seeds=2)
    made = plan_units(examples, suite, TextParser(), examples, {}, include=lambda p: True)
    assert {s.example_id for s in made.skips} == {"short"}
    stopped = frozenset({("truncation", str(suite.perturbations[0].grid[0]))})
    chunk = examples[1:3]
    want = plan_units(chunk, suite, TextParser(), examples, {}, stopped=stopped,
                      include=lambda p: p.name != "char-typo")
    files = _shard_files(tmp_path / "shard", examples, suite, chunk=2)

    def replay() -> UnitReplay:
        found = UnitReplay()
        found.add_shard(*files, parses=5)
        return found

    calls = []
    monkeypatch.setattr(Perturbation, "apply", lambda *args: calls.append(args))
    whole = replay()
    again = whole.plan(examples, suite, include=lambda p: True)
    assert calls == [] and whole.parses == 5
    assert again.variants == made.variants and again.skips == made.skips
    assert whole.outcomes == {}  # each unit handed out once, then forgotten
    # a chunk, some units stopped, one plan left to the caller
    got = replay().plan(chunk, suite, stopped=stopped, include=lambda p: p.name != "char-typo")
    assert got.variants == want.variants and got.skips == want.skips
    # a row too long for the run: skipped here, never looked up
    limited = replace(suite, options={"max_chars": 40})
    got = replay().plan(examples[:1], limited, include=lambda p: True)
    assert got.variants == [] and len(got.skips) == 2 * sum(
        len(p.grid) for p in limited.perturbations)
    assert set(got.too_long) == {examples[0].id}


def test_the_shards_files_are_read_forward_a_chunk_at_a_time(tmp_path: Path) -> None:
    """Two shards of the dataset, asked for in the driver's chunks: the units held never
    exceed what the chunks asked for so far and not yet handed out, plus the shards' current
    chunks."""
    examples = _examples()
    suite = custom_suite(["truncation", "char-typo"], seeds=1)
    per_example = sum(len(p.grid) for p in suite.perturbations)
    shards = [examples[0::2], examples[1::2]]
    replay = UnitReplay()
    for index, part in enumerate(shards):
        replay.add_shard(*_shard_files(tmp_path / str(index), part, suite, chunk=2), parses=0)
    got = PlannedUnits()
    held = []
    for positions in chunk_positions(len(examples), 2):
        part = [examples[i] for i in positions]
        got.variants += replay.plan(part, suite, include=lambda p: True).variants
        held.append(len(replay.outcomes) // per_example)
    # driver chunks (0 1) (2 3) (4 5) (6); shard chunks (0 2) (4 6) and (1 3) (5): after the
    # first driver chunk the shards have read 2 and 3 ahead, after the second nothing, ...
    assert held == [2, 0, 1, 0]
    want = plan_units(examples, suite, TextParser(), examples, {}, include=lambda p: True)
    assert got.variants == want.variants and len(want.variants) == per_example * len(examples)


def test_a_unit_no_shard_made_is_an_error_naming_it() -> None:
    examples = _examples()
    suite = custom_suite(["truncation"], seeds=1)
    replay = UnitReplay()
    with pytest.raises(MissingUnit, match=rf"no shard made truncation at severity .* seed 0 "
                                          rf"of example '{examples[0].id}'"):
        replay.plan(examples, suite, include=lambda p: True)
