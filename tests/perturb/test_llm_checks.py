"""Every validation rule of LLM-written rewrites, each on a rewrite it must pass and one it must
reject (hand-written texts; the expected verdicts follow from the rule's definition)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evalstress.core.text import TextParser
from evalstress.perturb.llm import Bounds, Demonstration, Resolved
from evalstress.perturb.llm_checks import (
    CHECKS,
    CheckInput,
    check_bounds,
    kept_in_order,
    unmet_requirement,
    validate,
)

ORIGINAL = ("Josh wants to buy a tablet and does not know which brand to choose. "
            "According to Brian, Samsung tablets are cheaper than Apple ones. "
            "Josh will call Brian after work.")


@pytest.fixture(scope="module")
def parser() -> TextParser:
    return TextParser()


def run_check(parser: TextParser, name: str, candidate: str, original: str = ORIGINAL,
              **params: object) -> str | None:
    return CHECKS[name].fn(CheckInput(parser.parse(original), candidate, parser), params)


# (check, params, a rewrite that has the property, a rewrite that lacks it)
CASES = [
    ("repeats-span", {},
     "Josh wants to buy a tablet, a new tablet, and does not know which brand to choose. "
     "According to Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian "
     "after work.",
     "Josh wants to buy a device and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will phone Brian after work."),
    ("keeps-original", {"min": 0.9},
     "Josh, who is twenty, wants to buy a tablet and does not know which brand to choose. "
     "According to Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian "
     "after work.",
     "Josh needs a tablet. Brian says Samsung is cheaper. They will talk later."),
    ("appends-only", {"min_words": 3},
     ORIGINAL + " He hopes to decide before the weekend.",
     "Josh wants a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian after work. He hopes "
     "to decide soon."),
    ("inserts-inside", {},
     "Josh wants to buy a tablet for school and does not know which brand to choose. According "
     "to Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian after work.",
     ORIGINAL + " He hopes to decide before the weekend."),
    ("more-passive", {},
     "Josh wants to buy a tablet and does not know which brand should be chosen. According to "
     "Brian, Samsung tablets are cheaper than Apple ones. Brian will be called by Josh after "
     "work.",
     "Josh wants to buy a tablet and does not know which brand to pick. According to Brian, "
     "Samsung tablets cost less than Apple ones. Josh will phone Brian after work."),
    ("same-words", {"min": 0.8},
     "A tablet Josh wants to buy and which brand to choose does not know. According to Brian, "
     "cheaper than Apple ones are Samsung tablets. After work Josh will call Brian.",
     "Josh is shopping for a device. His friend prefers Korean brands over the American "
     "company. They will speak this evening."),
    ("new-connective", {},
     "Josh wants to buy a tablet and does not know which brand to choose. Therefore, according "
     "to Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian after work.",
     "Josh wants to buy a new tablet and does not know which brand to choose. According to "
     "Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian after work."),
    ("verb-form-changed", {},
     "Josh want to buying a tablet and does not knows which brand to choose. According to "
     "Brian, Samsung tablets is cheaper than Apple ones. Josh will called Brian after work.",
     "Josh wants to buy a phone and does not know which brand to choose. According to Brian, "
     "Samsung phones are cheaper than Apple ones. Josh will call Brian after work."),
    ("rarer-words", {},
     "Josh wishes to procure a tablet and does not know which marque to select. According to "
     "Brian, Samsung tablets are more economical than Apple ones. Josh will telephone Brian "
     "after work.",
     "Josh wants to get a tablet and does not know which brand to pick. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian after work."),
    ("more-clauses", {},
     "Josh, who wants to buy a tablet, does not know which brand he should choose. According to "
     "Brian, who thinks that Samsung tablets are cheaper than Apple ones, the choice is easy. "
     "Josh will call Brian after work.",
     "Josh wants to buy a tablet. He does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian after work."),
    ("shortens", {"min": 0.2},
     "Josh wants a tablet; Brian suggests Samsung. They will talk.",
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple tablets. Josh will call Brian after work today."),
    ("nouns-replaced", {},
     "Josh wants to buy a device and does not know which brand to choose. According to Brian, "
     "Samsung devices are cheaper than Apple ones. Josh will call Brian after work.",
     "Josh wants to buy the tablet and did not know which brand to choose. According to Brian, "
     "Samsung tablets were cheaper than Apple ones. Josh would call Brian after work."),
    ("entity-swap", {"min": 1},
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Lenovo tablets are cheaper than Apple ones. Josh will call Brian after work.",
     "Josh wants to buy a tablet and does not know which model to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian after lunch."),
    ("keeps-entities", {},
     "A tablet is wanted by Josh, and which brand should be chosen is not known by him. "
     "According to Brian, Samsung tablets are cheaper than Apple ones. Brian will be called by "
     "Josh after work.",
     "A tablet is wanted by Josh, and which brand should be chosen is not known by him. "
     "According to Brian, Lenovo tablets are cheaper than Apple ones. Brian will be called by "
     "Josh after work."),
    ("negation-changed", {},
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will not call Brian after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are pricier than Apple ones. Josh will call Brian after work."),
    ("keeps-sentences", {},
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Brian thinks Samsung costs less. Josh will "
     "call Brian after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. Brian thinks Samsung "
     "costs less. Josh will call Brian after work."),
    ("inserted-rewrites", {"min": 1},
     "Josh wants to buy a tablet and does not know which brand to choose. Josh is unsure which "
     "tablet brand to buy. According to Brian, Samsung tablets are cheaper than Apple ones. "
     "Josh will call Brian after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. The weather was "
     "mild all week. According to Brian, Samsung tablets are cheaper than Apple ones. Josh will "
     "call Brian after work."),
    ("replaces-content", {},
     "Josh wants to buy a tablet and knows exactly which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian after work.",
     "Josh, a student, wants to buy a tablet and does not know which brand to choose. According "
     "to Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian after work."),
    ("form-only-edits", {},
     "Josh want to buy a tablet and does not knows which brand to choose. According to Brian, "
     "Samsung tablets is cheaper than Apple ones. Josh will call Brian after work.",
     "Josh wants to buy a laptop and does not know which brand to choose. According to Brian, "
     "Samsung laptops are cheaper than Apple ones. Josh will call Brian after work."),
    ("commoner-words", {},
     "Josh wants to buy a device and does not know which company to choose. According to Brian, "
     "some devices are cheaper than others. Josh will call Brian after work.",
     "Josh wants to buy a phablet and does not know which marque to choose. According to Brian, "
     "Samsung phablets are cheaper than Apple ones. Josh will call Brian after work."),
    ("adds-new-content", {"min": 2},
     "Josh wants to buy a tablet for his design course and does not know which brand to "
     "choose. According to Brian, Samsung tablets are cheaper than Apple ones. Josh will call "
     "Brian after work.",
     "Josh wants to buy a tablet, a tablet, and does not know which brand to choose. According "
     "to Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian after work."),
    ("few-new-words", {"max": 1},
     "Josh wants to buy a tablet and does not know which brand to choose. However, according to "
     "Brian, Samsung tablets are cheaper than Apple ones. Josh will call Brian after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian after work. Then the "
     "neighbours gathered quietly outside."),
    ("same-content", {"min": 0.7},
     "Josh, who wants to buy a tablet, does not know which brand he should choose, according to "
     "Brian, whose view is that Samsung tablets are cheaper than Apple ones, so Josh will call "
     "Brian after work.",
     "A student is shopping for an electronic device. His friend prefers one manufacturer. They "
     "will speak this evening."),
    ("no-new-content", {"max": 0},
     "Josh wants a tablet and does not know which brand to choose; according to Brian, Samsung "
     "tablets are cheaper.",
     "Josh wants a tablet for school; Brian prefers Samsung."),
    ("no-new-entities", {},
     "Josh wants to buy a tablet and does not know which brand to choose. Brian thinks Samsung "
     "tablets are cheaper than Apple ones. Josh will call him after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian from Madrid after work."),
    ("no-new-relations", {},
     "According to Brian, Samsung tablets are cheaper than Apple ones, and Josh, who wants one, "
     "will call him after work.",
     "Josh, who works at Samsung, wants to buy a tablet. Brian will call him after work."),
    ("changed-sentences", {"max": 1},
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will phone Brian after work.",
     "Josh wants to buy a laptop and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will phone Brian after work."),
    ("local-edits", {},
     "Josh wants to buy a phone and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will call Brian after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. Brian says that Apple "
     "makes far pricier devices than Samsung does. Josh will call Brian after work."),
    ("not-only-negation", {},
     "Josh wants to buy a tablet and knows which brand to choose. According to Brian, Samsung "
     "tablets are cheaper than Apple ones. Josh will call Brian after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Josh will not call Brian after work."),
    ("rewords", {},
     "Josh wants a tablet, and Brian says Samsung is cheaper than Apple.",
     "Josh wants to buy a tablet and does not know which brand to choose."),
    ("reorders", {},
     "A tablet Josh wants to buy, and which brand to choose he does not know. According to "
     "Brian, cheaper than Apple ones are Samsung tablets. After work Josh will call Brian.",
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "therefore, Samsung tablets are cheaper than Apple ones. Josh will call Brian after work."),
    ("no-new-facts", {},
     "Josh wants to buy a tablet and does not know which brand to choose. Josh is unsure which "
     "tablet to buy. According to Brian, Samsung tablets are cheaper than Apple ones. Josh will "
     "call Brian after work.",
     "Josh wants to buy a tablet and does not know which brand to choose. According to Brian, "
     "Samsung tablets are cheaper than Apple ones. Brian says so, and he repairs phones in a shop. "
     "Josh will call Brian after work."),
]


def test_every_check_has_a_case() -> None:
    assert {name for name, *_ in CASES} == set(CHECKS)


@pytest.mark.parametrize(("name", "params", "good", "bad"), CASES, ids=[c[0] for c in CASES])
def test_check_accepts_the_damage_and_rejects_its_absence(parser: TextParser, name: str,
                                                          params: dict, good: str,
                                                          bad: str) -> None:
    assert run_check(parser, name, good, **params) is None
    detail = run_check(parser, name, bad, **params)
    assert isinstance(detail, str) and detail


def test_entity_swap_counts_entities_for_major_levels(parser: TextParser) -> None:
    one = ORIGINAL.replace("Samsung", "Lenovo")
    two = one.replace("Brian", "Oskar")
    assert run_check(parser, "entity-swap", one, min=2) is not None
    assert run_check(parser, "entity-swap", two, min=2) is None


def test_keeps_entities_also_refuses_new_names_unless_allowed(parser: TextParser) -> None:
    added = ORIGINAL.replace("after work", "after work in Madrid")
    assert "brought in madrid" in (run_check(parser, "keeps-entities", added) or "")
    assert run_check(parser, "keeps-entities", added, new=True) is None


def test_kept_in_order_is_the_longest_common_subsequence_share() -> None:
    # a b c d -> a x c d: 3 of 4 original words survive in order
    assert kept_in_order(["a", "b", "c", "d"], ["a", "x", "c", "d"]) == 0.75
    assert kept_in_order(["a", "b"], ["b", "a"]) == 0.5


RESOLVED = Resolved("", (), Bounds(edit_ratio=(0.05, 0.5), length_change=(-0.2, 0.3),
                                   edits=(1, 8)), {}, {})


@pytest.mark.parametrize(("candidate", "category"), [
    ("one two three four five six seven eight nine ten eleven", "too-long"),  # +0.375
    ("one two three four five six seven", "too-short"),  # -0.125
])
def test_bounds_name_the_side_that_failed(candidate: str, category: str) -> None:
    original = "one two three four five six seven eight"
    bounds = Bounds(length_change=(-0.1, 0.3))
    rejection = check_bounds(original, candidate, bounds)
    assert rejection is not None and rejection.category == category


def test_edit_ratio_and_edit_count_bounds() -> None:
    original = "one two three four five six seven eight nine ten"
    # 1 substitution in 10 words: ratio 0.1
    assert check_bounds(original, original.replace("five", "5"),
                        Bounds(edit_ratio=(0.05, 0.5))) is None
    similar = check_bounds(original, original.replace("five", "5"),
                           Bounds(edit_ratio=(0.2, 0.5)))
    assert similar is not None and similar.category == "too-similar"
    different = check_bounds(original, "ten nine eight seven six five four three two one",
                             Bounds(edit_ratio=(0.0, 0.5)))
    assert different is not None and different.category == "too-different"
    few = check_bounds(original, original.replace("five", "5"), Bounds(edits=(2, None)))
    assert few is not None and few.category == "too-few-edits"
    many = check_bounds(original, "1 2 3 four five six seven eight nine ten",
                        Bounds(edits=(None, 2)))
    assert many is not None and many.category == "too-many-edits"


def test_validate_rejects_unchanged_and_copied_answers(parser: TextParser) -> None:
    demo = Demonstration("qa", "The sky is blue.", "The sky is green.")
    resolved = replace(RESOLVED, demonstrations=(demo,), bounds=Bounds())
    original = parser.parse(ORIGINAL)
    unchanged = validate(original, ORIGINAL.replace(".", " ."), resolved, parser)
    assert unchanged is not None and unchanged.category == "unchanged"
    copied = validate(original, "The sky is  green.", resolved, parser)
    assert copied is not None and copied.category == "copied-demonstration"


def test_validate_applies_bounds_before_checks_and_names_the_check(parser: TextParser) -> None:
    resolved = Resolved("", (), Bounds(length_change=(None, 0.5)), {"negation-changed": {}}, {})
    original = parser.parse(ORIGINAL)
    long = validate(original, ORIGINAL + " " + ORIGINAL, resolved, parser)
    assert long is not None and long.category == "too-long"
    same = validate(original, ORIGINAL.replace("cheaper", "pricier"), resolved, parser)
    assert same is not None and same.category == "negation-changed"
    assert validate(original, ORIGINAL.replace("will call", "will not call"), resolved,
                    parser) is None


def test_requirements_say_why_a_text_cannot_take_the_attack(parser: TextParser) -> None:
    plain = parser.parse("The soup was warm and the bread was fresh.")
    assert unmet_requirement(plain, {"entities": 1}) is not None
    assert "2 sentences" in (unmet_requirement(plain, {"sentences": 2}) or "")
    assert unmet_requirement(parser.parse(ORIGINAL), {"entities": 2, "sentences": 2}) is None


def test_negation_changed_can_ask_for_exactly_one_statement(parser: TextParser) -> None:
    one = ORIGINAL.replace("Josh will call", "Josh will not call")
    two = one.replace("are cheaper", "are not cheaper")
    assert run_check(parser, "negation-changed", one, max=1) is None
    assert "2 negations" in (run_check(parser, "negation-changed", two, max=1) or "")


def test_local_edits_can_bound_how_much_a_substitute_grows(parser: TextParser) -> None:
    grown = ORIGINAL.replace("cheaper", "more affordable in most shops")  # 1 word -> 5
    assert run_check(parser, "local-edits", grown, max_span=6) is None
    assert "grows by 4 words" in (run_check(parser, "local-edits", grown, max_span=6,
                                            max_growth=2) or "")


def test_new_content_ignores_other_forms_of_the_texts_words(parser: TextParser) -> None:
    # "costly" and "chosen" are forms of "cost" and "choose", "help" of "helps"; "Brian's" is Brian
    original = "Josh must choose a tablet. The cost worries him. Brian helps."
    reworded = "The tablet Josh has chosen is costly, and Brian's help worries him."
    assert run_check(parser, "no-new-content", reworded, original=original) is None
    assert "(pricey)" in (run_check(parser, "no-new-content", "The tablet is pricey.",
                                    original=original) or "")


@pytest.mark.parametrize("candidate, category", [
    ("Sure! Josh wants a tablet and Brian prefers Samsung.", "opens with a remark"),
    ("Here is the shortened text: Josh wants a tablet.", "opens with a remark"),
    ("The inverted text: A tablet Josh wants.", "opens with a label"),
    ("Josh wants a tablet.\n\nNote: I removed the details.", "ends with a remark"),
    ("Josh wants a tablet. (I shortened the rest.)", "ends with a remark"),
    ("Josh wants a tablet, as the original text says.", "talks about the rewrite"),
])
def test_commentary_left_in_the_text_is_found(candidate: str, category: str) -> None:
    from evalstress.perturb.checks_scope import commentary

    assert category in (commentary(ORIGINAL, candidate) or "")


def test_commentary_in_the_original_itself_is_not_the_models() -> None:
    from evalstress.perturb.checks_scope import commentary

    original = "Sure, said Tom. Here is the plan: we leave at six. Note: bring water."
    assert commentary(original, "Sure, said Tom. Here is the plan: we go at six. Note: bring "
                                "water.") is None


def test_a_text_that_stops_mid_sentence_is_cut_off() -> None:
    from evalstress.perturb.checks_scope import cut_off

    assert "stops mid-sentence" in (cut_off(ORIGINAL, "Josh wants to buy a tablet and") or "")
    assert cut_off(ORIGINAL, "Josh wants to buy a tablet.") is None
    assert cut_off("No full stop at the end", "None here either") is None


@pytest.mark.parametrize("answer, finish, category", [
    ("<text>\nJosh wants a tablet.\n</text>", "stop", None),
    ("Here is the text:\nJosh wants a tablet.", "stop", None),  # a preamble the reader strips
    ("<text>\nJosh wants a tab", "length", "cut-off"),
    ("I'm sorry, but I can't help with that.", "stop", "refusal"),
])
def test_read_rewrite_is_the_generation_stages_reading(answer: str, finish: str,
                                                       category: str | None) -> None:
    from evalstress.perturb.llm_checks import Rejection, read_rewrite

    got = read_rewrite(answer, finish)
    if category is None:
        assert got == "Josh wants a tablet."
    else:
        assert isinstance(got, Rejection) and got.category == category


def test_every_demonstration_passes_its_own_attacks_checks(parser: TextParser) -> None:
    # the demonstrations show the model what the checks accept: none may break a bound
    from evalstress.perturb.llm import builtin_attacks

    for name, spec in builtin_attacks().items():
        for level in spec.grid:
            resolved = replace(spec.resolve(level), demonstrations=())
            for demo in spec.resolve(level).demonstrations:
                rejection = validate(parser.parse(demo.original), demo.perturbed, resolved,
                                     parser)
                assert rejection is None, (name, level, demo.original[:40], str(rejection))


LIBRARY = "The library does not open on Sundays. It lends books and films."
CLOSED = ("The library does not open on Sundays. On Sundays the library stays closed. It lends "
          "books and films.")


def test_no_new_facts_reads_a_wordnet_antonym_as_the_same_thing(parser: TextParser) -> None:
    # "stays closed" restates "does not open": "closed" is no new word for WordNet (the antonym
    # of "open"), so "stays ... closed" is no new fact; a new verb with a new object still is
    assert run_check(parser, "no-new-facts", CLOSED, LIBRARY) is None
    shower = ("The library does not open on Sundays. It lends books and films, and it may host "
              "a poetry festival. It lends books and films.")
    detail = run_check(parser, "no-new-facts", shower, LIBRARY)
    assert detail is not None and "host" in detail and "festival" in detail


def test_no_new_facts_without_wordnet_counts_every_new_word(parser: TextParser,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # without the WordNet package only the words' forms are compared: "closed" is then a new
    # word and the same restatement is refused (stricter, never looser)
    from evalstress.core import wordnet

    monkeypatch.setattr(wordnet, "available", lambda: False)
    detail = run_check(parser, "no-new-facts", CLOSED, LIBRARY)
    assert detail is not None and "stays" in detail and "closed" in detail
