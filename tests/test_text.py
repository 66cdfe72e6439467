"""The fast rebuild gives exactly what the reference rebuild gives."""

from __future__ import annotations

import random

import pytest

from evalstress.text import TextParser, rebuild, rebuild_parsed

TEXTS = [
    "She didn't go, but they've gone home. Then -- quietly -- it ended!",
    "Line one.\n\nLine two has  two spaces and a (parenthesis).",
    "Numbers: 3.5 kg, $20, and 1,000 people; done.",
]


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
