"""Golden outputs and behaviour of the fluency perturbations on hand-written texts."""

from __future__ import annotations

import pytest

from evalstress.perturb.base import Severity, Skip
from tests.perturb.conftest import MARKET, golden, run, text_of

GOLDEN = [
    ('article-removal', 0.4,
     ('Maria drove to the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos of oranges. Her brother has repaired the old bicycle, but shop will close '
      'early.')),
    ('local-swap', 0.2,
     ('drove Maria to the market in Lisbon on Monday. She bought fresh bread two and '
      'of kilos oranges. Her has brother repaired the old bicycle, but the will shop '
      'close .early')),
    ('middle-swap', 0.4,
     ('Maria drove to the market in Lisbon on Monday. And two kilos of oranges she '
      'bought fresh bread. Her brother has repaired the old bicycle, but the shop will '
      'close early.')),
    ('noised-punctuation', 0.4,
     ('Maria drove to the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos of oranges, Her brother has repaired the old bicycle, but the shop will '
      'close early,')),
    ('preposition-removal', 0.4,
     ('Maria drove the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos oranges. Her brother has repaired the old bicycle, but the shop will '
      'close early.')),
    ('repeated-token', 0.2,
     ('Maria drove drove to the market in Lisbon on Monday. She She bought fresh fresh '
      'bread and and two kilos of oranges. Her brother has repaired the old bicycle '
      'bicycle, but but the shop will close close early.')),
    ('stopword-removal', 0.4,
     ('Maria drove to market in Lisbon Monday. She bought fresh bread two kilos of '
      'oranges. Her brother has repaired the old bicycle, but shop close early.')),
    ('token-drop', 0.2,
     ('drove the market Lisbon on Monday. She bought fresh bread and two kilos of '
      'oranges. Her brother repaired the old bicycle, but will close early.')),
    ('truncation', 0.2,
     ('Maria drove to the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos of oranges. Her brother has repaired the old bicycle,')),
    ('verb-lemmatization', 0.4,
     ('Maria drive to the market in Lisbon on Monday. She bought fresh bread and two '
      'kilos of oranges. Her brother has repair the old bicycle, but the shop will '
      'close early.')),
]


@pytest.mark.parametrize(("name", "severity", "expected"), GOLDEN)
def test_golden_output_at_seed_0(name: str, severity: Severity, expected: str) -> None:
    assert golden(name, severity) == expected
    assert golden(name, severity, fresh_parser=True) == expected  # reproducible across parses


def test_preposition_removal_at_full_ratio_removes_every_preposition() -> None:
    out = text_of(run("preposition-removal", MARKET, 1.0))
    assert set(out.lower().split()).isdisjoint({"to", "in", "on", "of"})
    assert "market" in out


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
