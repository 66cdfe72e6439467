"""Golden outputs and behaviour of the hierarchical perturbations on hand-written texts."""

from __future__ import annotations

import pytest

from evalstress.perturb.base import Severity, Skip
from tests.perturb.conftest import MARKET, golden, run, text_of

GOLDEN = [
    ('random-answer', 'major',
     ('The ferry left the harbour at dawn. Tomas counted the gulls that followed it. '
      'By noon the island was a grey line behind them.')),
    ('random-ending', 'major',
     ('Maria drove to the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos of oranges. In September the family ate them with olive oil and salt.')),
    ('sentence-deletion', 2,
     ('She bought fresh bread and two kilos of oranges.')),
    ('sentence-exchange', 2,
     ('Her brother has repaired the old bicycle, but the shop will close early. She '
      'bought fresh bread and two kilos of oranges. Maria drove to the market in '
      'Lisbon on Monday.')),
    ('sentence-reordering', 'major',
     ('Her brother has repaired the old bicycle, but the shop will close early. Maria '
      'drove to the market in Lisbon on Monday. She bought fresh bread and two kilos '
      'of oranges.')),
    ('word-exchange', 2,
     ('Maria drove the to in market Lisbon on Monday. She fresh bought bread and two '
      'of kilos oranges. Her brother has repaired the bicycle old, but the shop close '
      'will early.')),
    ('word-span-deletion', 'major',
     ('Maria the shop will close early.')),
    ('wrong-ending', 'major',
     ('Maria drove to the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos of oranges. Then the market burned down.')),
]


@pytest.mark.parametrize(("name", "severity", "expected"), GOLDEN)
def test_golden_output_at_seed_0(name: str, severity: Severity, expected: str) -> None:
    assert golden(name, severity) == expected
    assert golden(name, severity, fresh_parser=True) == expected  # reproducible across parses


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
    assert sorted(out.split()) != sorted(MARKET.split()) or out != MARKET
    assert sorted(w.strip(".,") for w in out.split()) == sorted(w.strip(".,")
                                                               for w in MARKET.split())
    assert isinstance(run("sentence-deletion", "One. Two.", 2), Skip)
