"""Word diffs: the changes difflib finds on short texts, bounded time and size on long ones."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstress.core import worddiff
from evalstress.core.worddiff import MAX_CELLS, MAX_WORDS, word_diff

CHANGE = re.compile(r"\[-(.*?)-\]|\{\+(.*?)\+\}")


def _removed_added(diff: str) -> tuple[list[str], list[str]]:
    removed: list[str] = []
    added: list[str] = []
    for gone, new in CHANGE.findall(diff):
        removed += gone.split()
        added += new.split()
    return removed, added


def test_hand_examples() -> None:
    assert word_diff("The cat sat on the mat.", "The cat sat on mat.") == "[-the-]"
    assert word_diff("a b c d", "a x c d") == "[-b-]{+x+}"
    assert word_diff("a b c d", "a b c d e f") == "{+e f+}"
    assert word_diff("a b c d", "a d") == "[-b c-]"
    assert word_diff("same text", "same text") == ""


words = st.lists(st.sampled_from(["the", "a", "cat", "dog", "sat", "on", "mat", "red"]),
                 max_size=30)


@settings(max_examples=200, deadline=None)
@given(words, words)
def test_the_changes_turn_the_original_into_the_variant(a: list[str], b: list[str]) -> None:
    """In multiset terms, original - removed + added = variant; unchanged texts show nothing."""
    diff = word_diff(" ".join(a), " ".join(b))
    removed, added = _removed_added(diff)
    assert Counter(b) == Counter(a) - Counter(removed) + Counter(added)
    assert (diff == "") == (a == b)
    assert len(removed) <= len(a) and len(added) <= len(b)


def test_a_long_text_is_diffed_fast_and_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The work is counted, not timed: the only step that grows with words x words (the edit
    script) never sees more than MAX_CELLS of a 50,000-word text, where difflib without
    autojunk spent minutes."""
    seen: list[tuple[int, int]] = []
    opcodes = worddiff.Levenshtein.opcodes

    def counted(a: list[str], b: list[str]) -> object:
        seen.append((len(a), len(b)))
        return opcodes(a, b)

    monkeypatch.setattr(worddiff.Levenshtein, "opcodes", counted)
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(500)]
    original = [rng.choice(vocabulary) for _ in range(50_000)]  # ~300 KB
    dropped = [w for w in original if rng.random() > 0.1]
    diff = word_diff(" ".join(original), " ".join(dropped))
    [(rows, cols)] = seen
    assert rows * cols <= MAX_CELLS and max(rows, cols) <= MAX_WORDS
    assert "diff cut" in diff and len(diff) < 100_000
    # an edit near the end of a long text is found exactly (common prefix cut off first), and
    # only the differing word reaches the edit script
    seen.clear()
    tail_edit = [*original[:-1], "NEW"]
    assert word_diff(" ".join(original), " ".join(tail_edit)) == f"[-{original[-1]}-]{{+NEW+}}"
    assert seen == [(1, 1)]
