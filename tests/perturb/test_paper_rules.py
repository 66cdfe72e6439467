"""Paper 002's rules (rule=paper), each against a hand-checked example from its public code's
definition, and the default behaviour each one replaces."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.perturb.base import Skip, Variant
from evalstress.perturb.common import lemma_of
from tests.perturb.conftest import run, text_of

PAPER = {"rule": "paper"}


def paper(name: str, text: str, severity: object, seed: int = 0, **kw: object) -> Variant | Skip:
    params = {**PAPER, **dict(kw.pop("params", {}) or {})}  # type: ignore[call-overload]
    return run(name, text, severity, seed, params=params, **kw)  # type: ignore[arg-type]


# -- hand-checked outputs -----------------------------------------------------------------------
# Each expected text is worked out from the rule as the paper's code states it, not taken from
# our output: e.g. truncation keeps n - floor(n x ratio) whitespace words and adds a period.
HAND = [
    # 8 words, floor(8 x 0.5) = 4 go; no final period, so one is added
    ("truncation", "She went to the office in Boston today", 0.5, "She went to the."),
    # 5 words, floor(5 x 0.2) = 1 goes; "d" does not end with a period
    ("truncation", "A b c d e.", 0.2, "A b c d."),
    # every whitespace a/an/the goes; both sentences start with a capital again
    ("article-removal", "The cat saw a dog. An owl flew.", 1.0, "Cat saw dog. Owl flew."),
    # both prepositions go; the second sentence's new first word gets its capital
    ("preposition-removal", "She left early. In the morning she ran to the park.", 1.0,
     "She left early. The morning she ran the park."),
    # only the main verbs (gone, eating) become lemmas; the auxiliaries has / was stay
    ("verb-lemmatization", "She has gone home and was eating bread.", 1.0,
     "She has go home and was eat bread."),
    # the one fixed map: ! ? -> ,   : -> .   , -> .   . -> ,
    ("noised-punctuation", "Wait! Why? Because: yes, now.", 1.0,
     "Wait, Why, Because. yes. now,"),
    # 6 tokens, cut after ceil(6/2) = 3 (the final period stays last): the office | She went to
    ("middle-swap", "She went to the office.", 1, "The office She went to."),
    # 9 tokens, cut after 5; "The" is one of the openers the paper lower-cases
    ("middle-swap", "The cat sat on the mat, quietly.", 1, "Mat, quietly the cat sat on the."),
    # a 4-gram ending in a period starts with a capital when repeated
    ("repetition", "The shop will close early.", 2,
     "The shop will close early. Shop will close early. Shop will close early."),
]


@pytest.mark.parametrize(("name", "text", "severity", "expected"), HAND)
def test_paper_rule_matches_the_hand_checked_output(name: str, text: str, severity: object,
                                                    expected: str) -> None:
    assert text_of(paper(name, text, severity)) == expected
    assert text_of(run(name, text, severity)) != expected  # the default rule differs here


def test_truncation_that_removes_nothing_leaves_a_period_text_unchanged() -> None:
    # floor(4 x 0.2) = 0 words go and the text already ends with a period
    assert isinstance(paper("truncation", "She went to work.", 0.2), Skip)


def test_token_drop_counts_ceil_over_whitespace_tokens() -> None:
    text = "Maria drove to the market, in Lisbon."  # 7 whitespace tokens
    for seed in range(5):
        out = text_of(paper("token-drop", text, 0.3, seed)).split()
        assert len(out) == 7 - 3  # ceil(7 x 0.3) = 3
        assert all(w in text.split() for w in out)  # whole tokens, punctuation attached
    # at most n - 1 go: a two-token text keeps one of its two tokens whole
    assert text_of(paper("token-drop", "Hello, world.", 1.0)) in {"Hello,", "world."}


def test_repeated_token_doubles_ceil_of_the_tokens() -> None:
    text = "Maria drove to the market in Lisbon."
    for seed in range(5):
        out = text_of(paper("repeated-token", text, 0.3, seed)).split()
        assert len(out) == 7 + 3  # ceil(7 x 0.3) = 3 insertions
        deduped = [w for w, _ in itertools.groupby(out)]
        assert deduped == text.split()


def test_local_swap_swaps_whitespace_neighbours() -> None:
    # 3 tokens at 0.1: min(ceil(0.3), 2) = 1 swap of one token with its right neighbour
    outs = {text_of(paper("local-swap", "She went home.", 0.1, seed)) for seed in range(8)}
    assert outs <= {"went She home.", "She home. went"} and outs
    # sequential: each swap sees the text the previous ones left, so a token may travel on, or
    # a second swap may undo the first (the text comes back unchanged)
    results = [paper("local-swap", "a b c d e f g h", 0.25, seed) for seed in range(20)]
    variants = [r.text.split() for r in results if isinstance(r, Variant)]
    assert variants and all(sorted(v) == list("abcdefgh") for v in variants)
    assert all(sum(a != b for a, b in zip(v, "abcdefgh", strict=True)) <= 4 for v in variants)


def test_sentence_switching_reverses_two_and_keeps_the_last_on_open_ended_text() -> None:
    two = "She left. He stayed."
    assert text_of(paper("sentence-switching", two, 1)) == "He stayed. She left."
    three = "One came. Two went. Three stayed."
    # open-ended (WikiText): the last sentence stays, so three sentences switch the first two
    for seed in range(5):
        assert text_of(paper("sentence-switching", three, 2, seed, task="open-ended")) == \
            "Two went. One came. Three stayed."
    moved = {text_of(run("sentence-switching", three, 1, seed, task="open-ended"))
             for seed in range(10)}
    assert any(not t.endswith("Three stayed.") for t in moved)  # the default may move it


def test_generic_entity_six_labels_and_the_article_goes() -> None:
    out = text_of(paper("generic-entity", "Barack Obama met Angela Merkel in Paris on Monday.",
                        1.0))
    # PERSON, PERSON, GPE become generic phrases opened by 'some' or 'a'; DATE is not one of
    # the six labels, so Monday stays
    assert out in {f"{a.capitalize()} person met {b} person in {c} place on Monday."
                   for a in ("some", "a") for b in ("some", "a") for c in ("some", "a")}
    # the article before an entity goes, and a new one opens the phrase after a preposition
    out = text_of(paper("generic-entity", "She saw the Louvre near Tim Cook.", 1.0, seed=3))
    assert out in {f"She saw {a} {n} near {b} person." for a in ("some", "a", "an")
                   for n in ("place", "organization", "product", "person") for b in ("some", "a")}
    assert text_of(run("generic-entity", "She saw the Louvre near Tim Cook.", 1.0)).startswith(
        "She saw the ")  # the default keeps the article


def test_generic_entity_takes_no_article_after_a_phrase_written_just_before() -> None:
    # Worked by hand from the code's rule (transform_utils.con_generic_ner): "Fans in GPE GPE
    # and GPE cheered." is rewritten left to right; the first place follows "in" (an
    # adposition: an article), the second follows the "place" just written (a noun: none), the
    # third follows "and" (an article)
    text = "Fans in Paris London and Rome cheered."
    outs = {text_of(paper("generic-entity", text, 1.0, seed)) for seed in range(12)}
    assert outs <= {f"Fans in {a} place place and {b} place cheered."
                    for a in ("some", "a") for b in ("some", "a")}
    # two labels side by side: the code takes its labels in a set's order, which Python salts
    # per process. "The team visited GPE PERSON yesterday.": with the place written first, the
    # person follows the noun "place" (none); with the person first, its cut "The team visited
    # GPE " tags GPE as a proper noun (an article). Both show up across seeds
    text = "The team visited London Heathrow yesterday."
    outs = {text_of(paper("generic-entity", text, 1.0, seed)) for seed in range(30)}
    bare = {f"The team visited {a} place person yesterday." for a in ("some", "a")}
    full = {f"The team visited {a} place {b} person yesterday." for a in ("some", "a")
            for b in ("some", "a")}
    assert outs <= bare | full and outs & bare and outs & full
    # "ORG PRODUCT can hold ...": written first, the organization leaves the noun
    # "organization" before the product; written second, its label "ORG" alone is tagged a
    # noun too, so the product never takes an article
    outs = {text_of(paper("generic-entity", "Boeing 747 can hold 600 people.", 1.0, seed))
            for seed in range(12)}
    assert outs <= {"Some organization product can hold 600 people.",
                    "An organization product can hold 600 people."}


def test_generic_entity_reads_the_word_before_as_the_text_cut_there_tags_it(
        parser: TextParser) -> None:
    # In the whole sentence "sobbing" is a verb and "Filipe" a proper noun, but the code tags
    # the text cut before the entity ("A sobbing ", "Filipe "), where both come out nouns: no
    # article. Worked by hand from con_generic_ner with en_core_web_sm
    assert [t.pos for t in parser.parse("A sobbing Dawn revealed the news.").tokens][1] == "VERB"
    for seed in range(6):
        assert text_of(paper("generic-entity", "A sobbing Dawn revealed the news.", 1.0,
                             seed)) == "A sobbing person revealed the news."
    outs = {text_of(paper("generic-entity", "Filipe Luis signed for Chelsea.", 1.0, seed))
            for seed in range(6)}
    assert outs <= {f"Filipe person signed for {a} organization." for a in ("some", "an")}


def test_paper_generic_entity_at_ratio_one_damages_every_entity_and_nothing_else(
        parser: TextParser) -> None:
    # the damage promised: each person, organization, place or product entity becomes its
    # generic phrase (an article, then the label's noun, or the noun alone), the article
    # before it goes, and every other word stays as it was
    nouns = {"PERSON": "person", "ORG": "organization", "GPE": "place", "LOC": "place",
             "FAC": "place", "PRODUCT": "product"}
    texts = ["Fans in Paris London and Rome cheered.", "Boeing 747 can hold 600 people.",
             "Tim Cook visited the Louvre with Apple staff on Monday. Then Cook flew home."]
    for text in texts:
        parsed = parser.parse(text)
        tokens = parsed.tokens
        entities = [e for e in parsed.entities if e.label in nouns]
        assert entities
        pattern, i = "", 0
        starts = {e.start: e for e in entities}
        while i < len(tokens):
            ent = starts.get(i)
            after_article = (tokens[i].text.lower() in ("a", "an", "the")
                             and i + 1 in starts and tokens[i].ws)
            if after_article:
                i += 1
                continue
            if ent is None:
                pattern += re.escape(tokens[i].text + tokens[i].ws)
                i += 1
                continue
            pattern += f"(?:(?:[Ss]ome|[Aa]n?) )?(?i:{nouns[ent.label]})" + \
                re.escape(tokens[ent.end - 1].ws)
            i = ent.end
        for seed in range(8):
            assert re.fullmatch(pattern, text_of(paper("generic-entity", text, 1.0, seed))), \
                (text, seed)


def test_entity_switching_takes_entities_of_any_labels() -> None:
    text = "Barack Obama met Angela Merkel in Paris on Monday."
    entities = ["Barack Obama", "Angela Merkel", "Paris", "Monday"]
    template = "{} met {} in {} on {}."
    swaps = set()
    for i, j in itertools.combinations(range(4), 2):
        order = list(entities)
        order[i], order[j] = order[j], order[i]
        swaps.add(template.format(*order))
    outs = {text_of(paper("entity-switching", text, 1, seed)) for seed in range(12)}
    assert outs <= swaps
    assert any("Paris" not in o.split(" in ")[1] for o in outs)  # labels mix (PERSON <-> GPE)
    assert isinstance(paper("entity-switching", "Barack Obama met Angela Merkel.", 1), Skip)


def test_noun_switching_moves_surface_forms() -> None:
    text = "The cat chased the dogs near the house."
    forms = ["cat", "dogs", "house"]
    swaps = set()
    for i, j in itertools.combinations(range(3), 2):
        order = list(forms)
        order[i], order[j] = order[j], order[i]
        swaps.add("The {} chased the {} near the {}.".format(*order))
    outs = [text_of(paper("noun-switching", text, 1, seed)) for seed in range(10)]
    assert set(outs) <= swaps
    assert "The dogs chased the cat near the house." in outs  # no re-inflection
    assert "The dogs chased the cat near the house." not in {
        text_of(run("noun-switching", text, 1, seed)) for seed in range(10)}
    assert isinstance(paper("noun-switching", "The cat chased the dog.", 1), Skip)


@pytest.mark.parametrize(("name", "text"), [
    ("article-removal", "The cat saw the dog."),
    ("preposition-removal", "She ran to the park."),
    ("stopword-removal", "She ran to the park."),
    ("negation", "She ran to the park."),
    ("noised-punctuation", "Yes, she ran."),
])
def test_paper_draws_each_unit_with_its_own_coin(name: str, text: str) -> None:
    # an exact count (the default) always damages; independent coins sometimes change nothing
    paper_out = [paper(name, text, 0.3, seed) for seed in range(30)]
    assert any(isinstance(r, Skip) for r in paper_out)
    assert any(isinstance(r, Variant) for r in paper_out)
    assert all(isinstance(run(name, text, 0.3, seed), Variant) for seed in range(30))


def test_positioned_error_replaces_tokenizer_ids_at_the_position() -> None:
    from transformers import AutoTokenizer

    from evalstress.core.models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("minilm"))
    text = ("The committee met on a rainy morning to discuss the budget for the new library, "
            "and after a long debate the members agreed to postpone the vote until spring.")
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)[
        "offset_mapping"]
    n = len(offsets)
    start = text_of(paper("positioned-error", text, "random-start"))
    assert start.endswith(text[offsets[10][0]:]) and not start.startswith("The committee")
    end = text_of(paper("positioned-error", text, "random-end"))
    assert end.startswith(text[:offsets[n - 10][0]].strip())
    middle = text_of(paper("positioned-error", text, "random-middle"))
    first = n // 2 - 5
    assert middle.startswith(text[:offsets[first][0]].strip())
    assert middle.endswith(text[offsets[first + 10][0]:])
    shuffled = text_of(paper("positioned-error", text, "shuffle-start"))
    span = text[:offsets[9][1]]
    assert sorted(shuffled[:-len(text[offsets[10][0]:])].replace(" ", "").replace("#", "")) \
        == sorted(span.lower().replace(" ", ""))


def test_injection_kinds_replace_the_hypothesis() -> None:
    pool = [Example("o1", "summarization", "", "Another summary of another article.")]
    alone = text_of(paper("injection", "The real summary.", "answer-yes-good"))
    assert alone.startswith("Answer: Yes") and "real summary" not in alone
    other = text_of(paper("injection", "The real summary.", "other", pool=pool))
    assert other == "Another summary of another article."
    both = text_of(paper("injection", "The real summary.", "answer-yes-aspects-other",
                         pool=pool))
    assert both.startswith("Answer: Yes") and both.endswith(
        "Summary: Another summary of another article.")
    # the default grid (alone / prepend) takes the paper's kind of text under its rule
    assert text_of(paper("injection", "The real summary.", "alone")) == text_of(
        paper("injection", "The real summary.", "answer-yes-aspects"))
    assert text_of(run("injection", "The real summary.", "alone")).startswith("Note to the grader")
    with pytest.raises(ValueError, match="answer-yes-aspects"):
        paper("injection", "The real summary.", "loud")


def test_frequent_ngram_uses_a_separate_lower_cased_corpus_at_256_words(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    # lower-cased 4-grams: "a b c d" x4, "b c d a" x2, ...; "x, y z w" has punctuation
    corpus.write_text("a b c d a b c d a b c d\nA B C D e\nx, y z w x, y z w x, y z w x, y z w\n",
                      encoding="utf-8")
    out = text_of(paper("frequent-ngram", "Short text.", 1, params={"corpus": str(corpus)}))
    assert out == " ".join(["a b c d"] * 64)  # 64 whole 4-grams = 256 words
    three = text_of(paper("frequent-ngram", "Short text.", 1,
                          params={"corpus": str(corpus), "n": 3}))
    assert len(three.split()) == 255  # 85 whole 3-grams fit in 256
    default = text_of(run("frequent-ngram", "Short text.", 1, params={"corpus": str(corpus)}))
    assert len(default.split()) == 2  # the default follows the hypothesis length
    with pytest.raises(ValueError, match="separate corpus"):
        paper("frequent-ngram", "Short text.", 1)


def test_unknown_rule_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"rule' = 'paperr': expected one of default, paper\. "
                                         r"Did you mean 'paper'"):
        run("truncation", "She went to the office today.", 0.5, params={"rule": "paperr"})


SIX = ("One came. Two went. Three stayed. Four slept. Five ran. Six sang.")


@pytest.mark.parametrize("pairs", [1, 2, 3])
def test_sentence_switching_makes_exactly_the_severitys_switches(pairs: int) -> None:
    # the code switches `pairs` random pairs in a row, never the same pair twice running: one
    # switch moves exactly 2 of the 6 sentences, k switches at most 2k, and the order never
    # comes back (two different transpositions in a row never undo each other)
    sentences = SIX.split(". ")
    for seed in range(12):
        out = text_of(paper("sentence-switching", SIX, pairs, seed)).rstrip(".").split(". ")
        assert sorted(out) == sorted(s.rstrip(".") for s in sentences)
        moved = sum(a != b.rstrip(".") for a, b in zip(out, sentences, strict=True))
        assert (moved == 2) if pairs == 1 else (2 <= moved <= 2 * pairs)


def test_summary_sentence_switching_is_measured_over_treebank_units() -> None:
    # She left . He stayed . -> He stayed . She left . : 4 edits of 6 units, halved (a switch)
    out = paper("sentence-switching", "She left. He stayed.", 1)
    assert isinstance(out, Variant) and out.noise_ratio == pytest.approx(1 / 3)
    # WikiText was plain text in the code: whitespace words there (4 of 4, halved)
    wiki = paper("sentence-switching", "She left. He stayed.", 1, task="open-ended")
    assert isinstance(wiki, Variant) and wiki.noise_ratio == pytest.approx(0.5)
    # the default rule keeps evalstress's whitespace words on summaries too
    default = run("sentence-switching", "She left. He stayed.", 1)
    assert isinstance(default, Variant) and default.noise_ratio == pytest.approx(0.5)


TABLE_16 = "She went to the office in Boston. And she talked to her staff about business."


def test_verb_switching_of_table_16() -> None:
    # Table 16's example swaps went and talked; both are past forms, so the swapped words read
    # as the example whether re-inflected (the default and the code) or not
    assert text_of(run("verb-switching", TABLE_16, 1)) == \
        "She talked to the office in Boston. And she went to her staff about business."
    # the code leaves a text with two or fewer verbs alone, this one included
    assert isinstance(paper("verb-switching", TABLE_16, 1), Skip)


def test_paper_verb_switching_inflects_each_verb_to_its_new_slot() -> None:
    text = "She went to the office. She was talking to her staff and they laughed."
    # one switch of two of the three verbs (went VBD, talking VBG, laughed VBD), each verb in the
    # form of the slot it lands in
    swaps = {"She talked to the office. She was going to her staff and they laughed.",
             "She laughed to the office. She was talking to her staff and they went.",
             "She went to the office. She was laughing to her staff and they talked."}
    outs = {text_of(paper("verb-switching", text, 1, seed)) for seed in range(12)}
    assert outs <= swaps and len(outs) >= 2


def test_paper_verb_switching_lets_verbs_of_one_lemma_trade_places() -> None:
    # the default only switches different lemmas; the code draws any two verbs, so a switch
    # of ran and runs changes only the forms' slots: runs -> ran, ran -> runs stays ran/runs
    text = "He ran home, she runs daily and they walked."
    outs = {text_of(r) for seed in range(20)
            if isinstance(r := paper("verb-switching", text, 1, seed), Variant)}
    assert "He walked home, she runs daily and they ran." in outs
    results = [paper("verb-switching", text, 1, seed) for seed in range(20)]
    assert any(isinstance(r, Skip) for r in results)  # ran <-> runs: nothing changes


def test_paper_verb_switching_only_moves_verbs(parser: TextParser) -> None:
    # the damage promised: verbs trade places (each lemma still used once), nothing else moves
    text = "Maria drove to the market, bought bread, paid the baker and walked home."
    original = parser.parse(text)
    verbs = [i for i, t in enumerate(original.tokens) if t.pos == "VERB"]
    assert len(verbs) >= 3
    lemmas = sorted(lemma_of(original.tokens[i]) for i in verbs)
    for seed in range(10):
        result = paper("verb-switching", text, 8, seed)
        if isinstance(result, Skip):  # the switches may put every verb back
            continue
        out = parser.parse(result.text)
        assert len(out.tokens) == len(original.tokens)
        for i, (a, b) in enumerate(zip(original.tokens, out.tokens, strict=True)):
            if i not in verbs:
                assert a.text == b.text
        assert sorted(lemma_of(out.tokens[i]) for i in verbs) == lemmas
