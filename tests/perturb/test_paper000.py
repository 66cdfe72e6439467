"""Paper 000's rule attacks (severity `paper`): hand-checked outputs, the rules' promises, and
exactly where they differ from the graded defaults of the same perturbations."""

from __future__ import annotations

import itertools
import re

import pytest

from evalstress.perturb.base import Skip, Variant
from evalstress.perturb.paper000 import TYPO_KINDS, is_plain_lower
from evalstress.suites import load_suite
from tests.perturb.conftest import run, text_of

# paper 000's own example text (its Table 6), in three sentences of 14, 17 and 10 words
JOSH = ("Josh wants to buy a tablet and doesn't know which brand he should choose. According "
        "to Brian, other brands are better than Apple and he can get a Samsung tablet cheaper. "
        "Josh will call Brian after work to talk about it.")
FOUR = "Anna came home. Ben cooked rice. Cleo set the table. Dan washed up."


def sentences(text: str) -> list[str]:
    return re.findall(r"[^.]+\.", text.replace(". ", ".\n"))


# --- hand-checked outputs ---------------------------------------------------------------------


def test_sentence_exchange_paper_on_two_sentences_can_only_swap_them() -> None:
    for seed in range(5):
        out = text_of(run("sentence-exchange", "Anna came home. Ben cooked rice.", "paper", seed))
        assert out == "Ben cooked rice. Anna came home."


def test_word_exchange_paper_with_one_candidate_pair() -> None:
    # 7 words; the only neighbouring lower-case pair away from the first word is "at the"
    # ("the Louvre." carries a capital and a full stop, "Jonas" a capital)
    out = text_of(run("word-exchange", "Maria Lopez met Jonas at the Louvre.", "paper"))
    assert out == "Maria Lopez met Jonas the at Louvre."


def test_word_exchange_paper_leaves_sentences_of_five_words_alone() -> None:
    text = "The cat sat down quietly. Maria Lopez met Jonas at the Louvre."
    out = text_of(run("word-exchange", text, "paper"))
    assert out == "The cat sat down quietly. Maria Lopez met Jonas the at Louvre."
    assert isinstance(run("word-exchange", "The cat sat down quietly.", "paper"), Skip)


def test_word_exchange_paper_swaps_one_pair_in_each_half_from_ten_words() -> None:
    # 12 words, halves split at 6: positions 1-4 hold one candidate ("saw the"), positions
    # 6-10 one ("near old"); everything else is capitalised or carries punctuation
    text = "Anna Berg saw the Carl Dahl Eva Fox near old Gus Hall."
    out = text_of(run("word-exchange", text, "paper"))
    assert out == "Anna Berg the saw Carl Dahl Eva Fox old near Gus Hall."


def test_sentence_deletion_paper_drops_the_last_sentence() -> None:
    for seed in range(3):
        assert text_of(run("sentence-deletion", FOUR, "paper", seed)) == (
            "Anna came home. Ben cooked rice. Cleo set the table.")
    assert isinstance(run("sentence-deletion", "Only one sentence here.", "paper"), Skip)


def test_spelling_mistake_paper_golden_on_the_papers_example() -> None:
    # hand-checked: sentence 1 has 7 words of 4+ lower-case letters (wants tablet know which
    # brand should choose) and gets 3 slips: tablet->tabelt (swap), know->kno (delete),
    # which->whiich (repeat); sentence 2 (other brands better than tablet) gets brands->braands,
    # better->beter, than->thann; sentence 3 (will call after work talk about) gets
    # call->cal, work->woork, talk->tak. Capitalised words, "doesn't", "cheaper." and "it."
    # are never touched.
    expected = ("Josh wants to buy a tabelt and doesn't kno whiich brand he should choose. "
                "According to Brian, other braands are beter thann Apple and he can get a "
                "Samsung tablet cheaper. Josh will cal Brian after woork to tak about it.")
    assert text_of(run("spelling-mistake", JOSH, "paper", 0)) == expected


# --- what each rule promises, over many seeds ------------------------------------------------


def _one_slip(before: str, after: str) -> bool:
    """`after` is `before` with one letter repeated, one (not the first) deleted, or two
    neighbours swapped."""
    for i in range(len(before)):
        if after == before[:i] + before[i] + before[i:]:
            return True
    for i in range(1, len(before)):
        if after == before[:i] + before[i + 1:]:
            return True
    return any(after == before[:i] + before[i + 1] + before[i] + before[i + 2:]
               for i in range(len(before) - 1))


@pytest.mark.parametrize("seed", range(20))
def test_spelling_mistake_paper_promises(seed: int) -> None:
    out = text_of(run("spelling-mistake", JOSH, "paper", seed))
    for original, changed in zip(sentences(JOSH), sentences(out), strict=True):
        a, b = original.split(), changed.split()
        assert len(a) == len(b)
        hit = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
        assert 1 <= len(hit) <= 3
        for x, y in hit:
            assert len(x) >= 4 and is_plain_lower(x)
            assert _one_slip(x, y), (x, y)


@pytest.mark.parametrize("seed", range(20))
def test_word_exchange_paper_promises(seed: int) -> None:
    out = text_of(run("word-exchange", JOSH, "paper", seed))
    for original, changed in zip(sentences(JOSH), sentences(out), strict=True):
        a, b = original.split(), changed.split()
        assert sorted(a) == sorted(b) and a[0] == b[0]
        moved = [i for i in range(len(a)) if a[i] != b[i]]
        pairs = 2 if len(a) >= 10 else 1  # JOSH: sentences of 10+ words (or 6-9)
        assert len(moved) == 2 * pairs
        for i in moved[::2]:  # each exchange is two neighbours trading places
            assert b[i] == a[i + 1] and b[i + 1] == a[i]
            assert is_plain_lower(a[i]) and is_plain_lower(a[i + 1])
        if pairs == 2:
            half = len(a) // 2
            assert moved[1] <= half - 1 < half <= moved[2]


def test_sentence_exchange_paper_draws_full_permutations() -> None:
    three = ["Anna came home.", "Ben cooked rice.", "Cleo set the table."]
    outcomes = {text_of(run("sentence-exchange", " ".join(three), "paper", seed))
                for seed in range(60)}
    every = {" ".join(p) for p in itertools.permutations(three)}
    assert outcomes == every - {" ".join(three)}  # all five reorderings, never the original


# --- default and paper differ exactly where listed --------------------------------------------


def _moved(original: str, changed: str) -> int:
    return sum(a != b for a, b in zip(sentences(original), sentences(changed), strict=True))


def test_sentence_exchange_default_swaps_pairs_paper_moves_every_sentence_at_random() -> None:
    default = [_moved(FOUR, text_of(run("sentence-exchange", FOUR, 1, s))) for s in range(40)]
    paper = [_moved(FOUR, text_of(run("sentence-exchange", FOUR, "paper", s)))
             for s in range(40)]
    assert set(default) == {2}  # one pair exchanged, the rest in place
    assert {3, 4} <= set(paper)  # 3-cycles and full derangements appear only with the paper


def test_word_exchange_default_touches_short_sentences_and_capitals_paper_does_not() -> None:
    short = "Maria met Jonas near Lisbon."
    assert isinstance(run("word-exchange", short, 1), Variant)
    assert isinstance(run("word-exchange", short, "paper"), Skip)
    # a 12-word sentence: default 1 exchanges one pair, the paper one per half
    text = "Anna Berg saw the Carl Dahl Eva Fox near old Gus Hall."
    default = text_of(run("word-exchange", text, 1)).split()
    assert sum(a != b for a, b in zip(text.split(), default, strict=True)) == 2
    paper = text_of(run("word-exchange", text, "paper")).split()
    assert sum(a != b for a, b in zip(text.split(), paper, strict=True)) == 4


def test_spelling_mistake_default_and_paper_pick_different_words_and_slips() -> None:
    text = "The cat and the dog ran off. The old man sat by the red door."
    default_hits: set[str] = set()
    for seed in range(30):
        out = text_of(run("spelling-mistake", text, 0.4, seed))
        default_hits |= {a for a, b in zip(text.split(), out.split(), strict=True) if a != b}
    assert {"cat", "the", "dog", "The"} & default_hits  # 3-letter words and capitals: default
    # the paper's rule needs words of 4+ lower-case letters: none here
    assert isinstance(run("spelling-mistake", text, "paper"), Skip)
    # the default uses the typo package (keyboard neighbours replace letters); the paper's
    # three slips never put in a letter the word did not have
    long = "several careful workers gathered outside before morning prayers started today."
    for seed in range(10):
        paper = text_of(run("spelling-mistake", long, "paper", seed)).split()
        for a, b in zip(long.split(), paper, strict=True):
            assert set(b) <= set(a)
    assert len(TYPO_KINDS) == 3


def test_sentence_deletion_default_deletes_anywhere_paper_the_last() -> None:
    kept_last = [text_of(run("sentence-deletion", FOUR, 1, s)).endswith("Dan washed up.")
                 for s in range(20)]
    assert any(kept_last) and not all(kept_last)
    assert not text_of(run("sentence-deletion", FOUR, "paper")).endswith("Dan washed up.")


def test_paper_suite_differs_from_the_default_suite_only_in_the_grids() -> None:
    default, paper = load_suite("criteria-rules"), load_suite("criteria-rules-paper")
    assert [p.name for p in default.perturbations] == [p.name for p in paper.perturbations]
    assert (default.seeds, default.analyses, default.options) == (
        paper.seeds, paper.analyses, paper.options)
    for d, p in zip(default.perturbations, paper.perturbations, strict=True):
        assert p.grid == ("paper",) and d.grid == type(d.perturbation).grid
        assert d.perturbation.params == p.perturbation.params == {}
        assert d.tasks == p.tasks


@pytest.mark.parametrize("name", ["sentence-exchange", "word-exchange", "sentence-deletion"])
def test_a_severity_that_is_neither_a_count_nor_paper_is_an_error(name: str) -> None:
    with pytest.raises(ValueError, match="'paper'"):
        run(name, FOUR, "papr")
