"""The text layer: one parse per text, exact rebuilds, the noise ratio of paper 002."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstress.core.text import (
    TextParser,
    load_spacy,
    noise_ratio,
    rebuild,
    rebuild_parsed,
    treebank_units,
)


def test_each_distinct_text_is_parsed_once() -> None:
    parser = TextParser()
    texts = ["Anna went to Paris. She stayed a week.", "A second text here."]
    parser.parse_many(texts + texts)
    parser.parse(texts[0])
    assert parser.parses == 2


def test_expected_texts_are_parsed_together_on_the_first_demand_and_never_without_one() -> None:
    """`expect` parses nothing by itself (a run whose perturbations read only the raw text
    loads no spaCy); the first parse asked for takes every expected text in the same batch,
    so the later ones are answered from the memo."""
    texts = ["Anna went to Paris.", "A second text here.", "And a third one."]
    parser = TextParser()
    parser.expect(texts)
    assert parser.parses == 0
    assert parser.parse(texts[1]).text == texts[1]
    assert parser.parses == 3
    assert [p.text for p in parser.parse_many(texts)] == texts and parser.parses == 3
    parser.forget()
    parser.expect(texts)
    parser.forget()  # a chunk's expected texts go with its parses
    parser.parse("Something else entirely.")
    assert parser.parses == 4


def test_parse_finds_sentences_entities_and_pos() -> None:
    parsed = TextParser().parse("Anna Berg flew to Paris on Monday. She met the mayor.")
    assert parsed.sentence_texts() == ["Anna Berg flew to Paris on Monday.", "She met the mayor."]
    labels = {e.text: e.label for e in parsed.entities}
    assert labels.get("Paris") == "GPE"
    assert any(t.pos == "VERB" and t.lemma == "fly" for t in parsed.tokens)


def test_sentence_parses_of_a_forgetful_parser_split_as_a_full_parse_and_keep_nothing(
        ) -> None:
    """In a streaming run, the sentence pool's cheap parse (tok2vec and parser only) finds the
    sentence bounds and tokens of a full parse, hands texts back in order (repeats included),
    and leaves no parse in the memo: a resource built over a dataset does not hold the
    dataset's parses."""
    texts = ["Dr. Smith arrived at 9 a.m. on Monday. The U.S. team, however, was late!",
             "It rained.  Then it stopped; nobody noticed. Why? Nobody knows.",
             "one line without a full stop\n\nand a second paragraph after blank lines."]
    parser = TextParser(batch_size=2, forgetful=True)  # several batches
    light = list(parser.sentence_parses([*texts, texts[0]]))
    assert parser.parses == 3
    full = TextParser().parse_many(texts)
    assert [p.text for p in light] == [*texts, texts[0]]
    assert [p.sentence_texts() for p in light[:3]] == [p.sentence_texts() for p in full]
    assert light[1].sentence_texts()[:2] == ["It rained.", "Then it stopped; nobody noticed."]
    assert [[t.text + t.ws for t in p.tokens] for p in light[:3]] == \
        [[t.text + t.ws for t in p.tokens] for p in full]
    parser.parse(texts[1])  # a full parse: not answered from the light one
    assert parser.parses == 4 and parser.parse(texts[1]).tokens[0].pos == "PRON"


def test_sentence_parses_of_a_keeping_parser_are_full_parses_reused_later() -> None:
    """A parser that keeps its memo parses pool texts once, in full: the texts' own units
    then parse nothing again."""
    parser = TextParser()
    texts = ["Anna went to Paris. She stayed a week.", "A second text here."]
    pooled = list(parser.sentence_parses(texts))
    assert [p.sentence_texts() for p in pooled] == [
        ["Anna went to Paris.", "She stayed a week."], ["A second text here."]]
    assert parser.parse(texts[0]).entities and parser.parses == 2


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

TEXTS = [
    "She didn't go, but they've gone home. Then -- quietly -- it ended!",
    "Line one.\n\nLine two has  two spaces and a (parenthesis).",
    "Numbers: 3.5 kg, $20, and 1,000 people; done.",
]


def test_treebank_units_cut_punctuation_and_clitics_as_the_cnndm_summaries_are_cut() -> None:
    # SummEval's tokenized highlight reads "... in Tottenham 's draw with Burnley ." there
    assert treebank_units("A sub in Tottenham's draw with Burnley.") == \
        ["A", "sub", "in", "Tottenham", "'s", "draw", "with", "Burnley", "."]
    # an ellipsis is one token there ("... for me ... . This ...")
    assert treebank_units('He said: "the U.S. (again)," and left...') == \
        ["He", "said", ":", '"', "the", "U.S.", "(", "again", ")", ",", '"', "and", "left",
         "..."]
    # n't stays whole: paper 002's negation writes "hasn't" into its tokenized text as one word
    assert treebank_units("She hasn't gone, they're late-ish.") == \
        ["She", "hasn't", "gone", ",", "they", "'re", "late-ish", "."]


def test_treebank_units_cut_currency_and_percent_signs_as_the_cnndm_summaries_are() -> None:
    # the tokenized highlights read "pay back $ 2.6 million" and "a $ 70 billion ... 9 %"
    assert treebank_units("Pay back $2.6 million, 9% more.") == \
        ["Pay", "back", "$", "2.6", "million", ",", "9", "%", "more", "."]
    # a sign not at a number stays on its word: nothing there says how to cut it
    assert treebank_units("US$ and 100%.") == ["US$", "and", "100", "%", "."]


def test_last_tags_alone_are_the_full_pipeline_tags_of_each_text_on_its_own() -> None:
    # spaCy's whole pipeline on each text by itself is the reference
    nlp = load_spacy()
    texts = ["A sobbing ", "Filipe ", "The team visited GPE ", "He met ", ""]
    expected = [nlp(t)[-1].pos_ if len(nlp(t)) else "" for t in texts]
    assert TextParser().last_tags_alone(texts) == expected
    assert expected[:3] == ["NOUN", "NOUN", "PROPN"]


def test_noise_ratio_over_treebank_units_counts_periods() -> None:
    # two sentences switched: 4 of 4 whitespace words differ, halved: 0.5; over the 6 treebank
    # units (She left . He stayed .) the periods stay in place, so 4 of 6 edits, halved: 1/3
    before, after = "She left. He stayed.", "He stayed. She left."
    assert noise_ratio(before, after, swap=True) == pytest.approx(0.5)
    assert noise_ratio(before, after, swap=True, units="treebank") == pytest.approx(1 / 3)
    # went -> didn't go: 2 edits over 6 units (She went to the office .)
    assert noise_ratio("She went to the office.", "She didn't go to the office.",
                       units="treebank") == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="units 'tokens' are unknown; choose one of words, "
                                         "treebank"):
        noise_ratio(before, after, units="tokens")


@pytest.mark.parametrize("text", TEXTS)
def test_rebuild_parsed_matches_rebuild_on_random_edits(text: str) -> None:
    parsed = TextParser().parse(text)
    rng = random.Random(0)
    n = len(parsed.tokens)
    for _ in range(300):
        drop = rng.sample(range(n), rng.randrange(n))
        replacements = {i: rng.choice(["X", "", "two words"])
                        for i in rng.sample(range(n), rng.randrange(n // 2))}
        assert rebuild_parsed(parsed, replacements, drop) == \
            rebuild(parsed.tokens, replacements, drop)


def test_derived_data_is_memoized_per_parse_and_ignored_by_equality() -> None:
    parser = TextParser()
    parsed = parser.parse(TEXTS[0])
    calls = []
    assert parsed.memo("k", lambda p: calls.append(1) or 5) == 5
    assert parsed.memo("k", lambda p: calls.append(1) or 6) == 5
    assert calls == [1]
    assert parsed == TextParser().parse(TEXTS[0])  # a fresh parse has no derived data


def test_a_text_longer_than_spacys_bound_parses_instead_of_e088() -> None:
    """The planner's `max_chars` decides what is parsed; spaCy's own `max_length` follows it, so
    a text the limit lets through never meets spaCy's E088 error."""
    from evalstress.core.text import load_spacy

    nlp = load_spacy()
    saved = nlp.max_length
    text = "The river rose. " * 20  # 320 characters
    try:
        nlp.max_length = 100
        parsed = TextParser().parse(text)
    finally:
        nlp.max_length = saved
    assert len(parsed.sentences) == 20 and "".join(parsed.pieces) == text


def test_length_skip_names_the_row_and_the_limit() -> None:
    from evalstress.core.text import DEFAULT_MAX_CHARS, length_skip, max_chars_option

    assert max_chars_option({}) == DEFAULT_MAX_CHARS == 100_000
    assert max_chars_option({"max_chars": 0}) is None
    with pytest.raises(ValueError, match="max_chars must be a positive whole number"):
        max_chars_option({"max_chars": "lots"})
    assert length_skip("r1", "x" * 10, 10) is None
    assert length_skip("r1", "x" * 1_000_001, 100_000) == (
        "row 'r1': its text of 1,000,001 characters is beyond the text length limit (100,000; "
        "raise it with --max-chars or the suite option max_chars)")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=40), st.lists(st.sampled_from("abcde"),
                                                                 max_size=40))
def test_word_distance_is_the_levenshtein_distance(a: list[str], b: list[str]) -> None:
    """Cutting the common prefix and suffix and hinting a small distance change nothing: the
    reference is a plain dynamic-programming edit distance written here."""
    from evalstress.core.text import word_distance

    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    assert word_distance(a, b) == row[-1]


def test_parsing_a_chunk_of_long_texts_holds_a_small_batch_of_spacy_work_at_once() -> None:
    """64 texts of ~1,000 characters (a run's chunk of paragraphs): spaCy's working memory
    grows with the texts it parses at once; 64 at once peaked at ~210 MB, a batch of 16 at
    ~60 MB (traced Python memory, spaCy's arrays included)."""
    import tracemalloc

    from evalstress.core.data import builtin_corpus

    sentences = [e.hypothesis for e in builtin_corpus()]
    rng = random.Random(3)
    texts = [" ".join(rng.sample(sentences, 8))[:1100] for _ in range(64)]
    parser = TextParser(forgetful=True)
    parser.parse_many(["A warm-up text loads the model."])
    parser.forget()
    tracemalloc.start()
    try:
        parsed = parser.parse_many(texts)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(parsed) == 64 and parser.parses == 65
    assert peak < 120e6, f"{peak / 1e6:.0f} MB"


def test_parsing_chunk_after_chunk_of_new_words_holds_no_more_memory_after_each() -> None:
    """A run parses chunk after chunk of new texts and forgets each chunk's parses; each new
    word used to stay in spaCy's vocabulary (a lexeme and its strings) for the life of the
    process, so a run's memory grew with its dataset's words (+11 MB of Python memory over the
    26 chunks of 1,000 WikiText paragraphs). Four chunks of 200 unseen words each now leave
    the traced memory where one chunk left it (before: +0.94 MB), and the parses still carry
    every word and lemma."""
    import gc
    import tracemalloc

    parser = TextParser(forgetful=True)

    def chunk(k: int) -> None:
        words = [f"zorblat{k}x{i}qux" for i in range(200)]
        parsed = parser.parse_many([f"The {w} glimmered near Paris, said Dr. {w.title()}."
                                    for w in words])
        assert [p.tokens[1].text for p in parsed] == words
        assert {(p.tokens[4].text, p.tokens[4].lemma, p.tokens[4].ent_type) for p in parsed
                } == {("Paris", "Paris", "GPE")}
        parser.sentence_parses([f"Another {w} here. And more." for w in words[:20]])
        parser.last_tags_alone([f"A {w}" for w in words[:5]])
        parser.forget()

    chunk(0)  # loads the model
    tracemalloc.start()
    try:
        chunk(1)
        gc.collect()
        after_one = tracemalloc.get_traced_memory()[0]
        for k in range(2, 6):
            chunk(k)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - after_one
    finally:
        tracemalloc.stop()
    assert growth < 0.2e6, f"{growth / 1e6:.2f} MB kept after four more chunks"

def _python_prints(script: str) -> list[str]:
    """The lines a fresh interpreter prints running `script` (imports as a new run sees them)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, timeout=120)
    return done.stdout.splitlines()


def test_spacy_loads_without_torch_and_torch_still_imports_afterwards() -> None:
    """Loading the parser leaves torch unimported (0.8 s of every run that needs no model);
    a later `import torch` (BERTScore, a local judge) works as usual, and so does spaCy."""
    lines = _python_prints(
        "import sys\n"
        "from evalstress.core.text import TextParser, load_spacy\n"
        "load_spacy()\n"
        "print('torch' in sys.modules)\n"
        "parsed = TextParser().parse('Ada Lovelace wrote the first program. It ran.')\n"
        "print(len(parsed.sentences), [e.text for e in parsed.entities])\n"
        "import torch\n"
        "print(float(torch.ones(3).sum()))\n"
        "print(len(TextParser().parse('A second text parses too.').sentences))\n")
    assert lines[0] == "False" and lines[1].startswith("2 ['Ada Lovelace'")
    assert lines[2:4] == ["3.0", "1"]


def test_torch_loaded_first_is_left_alone() -> None:
    """Where torch is already imported, spaCy imports it as it always did."""
    lines = _python_prints("import torch, sys\n"
                           "from evalstress.core.text import load_spacy\n"
                           "load_spacy()\n"
                           "import thinc.compat\n"
                           "print(thinc.compat.has_torch)\n")
    assert lines == ["True"]
