"""What each fluency perturbation promises, checked on a hand-written text over many seeds.

MARKET, counted by hand: 31 words (whitespace tokens), 35 tokens with the 3 periods and 1 comma;
articles the x3; prepositions to, in, on, of; spaCy stop-words to, the, in, on, She, and, two,
of, Her, has, the, but, the, will (14); inflected verbs drove, bought, has, repaired (4).
A ratio r over n eligible units asks for n x r of them, rounded down or up at random
(`sample_count`: the fraction is the chance of rounding up) and at least one, so the count
is floor(n r) or ceil(n r). The expected outcomes come from these counts, not from the output.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from evalstress.perturb.base import Severity, Skip
from tests.perturb.conftest import MARKET, golden, run, text_of

SEEDS = range(10)
WORDS = MARKET.split()
ARTICLES = {"the"}
PREPOSITIONS = {"to", "in", "on", "of"}
STOPWORDS = {"to", "the", "in", "on", "she", "and", "two", "of", "her", "has", "but", "will"}
LEMMAS = {"drove": "drive", "bought": "buy", "has": "have", "repaired": "repair"}


def words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z]+", text)]


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def counts(n: int, ratio: float) -> set[int]:
    """The documented count of n units at a ratio: n x r rounded either way, at least one."""
    return {max(1, math.floor(n * ratio)), max(1, math.ceil(n * ratio))}


def outcomes(name: str, severity: Severity) -> list[str]:
    return [text_of(run(name, MARKET, severity, seed)) for seed in SEEDS]


def is_subsequence(short: list[str], long: list[str]) -> bool:
    rest = iter(long)
    return all(any(w == x for x in rest) for w in short)


def test_the_hand_counts_match_the_text() -> None:
    assert len(WORDS) == 31 and len(tokens(MARKET)) == 35
    assert Counter(words(MARKET))["the"] == 3


@pytest.mark.parametrize(("ratio", "keep"), [(0.2, 25), (0.5, 16)])
def test_truncation_keeps_the_first_words(ratio: float, keep: int) -> None:
    """floor(31 x 0.2) = 6 and floor(31 x 0.5) = 15 words go from the end: 25 and 16 stay."""
    for out in outcomes("truncation", ratio):
        assert out == " ".join(WORDS[:keep])


@pytest.mark.parametrize("ratio", [0.2, 0.5])
def test_token_drop_removes_k_words_and_keeps_the_rest_in_order(ratio: float) -> None:
    """31 words: 6 or 7 go at 0.2, 15 or 16 at 0.5; the punctuation stays."""
    seen = set()
    for out in outcomes("token-drop", ratio):
        assert len(words(MARKET)) - len(words(out)) in counts(31, ratio)
        assert is_subsequence(words(out), words(MARKET))
        assert Counter(c for c in out if c in ".,") == Counter({".": 3, ",": 1})
        seen.add(out)
    assert len(seen) >= 3


def doubled(old: list[str], new: list[str]) -> int | None:
    """How many words of `old` appear twice in a row in `new`; None if new is not such a text."""
    j = count = 0
    for w in old:
        if j >= len(new) or new[j] != w:
            return None
        j += 1
        if j < len(new) and new[j] == w:
            j, count = j + 1, count + 1
    return count if j == len(new) else None


@pytest.mark.parametrize("ratio", [0.2, 0.5])
def test_repeated_token_doubles_k_words_in_place(ratio: float) -> None:
    """MARKET has no word twice in a row, so each doubling is seen; 6-7 (0.2) or 15-16 (0.5)."""
    seen = set()
    for out in outcomes("repeated-token", ratio):
        assert doubled(words(MARKET), words(out)) in counts(31, ratio)
        seen.add(out)
    assert len(seen) >= 3


@pytest.mark.parametrize("ratio", [0.2, 0.4])
def test_local_swap_exchanges_k_disjoint_neighbouring_token_pairs(ratio: float) -> None:
    """35 tokens give 34 neighbour pairs: 6-7 swaps at 0.2, 13-14 at 0.4; no word glued."""
    before = tokens(MARKET)
    seen = set()
    for out in outcomes("local-swap", ratio):
        after = tokens(out)
        assert len(after) == len(before)  # every word still stands alone (no "MondayShe")
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        pairs = list(zip(changed[::2], changed[1::2], strict=True))
        for i, j in pairs:
            assert j == i + 1 and (before[i], before[j]) == (after[j], after[i])
        assert len(pairs) in counts(34, ratio)
        seen.add(out)
    assert len(seen) >= 3


# each sentence body (tokens without the final period) cut after len // 2 tokens, halves swapped
SWAPPED = [
    ["market", "in", "lisbon", "on", "monday", "maria", "drove", "to", "the"],
    ["and", "two", "kilos", "of", "oranges", "she", "bought", "fresh", "bread"],
    ["but", "the", "shop", "will", "close", "early", "her", "brother", "has", "repaired", "the",
     "old", "bicycle"],
]
ORIGINAL = [words(s) for s in MARKET.split(". ")]


@pytest.mark.parametrize("ratio", [0.4, 1.0])
def test_middle_swap_swaps_the_halves_of_k_sentences(ratio: float) -> None:
    """3 sentences: 1 or 2 swapped at 0.4, all 3 at 1.0; the others untouched."""
    seen = set()
    for out in outcomes("middle-swap", ratio):
        parts = out.split(". ")
        assert len(parts) == 3 and out.endswith(".")
        swapped = 0
        for part, old, new in zip(parts, ORIGINAL, SWAPPED, strict=True):
            assert words(part) in (old, new)
            swapped += words(part) == new
        assert swapped in counts(3, ratio)
        assert out[0].isupper()
        seen.add(out)
    assert len(seen) >= (3 if ratio < 1 else 1)


@pytest.mark.parametrize("ratio", [0.4, 1.0])
def test_noised_punctuation_turns_k_of_the_four_marks_into_the_other(ratio: float) -> None:
    """Marks . . , . (4): 1-2 change at 0.4, all 4 at 1.0; a period becomes a comma and back."""
    seen = set()
    for out in outcomes("noised-punctuation", ratio):
        assert len(out) == len(MARKET)
        diffs = [(a, b) for a, b in zip(MARKET, out, strict=True) if a != b]
        assert all({a, b} == {".", ","} for a, b in diffs)
        assert len(diffs) in counts(4, ratio)
        seen.add(out)
    assert len(seen) >= (2 if ratio < 1 else 1)


@pytest.mark.parametrize(("name", "eligible", "n"), [
    ("article-removal", ARTICLES, 3),
    ("preposition-removal", PREPOSITIONS, 4),
    ("stopword-removal", STOPWORDS, 14),
])
@pytest.mark.parametrize("ratio", [0.4, 1.0])
def test_word_class_removal_drops_k_eligible_words_and_keeps_all_others(
        name: str, eligible: set[str], n: int, ratio: float) -> None:
    """k of the n eligible words go (0.4: 1-2 of 3, 1-2 of 4, 5-6 of 14; 1.0: all)."""
    seen = set()
    for out in outcomes(name, ratio):
        kept = words(out)
        assert is_subsequence(kept, words(MARKET))
        gone = Counter(words(MARKET)) - Counter(kept)
        assert set(gone) <= eligible
        assert sum(gone.values()) in counts(n, ratio)
        assert Counter(c for c in out if c in ".,") == Counter({".": 3, ",": 1})
        seen.add(out)
    assert len(seen) >= (2 if ratio < 1 else 1)


@pytest.mark.parametrize("ratio", [0.4, 1.0])
def test_verb_lemmatization_replaces_k_inflected_verbs_by_their_lemma(ratio: float) -> None:
    """4 inflected verbs: 1-2 replaced at 0.4, all at 1.0; every other word in place."""
    seen = set()
    for out in outcomes("verb-lemmatization", ratio):
        pairs = list(zip(words(MARKET), words(out), strict=True))
        changed = [(a, b) for a, b in pairs if a != b]
        assert all(LEMMAS.get(a) == b for a, b in changed)
        assert len(changed) in counts(4, ratio)
        seen.add(out)
    assert len(seen) >= (2 if ratio < 1 else 1)


def test_verb_lemmatization_at_full_ratio_turns_past_forms_to_lemmas() -> None:
    out = text_of(run("verb-lemmatization", "She went home and bought bread.", 1.0))
    assert out == "She go home and buy bread."


def test_middle_swap_moves_the_second_half_to_the_front() -> None:
    out = text_of(run("middle-swap", "She went to the office.", 1.0))
    assert out == "To the office she went."


@pytest.mark.parametrize(("name", "text"), [
    ("preposition-removal", "Cats sleep."),
    ("article-removal", "Cats sleep."),
    ("stopword-removal", "Cats sleep."),
    ("verb-lemmatization", "Good idea."),
    ("middle-swap", "Hi."),
])
def test_skips_with_a_reason_when_nothing_to_damage(name: str, text: str) -> None:
    result = run(name, text, 1.0)
    assert isinstance(result, Skip) and result.reason


TOKEN_DROP_LOCK = ("drove the market Lisbon on Monday. She bought fresh bread and two kilos of "
                   "oranges. Her brother repaired the old bicycle, but will close early.")


def test_token_drop_at_seed_0_is_locked_across_versions_and_parses() -> None:
    """A change of seed derivation or sampling shows here; the lock obeys the same promise."""
    assert len(words(MARKET)) - len(words(TOKEN_DROP_LOCK)) in counts(31, 0.2)
    assert is_subsequence(words(TOKEN_DROP_LOCK), words(MARKET))
    assert golden("token-drop", 0.2) == TOKEN_DROP_LOCK
    assert golden("token-drop", 0.2, fresh_parser=True) == TOKEN_DROP_LOCK
