from __future__ import annotations

import random

import pytest

from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    Variant,
    derive_seed,
    get_perturbation,
    registry,
)

EXAMPLE = Example("e1", "summarization", "Source.", "The cat sat on the mat. It was warm there.")


class Identity(Perturbation):
    name = "identity-for-test"

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        return ctx.text


def test_unchanged_text_becomes_a_skip_not_a_variant() -> None:
    result = Identity().apply(PerturbContext(EXAMPLE, TextParser()), 0.5, seed=0)
    assert isinstance(result, Skip)
    assert "unchanged" in result.reason


def test_same_seed_same_variant_and_seeds_differ() -> None:
    parser = TextParser()
    drop = get_perturbation("token-drop")
    ctx = PerturbContext(EXAMPLE, parser)
    first = drop.apply(ctx, 0.3, seed=1)
    again = drop.apply(PerturbContext(EXAMPLE, TextParser()), 0.3, seed=1)
    assert isinstance(first, Variant) and isinstance(again, Variant)
    assert first.text == again.text
    texts = {getattr(drop.apply(ctx, 0.3, seed=s), "text", None) for s in range(5)}
    assert len(texts) > 1


def test_derive_seed_is_stable_across_processes() -> None:
    # a literal: Python's salted hash() would change this between runs
    assert derive_seed(0, "e1", "token-drop", 0.3) == derive_seed(0, "e1", "token-drop", 0.3)
    assert derive_seed(0, "e1", "token-drop", 0.3) != derive_seed(1, "e1", "token-drop", 0.3)
    assert derive_seed(7, "x") == 15129970996832006679


def test_unknown_perturbation_suggests_close_names() -> None:
    with pytest.raises(KeyError, match="Did you mean 'truncation'"):
        get_perturbation("truncaton")


def test_every_perturbation_declares_metadata() -> None:
    from evalstress.criteria import aspects

    known = set(aspects())
    for name, cls in registry().items():
        info = cls.info()
        assert info["description"], name
        assert info["grid"], name
        assert info["level"] in ("char", "word", "sentence"), name
        assert set(cls.damages) <= known and set(cls.preserves) <= known, name
        assert not set(cls.damages) & set(cls.preserves), name


def test_variant_diff_marks_changes() -> None:
    variant = Variant("e1", "x", 0.1, 0, "The cat sat on mat.", 0.1)
    assert variant.diff("The cat sat on the mat.") == "[-the-]"
