"""What each character perturbation promises, checked on a hand-written text over many seeds.

MARKET, counted by hand: 134 letters (no digits) in 31 space-separated words, 27 of which have
three letters or more (all but to, in, on, of). Paper 003 sets k characters per task: 10
(minor) and 50 (major) for summarization. The expected edit counts follow from these, measured
with rapidfuzz's Levenshtein / Damerau-Levenshtein distances (a typo that swaps two neighbours
is one Damerau edit; the typo package's swap keeps each position's case, so it is compared
without case).
"""

from __future__ import annotations

import math

import pytest
from rapidfuzz.distance import DamerauLevenshtein, Levenshtein

from evalstress.perturb.base import Severity, Skip
from tests.perturb.conftest import MARKET, golden, run, text_of

SEEDS = range(10)
WORDS = MARKET.split(" ")
SHORT = {"to", "in", "on", "of"}


def outcomes(name: str, severity: Severity) -> list[str]:
    return [text_of(run(name, MARKET, severity, seed)) for seed in SEEDS]


def typo_distance(a: str, b: str) -> int:
    return DamerauLevenshtein.distance(a.lower(), b.lower())


def is_subsequence(short: str, long: str) -> bool:
    rest = iter(long)
    return all(ch in rest for ch in short)


def test_the_hand_counts_match_the_text() -> None:
    assert sum(ch.isalpha() for ch in MARKET) == 134 and len(WORDS) == 31
    assert sum(sum(ch.isalpha() for ch in w) >= 3 for w in WORDS) == 27


@pytest.mark.parametrize(("severity", "k"), [("minor", 10), ("major", 50), (3, 3)])
def test_char_deletion_deletes_exactly_k_letters_and_nothing_else(severity: Severity,
                                                                   k: int) -> None:
    seen = set()
    for out in outcomes("char-deletion", severity):
        assert Levenshtein.distance(MARKET, out) == k  # k deletions, no other edit
        assert is_subsequence(out, MARKET)
        assert [ch for ch in out if not ch.isalnum()] == [ch for ch in MARKET
                                                          if not ch.isalnum()]
        seen.add(out)
    assert len(seen) == len(SEEDS)


@pytest.mark.parametrize(("severity", "k"), [(1, 1), (3, 3), ("minor", 10), ("major", 50)])
def test_char_typo_makes_at_most_k_edits_inside_words(severity: Severity, k: int) -> None:
    """k typos on random letters: k edits, fewer only where two land on one word and overlap."""
    seen = set()
    for out in outcomes("char-typo", severity):
        words = out.split(" ")
        assert len(words) == len(WORDS)  # a typo never splits or joins words
        changed = [(a, b) for a, b in zip(WORDS, words, strict=True) if a != b]
        assert 1 <= len(changed) <= k
        assert typo_distance(MARKET, out) <= k
        seen.add(out)
    assert len(seen) == len(SEEDS)


def test_a_single_typo_is_always_one_visible_edit() -> None:
    """A typo operation that finds nothing to change is drawn again, so k=1 never skips."""
    for seed in range(40):
        out = text_of(run("char-typo", MARKET, 1, seed))
        changed = [(a, b) for a, b in zip(WORDS, out.split(" "), strict=True) if a != b]
        assert len(changed) == 1 and typo_distance(*changed[0]) <= 1


@pytest.mark.parametrize("ratio", [0.2, 0.4])
def test_spelling_mistake_misspells_k_eligible_words_once_each(ratio: float) -> None:
    """27 eligible words: 5 or 6 misspelled at 0.2, 10 or 11 at 0.4; one typo each."""
    allowed = {math.floor(27 * ratio), math.ceil(27 * ratio)}
    seen = set()
    for out in outcomes("spelling-mistake", ratio):
        words = out.split(" ")
        assert len(words) == len(WORDS)
        changed = [(a, b) for a, b in zip(WORDS, words, strict=True) if a != b]
        assert len(changed) in allowed
        assert all(a not in SHORT and typo_distance(a, b) <= 1 for a, b in changed)
        seen.add(out)
    assert len(seen) == len(SEEDS)


def _alnum(text: str) -> int:
    return sum(ch.isalnum() for ch in text)


@pytest.mark.parametrize(("task", "severity", "k"), [
    ("summarization", "minor", 10), ("summarization", "major", 50), ("qa", "minor", 5),
    ("qa", "major", 25), ("translation", "minor", 10), ("dialogue", "major", 50), ("qa", 7, 7),
])
def test_char_deletion_deletes_the_k_of_the_task(task: str, severity: Severity, k: int) -> None:
    out = text_of(run("char-deletion", MARKET, severity, task=task))
    assert _alnum(MARKET) - _alnum(out) == k


@pytest.mark.parametrize(("task", "severity", "sumpubmed", "summeval"), [
    # paper 003, Table 2: SumPubMed k = 20 (minor) and 100 (major), SummEval 10 and 50, for
    # deletions and typos; the other tasks keep their own rows whatever the dataset: QA 5 / 25
    ("summarization", "minor", 20, 10), ("summarization", "major", 100, 50),
    ("dialogue", "minor", 20, 10), ("qa", "minor", 5, 5), ("qa", "major", 25, 25),
])
def test_dataset_sumpubmed_takes_its_own_k_for_summaries(task: str, severity: Severity,
                                                         sumpubmed: int, summeval: int) -> None:
    for dataset, k in (("sumpubmed", sumpubmed), ("summeval", summeval)):
        params = {"dataset": dataset}
        out = text_of(run("char-deletion", MARKET, severity, task=task, params=params))
        assert _alnum(MARKET) - _alnum(out) == k, dataset
    for seed in SEEDS:  # k typos make at most k edits
        typed = text_of(run("char-typo", MARKET, severity, seed, task=task,
                            params={"dataset": "sumpubmed"}))
        assert typo_distance(MARKET, typed) <= sumpubmed
    assert any(typo_distance(MARKET, text_of(run(
        "char-typo", MARKET, "major", seed, task="summarization",
        params={"dataset": "sumpubmed"}))) > 50 for seed in SEEDS)  # more than SummEval's k


def test_an_unknown_dataset_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="sumpubmed"):
        run("char-deletion", MARKET, "minor", params={"dataset": "sumpubmd"})


def test_dhp_severity_must_be_minor_major_or_a_number() -> None:
    with pytest.raises(ValueError, match="minor"):
        run("char-deletion", MARKET, "huge")


def test_char_typo_leaves_the_global_random_state_alone() -> None:
    import random

    random.seed(123)
    expected = random.random()
    random.seed(123)
    run("char-typo", MARKET, "major")
    assert random.random() == expected


def test_character_noise_skips_texts_without_letters() -> None:
    for name in ("char-deletion", "char-typo"):
        assert isinstance(run(name, "!!", "minor"), Skip)
    assert isinstance(run("spelling-mistake", "It is so.", 0.4), Skip)


DELETION_LOCK = ("Mria r o the markt n Lsbon o oda. Se boh fesh bead a w kios o ras. e btr ha "
                 "rpare the  bicycle, b h shop il clos eary.")


def test_char_deletion_at_seed_0_is_locked_across_versions_and_parses() -> None:
    """A change of seed derivation or sampling shows here; the lock obeys the same promise."""
    assert Levenshtein.distance(MARKET, DELETION_LOCK) == 50
    assert is_subsequence(DELETION_LOCK, MARKET)
    assert golden("char-deletion", "major") == DELETION_LOCK
    assert golden("char-deletion", "major", fresh_parser=True) == DELETION_LOCK


#: the ten decimal digits of scripts whose digits typo's keyboard does not know
DIGITS = {"arabic-indic": "٠١٢٣٤٥٦٧٨٩", "devanagari": "०१२३४५६७८९",
          "oriya": "୦୧୨୩୪୫୬୭୮୯", "fullwidth": "０１２３４５６７８９",
          "mathematical-bold": "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗"}


@pytest.mark.parametrize("script", sorted(DIGITS))
def test_a_typo_in_a_number_writes_digits_of_the_numbers_own_script(script: str) -> None:
    """A number of one script gets one edit per typo (swapped, dropped, repeated digits or a
    neighbouring key), and every digit it ends with is a digit of that script: a neighbouring
    key of ٥ is ٤ or ٦ (never the Latin 4 or 6, never a minus sign), and no Latin look-alike
    (typo's look-alikes are Latin shapes: 2 may become Z, ٢ may not)."""
    digits = DIGITS[script]
    number = digits[2] + digits[0] + digits[2] + digits[4]  # 2024
    outs = [text_of(run("char-typo", number, 1, seed)) for seed in range(40)]
    assert all(set(out) <= set(digits) and typo_distance(number, out) == 1 for out in outs)
    # some typo hit a neighbouring key: a digit the number did not hold before
    assert any(set(out) - set(number) for out in outs)


def test_typos_in_a_text_of_every_scripts_digits_never_fail() -> None:
    """50 typos over the digits of all scripts Unicode knows: each lands, none raises."""
    from tests.perturb.fuzzing import DIGIT_RUNS

    text = " ".join(DIGIT_RUNS)
    for seed in range(5):
        out = text_of(run("char-typo", text, "major", seed))
        assert len(out.split(" ")) == len(DIGIT_RUNS)


@pytest.mark.parametrize("script", sorted(DIGITS))
def test_a_misspelled_word_with_digits_keeps_them_in_their_script(script: str) -> None:
    """spelling-mistake types through the same keyboard: a word of letters and digits (a train
    number) misspelled anywhere keeps every digit it has in that word's script. (The letters
    here have no digit look-alike in typo's table, as b -> 6 or g -> 9 would have.)"""
    digits = DIGITS[script]
    text = f"the train xyz{digits[1]}{digits[2]}{digits[3]} left early."
    for seed in range(20):
        out = text_of(run("spelling-mistake", text, 0.4, seed))
        assert {ch for ch in out if ch.isdecimal()} <= set(digits)
