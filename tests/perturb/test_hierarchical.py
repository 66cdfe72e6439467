"""What each hierarchical perturbation promises, checked on a hand-written text over many seeds.

MARKET has three sentences (S1, S2, S3) of 9, 9 and 13 words; the expected outcomes below are
worked out by hand from each perturbation's definition (papers 003 and 000), not copied from
its output.
"""

from __future__ import annotations

import itertools
import re

import pytest

from evalstress.perturb.base import Severity, Skip
from tests.perturb.conftest import (
    GARDEN,
    GOLDEN_META,
    GOLDEN_POOL,
    GOLDEN_SOURCE,
    HARBOUR,
    MARKET,
    run,
    text_of,
)
from tests.perturb.fuzzing import time_limit

S1 = "Maria drove to the market in Lisbon on Monday."
S2 = "She bought fresh bread and two kilos of oranges."
S3 = "Her brother has repaired the old bicycle, but the shop will close early."
SEEDS = range(12)


def words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z]+", text)]


def outcomes(name: str, severity: Severity) -> list[str]:
    """The perturbation of MARKET at each seed, with two other examples in the pool."""
    return [text_of(run(name, MARKET, severity, seed, pool=GOLDEN_POOL, source=GOLDEN_SOURCE,
                        meta=GOLDEN_META)) for seed in SEEDS]


def test_the_hand_written_text_is_what_the_expectations_assume() -> None:
    assert f"{S1} {S2} {S3}" == MARKET
    assert [len(words(s)) for s in (S1, S2, S3)] == [9, 9, 13]


def test_random_answer_is_another_examples_whole_text() -> None:
    seen = set(outcomes("random-answer", "major"))
    assert seen <= {HARBOUR, GARDEN}
    assert len(seen) == 2  # the seed picks among the others


def test_random_ending_keeps_all_but_the_last_sentence_and_borrows_an_ending() -> None:
    seen = set(outcomes("random-ending", "major"))
    assert seen <= {f"{S1} {S2} By noon the island was a grey line behind them.",
                    f"{S1} {S2} In September the family ate them with olive oil and salt."}
    assert len(seen) == 2


def test_wrong_ending_replaces_the_last_sentence_by_the_datasets_ending() -> None:
    assert set(outcomes("wrong-ending", "major")) == {f"{S1} {S2} Then the market burned down."}


@pytest.mark.parametrize(("severity", "allowed"), [
    (1, {f"{S2} {S3}", f"{S1} {S3}", f"{S1} {S2}"}),
    (2, {S1, S2, S3}),
])
def test_sentence_deletion_drops_k_whole_sentences_and_keeps_the_order(
        severity: int, allowed: set[str]) -> None:
    seen = set(outcomes("sentence-deletion", severity))
    assert seen <= allowed and len(seen) >= 2


def test_sentence_exchange_with_three_sentences_swaps_exactly_one_pair() -> None:
    """Three sentences hold one disjoint pair, so 2 pairs asked still exchange one."""
    transpositions = {f"{S2} {S1} {S3}", f"{S3} {S2} {S1}", f"{S1} {S3} {S2}"}
    for severity in (1, 2):
        seen = set(outcomes("sentence-exchange", severity))
        assert seen <= transpositions and len(seen) >= 2


def test_sentence_reordering_major_is_any_other_order_of_all_sentences() -> None:
    others = {" ".join(order) for order in itertools.permutations((S1, S2, S3))} - {MARKET}
    seen = set(outcomes("sentence-reordering", "major"))
    assert seen <= others and len(seen) >= 3


@pytest.mark.parametrize("per_sentence", [1, 2])
def test_word_exchange_swaps_k_neighbouring_pairs_inside_every_sentence(
        per_sentence: int) -> None:
    for out in outcomes("word-exchange", per_sentence):
        parts = out.split(". ")
        assert len(parts) == 3 and out.endswith(".")  # sentence ends stay where they were
        for before, after in zip((S1, S2, S3), parts, strict=True):
            old, new = words(before), words(after)
            assert sorted(old) == sorted(new)
            changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
            pairs = list(zip(changed[::2], changed[1::2], strict=True))
            assert len(pairs) == per_sentence
            for i, j in pairs:  # each change is two neighbours trading places
                assert j == i + 1 and (old[i], old[j]) == (new[j], new[i])
        assert "bicycle," in out or "old," in out  # the comma stays after the 7th word


@pytest.mark.parametrize(("severity", "k"), [("minor", 5), ("major", 25)])
def test_word_span_deletion_removes_one_run_of_k_words(severity: Severity, k: int) -> None:
    original = words(MARKET)
    runs = {tuple(original[:i] + original[i + k:]) for i in range(len(original) - k + 1)}
    seen = set()
    for out in outcomes("word-span-deletion", severity):
        assert tuple(words(out)) in runs
        assert out[0].isupper()  # a text that now starts mid-sentence still starts a sentence
        seen.add(out)
    assert len(seen) >= 3


def test_word_span_deletion_removes_k_continuous_words() -> None:
    out = text_of(run("word-span-deletion", MARKET, "minor"))
    words, kept = MARKET.split(), out.split()
    assert len(words) - len(kept) == 5
    assert isinstance(run("word-span-deletion", "Five words are here now.", "minor"), Skip)


def test_sentence_reordering_minor_moves_two_sentences_major_all() -> None:
    five = " ".join(f"Sentence number {w} is here." for w in
                    ("one", "two", "three", "four", "five"))
    minor = text_of(run("sentence-reordering", five, "minor")).split(". ")
    original = five.split(". ")
    assert sum(a != b for a, b in zip(original, minor, strict=True)) == 2
    assert isinstance(run("sentence-reordering", "Only one sentence.", "major"), Skip)


def test_sentence_reordering_of_a_text_with_a_repeated_sentence_moves_two_different_ones(
) -> None:
    """Two copies of one sentence cannot be reordered: minor moves the odd sentence and one
    copy, whichever two it drew first (it once drew copies forever)."""
    bell, left = "The bell rang.", "Tom left."
    text = f"{bell} {bell} {bell} {left}"
    swapped = {" ".join([left if i == at else bell for i in range(3)] + [bell])
               for at in range(3)}
    with time_limit(20):
        outs = {text_of(run("sentence-reordering", text, "minor", seed)) for seed in SEEDS}
    assert outs <= swapped and len(outs) > 1


def test_wrong_ending_for_qa_replaces_the_whole_answer() -> None:
    out = run("wrong-ending", MARKET, "major", task="qa", meta={"wrong_answer": "No idea."})
    assert text_of(out) == "No idea."
    assert isinstance(run("wrong-ending", MARKET, "major"), Skip)


def test_random_ending_and_answer_need_another_example() -> None:
    for name in ("random-ending", "random-answer"):
        result = run(name, MARKET, "major")
        assert isinstance(result, Skip) and "pool" in result.reason


def test_word_exchange_keeps_the_words_and_sentence_deletion_keeps_one() -> None:
    out = text_of(run("word-exchange", MARKET, 3))
    assert out != MARKET
    assert sorted(w.strip(".,") for w in out.split()) == sorted(w.strip(".,")
                                                               for w in MARKET.split())
    assert isinstance(run("sentence-deletion", "One. Two.", 2), Skip)
