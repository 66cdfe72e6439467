from __future__ import annotations

import pytest

from evalstress.text import TextParser, noise_ratio, rebuild


def test_each_distinct_text_is_parsed_once() -> None:
    parser = TextParser()
    texts = ["Anna went to Paris. She stayed a week.", "A second text here."]
    parser.parse_many(texts + texts)
    parser.parse(texts[0])
    assert parser.parses == 2


def test_parse_finds_sentences_entities_and_pos() -> None:
    parsed = TextParser().parse("Anna Berg flew to Paris on Monday. She met the mayor.")
    assert parsed.sentence_texts() == ["Anna Berg flew to Paris on Monday.", "She met the mayor."]
    labels = {e.text: e.label for e in parsed.entities}
    assert labels.get("Paris") == "GPE"
    assert any(t.pos == "VERB" and t.lemma == "fly" for t in parsed.tokens)


def test_rebuild_keeps_whitespace_and_never_glues_words() -> None:
    parsed = TextParser().parse("She went to the office, then home.")
    assert rebuild(parsed.tokens) == "She went to the office, then home."
    assert rebuild(parsed.tokens, drop=[3]) == "She went to office, then home."
    assert rebuild(parsed.tokens, drop=[4]) == "She went to the, then home."
    assert rebuild(parsed.tokens, {1: "ran"}) == "She ran to the office, then home."


def test_noise_ratio_is_word_levenshtein_over_length() -> None:
    assert noise_ratio("a b c d", "a b c d") == 0.0
    assert noise_ratio("a b c d", "a b") == pytest.approx(0.5)  # two deletions over four words
    assert noise_ratio("a b c d", "a x c d") == pytest.approx(0.25)
    # a swap costs two substitutions; swap-type noise is halved (paper 002, footnote 7)
    assert noise_ratio("a b c d", "b a c d", swap=True) == pytest.approx(0.25)
    assert noise_ratio("", "") == 0.0
