"""Golden outputs and behaviour of the consistency perturbations on hand-written texts."""

from __future__ import annotations

import pytest

from evalstress.data import Example
from evalstress.perturb.base import Severity, Skip
from tests.perturb.conftest import GOLDEN_POOL, HARBOUR, MARKET, golden, run, text_of

GOLDEN = [
    ('generic-entity', 0.4,
     ('Maria drove to the market in a place on Monday. She bought fresh bread and some '
      'amount of oranges. Her brother has repaired the old bicycle, but the shop will '
      'close early.')),
    ('negation', 0.4,
     ('Maria drove to the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos of oranges. Her brother has not repaired the old bicycle, but the shop '
      'will close early.')),
    ('noun-switching', 2,
     ('Maria drove to the bread in Lisbon on Monday. She bought fresh market and two '
      'kilos of oranges. Her bicycle has repaired the old brother, but the shop will '
      'close early.')),
    ('sentence-replacement', 2,
     ('Maria drove to the market in Lisbon on Monday. Tomas counted the gulls that '
      'followed it. The ferry left the harbour at dawn.')),
    ('sentence-switching', 2,
     ('Her brother has repaired the old bicycle, but the shop will close early. She '
      'bought fresh bread and two kilos of oranges. Maria drove to the market in '
      'Lisbon on Monday.')),
    ('verb-switching', 2,
     ('Maria repaired to the market in Lisbon on Monday. She closed fresh bread and '
      'two kilos of oranges. Her brother has driven the old bicycle, but the shop will '
      'buy early.')),
]


@pytest.mark.parametrize(("name", "severity", "expected"), GOLDEN)
def test_golden_output_at_seed_0(name: str, severity: Severity, expected: str) -> None:
    assert golden(name, severity) == expected
    assert golden(name, severity, fresh_parser=True) == expected  # reproducible across parses


@pytest.mark.parametrize(("text", "negated"), [
    ("She went home.", "She did not go home."),
    ("She runs fast.", "She does not run fast."),
    ("They like tea.", "They do not like tea."),
    ("The museum is open.", "The museum is not open."),
    ("He has gone home.", "He has not gone home."),
    ("They can swim.", "They cannot swim."),
    ("We'll leave soon.", "We will not leave soon."),
    ("The bridge was built in 1898.", "The bridge was not built in 1898."),
])
def test_negation_uses_the_right_auxiliary(text: str, negated: str) -> None:
    assert text_of(run("negation", text, 1.0)) == negated


def test_negation_skips_sentences_already_negated() -> None:
    result = run("negation", "She did not go home.", 1.0)
    assert isinstance(result, Skip)


def test_noun_switching_keeps_each_slot_number() -> None:
    assert text_of(run("noun-switching", "The dogs chased a cat.", 1)) == "The cats chased a dog."


def test_verb_switching_reinflects_each_verb_for_its_slot() -> None:
    out = text_of(run("verb-switching", "He writes letters and she painted walls.", 1))
    assert out == "He paints letters and she wrote walls."


def test_entity_switching_exchanges_same_type_entities() -> None:
    out = text_of(run("entity-switching", "Ana flew from Paris to Boston.", 1))
    assert out == "Ana flew from Boston to Paris."


@pytest.mark.parametrize(("name", "text"), [
    ("entity-switching", "Ana slept."),
    ("generic-entity", "The cat slept on the mat."),
    ("noun-switching", "The cat slept."),
    ("verb-switching", "The cat slept."),
    ("sentence-switching", "One sentence only."),
])
def test_skips_when_the_text_lacks_what_to_switch(name: str, text: str) -> None:
    assert isinstance(run(name, text, 1 if name != "generic-entity" else 1.0), Skip)


def test_sentence_replacement_needs_other_examples_of_the_task() -> None:
    assert isinstance(run("sentence-replacement", MARKET, 1), Skip)
    other_task = [Example("q", "qa", "", HARBOUR)]
    assert isinstance(run("sentence-replacement", MARKET, 1, pool=other_task), Skip)
    out = text_of(run("sentence-replacement", MARKET, 3, pool=GOLDEN_POOL))
    assert "Maria" not in out and "brother" not in out  # all three sentences replaced
