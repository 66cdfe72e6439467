"""Golden outputs and behaviour of the characters perturbations on hand-written texts."""

from __future__ import annotations

import pytest

from evalstress.perturb.base import Severity, Skip
from tests.perturb.conftest import MARKET, golden, run, text_of

GOLDEN = [
    ('char-deletion', 'major',
     ('Mria r o the markt n Lsbon o oda. Se boh fesh bead a w kios o ras. e btr ha '
      'rpare the  bicycle, b h shop il clos eary.')),
    ('char-typo', 'major',
     ('Maria dorvc to rhe mafrkert im Lisbon no Mondqay. She gbkouht reash bread and '
      'tow iklisp of porange. Rhc br0tuhr hww rwpiadec tse old biyecl, bht the shop '
      'will cloxe earl.')),
    ('spelling-mistake', 0.2,
     ('Maria drove to thde market in Lisbon on Monday. She bouught fresh bread and two '
      'kilos of oranges. Her brother has repqired the old bicycle, but the shop will '
      'cllse sarly.')),
]


@pytest.mark.parametrize(("name", "severity", "expected"), GOLDEN)
def test_golden_output_at_seed_0(name: str, severity: Severity, expected: str) -> None:
    assert golden(name, severity) == expected
    assert golden(name, severity, fresh_parser=True) == expected  # reproducible across parses


def _alnum(text: str) -> int:
    return sum(ch.isalnum() for ch in text)


@pytest.mark.parametrize(("task", "severity", "k"), [
    ("summarization", "minor", 10), ("summarization", "major", 50), ("qa", "minor", 5),
    ("qa", "major", 25), ("translation", "minor", 10), ("dialogue", "major", 50), ("qa", 7, 7),
])
def test_char_deletion_deletes_the_k_of_the_task(task: str, severity: Severity, k: int) -> None:
    out = text_of(run("char-deletion", MARKET, severity, task=task))
    assert _alnum(MARKET) - _alnum(out) == k


def test_dhp_severity_must_be_minor_major_or_a_number() -> None:
    with pytest.raises(ValueError, match="minor"):
        run("char-deletion", MARKET, "huge")


def test_char_typo_leaves_the_global_random_state_alone() -> None:
    import random

    random.seed(123)
    expected = random.random()
    random.seed(123)
    run("char-typo", MARKET, "major")
    assert random.random() == expected


def test_spelling_mistake_changes_about_the_asked_portion_of_words() -> None:
    out = text_of(run("spelling-mistake", MARKET, 0.4))
    changed = sum(a != b for a, b in zip(MARKET.split(), out.split(), strict=False))
    assert 4 <= changed <= 14  # 0.4 of 27 eligible words, each one typo (a typo may split)


def test_character_noise_skips_texts_without_letters() -> None:
    for name in ("char-deletion", "char-typo"):
        assert isinstance(run(name, "!!", "minor"), Skip)
    assert isinstance(run("spelling-mistake", "It is so.", 0.4), Skip)
