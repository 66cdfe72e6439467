"""Paper 002's negation (rule=paper): CheckList's rules, and the code's fallback where CheckList
declines; each expected text is worked out from those rules by hand."""

from __future__ import annotations

import re

import pytest

from evalstress.perturb.base import Skip, Variant
from evalstress.perturb.checklist_negation import fallback
from tests.perturb.conftest import MARKET, run, text_of

PAPER = {"rule": "paper"}


def negation_cues(text: str) -> int:
    """not, never and every n't contraction (hasn't, didn't) in a text."""
    words = re.findall(r"[\w']+", text.lower())
    return sum(w in ("not", "never", "cannot") or w.endswith("n't") for w in words)

HAND = [
    # a bare past verb takes do-support with n't and its base form
    ("She went to the office.", "She didn't go to the office."),
    # a present third-person verb: doesn't
    ("He walks to work.", "He doesn't walk to work."),
    # has/will/can are contracted with n't; will becomes won't
    ("He has gone home.", "He hasn't gone home."),
    ("They will swim.", "They won't swim."),
    ("She can drive.", "She can't drive."),
    # a contracted 've opens up: I haven't
    ("I've seen it.", "I haven't seen it."),
    # "is" (a form of be) takes not after it
    ("She is tired.", "She is not tired."),
    # an auxiliary CheckList does not contract (may) puts not before the verb
    ("It may rain.", "It may not rain."),
    # a root already negated: CheckList declines and the fallback takes the negation away
    ("He was not there.", "He was there."),
]


@pytest.mark.parametrize(("text", "expected"), HAND)
def test_paper_negation_follows_checklist_and_the_fallback(text: str, expected: str) -> None:
    assert text_of(run("negation", text, 1.0, params=PAPER)) == expected


def test_default_negation_differs_from_the_paper_rule() -> None:
    assert text_of(run("negation", "She went to the office.", 1.0)) == \
        "She did not go to the office."
    assert isinstance(run("negation", "He was not there.", 1.0), Skip)  # never un-negates


def test_fallback_rules_in_their_order() -> None:
    # the first pattern that occurs rewrites each of its occurrences; later ones wait
    assert fallback("They were here and were not sad") == "They were here and were sad"
    assert fallback("You never know, they never came") == "You know, they came"
    assert fallback("The shops are closed today") == "The shops are not closed today"
    assert fallback("Sunny.") == "Sunny."  # nothing matches: the sentence stays


def test_a_summary_negation_is_measured_over_treebank_units() -> None:
    # She went to the office . -> She didn't go to the office . : 2 edits over 6 units
    out = run("negation", "She went to the office.", 1.0, params=PAPER)
    assert isinstance(out, Variant) and out.noise_ratio == pytest.approx(2 / 6)
    wiki = run("negation", "She went to the office.", 1.0, params=PAPER, task="open-ended")
    assert isinstance(wiki, Variant) and wiki.noise_ratio == pytest.approx(2 / 5)


def test_every_sentence_drawn_changes_its_polarity_at_ratio_one() -> None:
    # MARKET's three sentences all have a verbal root: each gains one negation
    out = text_of(run("negation", MARKET, 1.0, params=PAPER))
    assert negation_cues(out) - negation_cues(MARKET) == 3
    assert out.count(". ") == MARKET.count(". ")  # sentences stay whole, in order


def test_lower_ratios_negate_fewer_sentences_on_average() -> None:
    def mean_change(ratio: float) -> float:
        changes = []
        for seed in range(30):
            result = run("negation", MARKET, ratio, seed, params=PAPER)
            changes.append(0 if isinstance(result, Skip) else
                           negation_cues(result.text) - negation_cues(MARKET))
        return sum(changes) / len(changes)

    low, high = mean_change(0.3), mean_change(0.8)
    assert 0 < low < high <= 3
