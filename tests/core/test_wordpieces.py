"""Whole words in the three vocabulary families: a word-start piece reads as its word, a piece
that continues a word or holds no letters is no word (pieces worked out in
tests/wordpiece_models.py)."""

from __future__ import annotations

import pytest

from evalstress.core.wordpieces import Vocabulary, marks_word_starts
from tests.wordpiece_models import MARK


def test_marked_vocabularies_read_word_starts_as_words(marked_masked_lm: tuple[str, str]) -> None:
    transformers = pytest.importorskip("transformers")
    family, path = marked_masked_lm
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    ids = tokenizer.get_vocab()
    mark = MARK[family]
    vocabulary = Vocabulary(tokenizer)
    assert vocabulary.marked and marks_word_starts(tokenizer)
    # 'Ġtruck'.isalpha() is True and '▁truck'.isalpha() False: neither raw string is the word
    assert vocabulary.whole_word(ids[mark + "truck"]) == "truck"
    assert vocabulary.whole_word(ids["truck"]) is None  # continues a word ("mini|truck")
    assert vocabulary.whole_word(ids["."]) is None
    assert vocabulary.whole_word(ids["<mask>"]) is None
    # a word is looked up by its word-start entry, never by the continuation piece
    assert vocabulary.token_id("truck") == ids[mark + "truck"]
    assert vocabulary.token_id("bustruck") is None  # two pieces: bus|truck


def test_wordpiece_marks_continuations() -> None:
    transformers = pytest.importorskip("transformers")
    from evalstress.core import models

    tokenizer = transformers.AutoTokenizer.from_pretrained(models.resolve_model("minilm"))
    vocabulary = Vocabulary(tokenizer)
    ids = tokenizer.get_vocab()
    assert not vocabulary.marked
    assert vocabulary.whole_word(ids["car"]) == "car"
    assert vocabulary.whole_word(ids["##ing"]) is None
    assert vocabulary.whole_word(ids["[MASK]"]) is None
    assert vocabulary.token_id("car") == ids["car"]
