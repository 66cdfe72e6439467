"""BERT-diverge: seeded, replaces the asked share of words with the masked LM's top-10 words."""

from __future__ import annotations

import random

import pytest

from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.perturb.base import PerturbContext, Skip, Variant, get_perturbation
from evalstress.perturb.model_based import BertDiverge

TEXT = ("She went to the office in Boston. And she talked to her staff about the plans "
        "for the new building next year.")


def _ctx(text: str = TEXT) -> PerturbContext:
    example = Example(id="x", task="summarization", source="", hypothesis=text)
    return PerturbContext(example, TextParser())


def test_same_seed_same_text_other_seed_other_text(tiny_masked_lm: str) -> None:
    pert = get_perturbation("bert-diverge", model=tiny_masked_lm)
    first = pert.apply(_ctx(), 0.3, seed=0)
    again = pert.apply(_ctx(), 0.3, seed=0)
    other = pert.apply(_ctx(), 0.3, seed=1)
    assert isinstance(first, Variant) and isinstance(other, Variant)
    assert first == again and first.text != other.text
    assert first.text != TEXT and len(first.text.split()) == len(TEXT.split())


def test_changed_words_follow_the_severity(tiny_masked_lm: str) -> None:
    pert = get_perturbation("bert-diverge", model=tiny_masked_lm)
    words = TEXT.split()
    changed = {}
    for severity in (0.1, 0.5):
        variant = pert.apply(_ctx(), severity, seed=3)
        assert isinstance(variant, Variant)
        changed[severity] = sum(a != b for a, b in zip(words, variant.text.split(), strict=True))
    assert 1 <= changed[0.1] <= 3 and changed[0.5] >= 6
    assert changed[0.5] > changed[0.1]


def test_replacement_is_among_the_masked_lm_top_ten(tiny_masked_lm: str) -> None:
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_masked_lm)
    model = transformers.AutoModelForMaskedLM.from_pretrained(tiny_masked_lm).eval()
    text = "the cat sat on the mat"
    variant = get_perturbation("bert-diverge", model=tiny_masked_lm).apply(
        _ctx(text), 0.1, seed=5)  # one word of six
    assert isinstance(variant, Variant)
    before, after = text.split(), variant.text.split()
    (position,) = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    masked = " ".join(tokenizer.mask_token if i == position else w for i, w in enumerate(before))
    enc = tokenizer(masked, return_tensors="pt")
    where = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        probs = model(**enc).logits[0, where].softmax(-1)
    words = []
    for token_id in probs.argsort(descending=True).tolist():
        word = tokenizer.convert_ids_to_tokens(token_id)
        if token_id in tokenizer.all_special_ids or word.startswith("##") or not word.isalpha() \
                or word == before[position]:
            continue
        words.append(word)
        if len(words) == 10:
            break
    assert after[position] in words


def test_without_a_model_the_error_says_what_to_give(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSTRESS_MASKED_LM", raising=False)
    pert = BertDiverge()
    with pytest.raises(ValueError, match="masked LM"):
        pert.transform(_ctx(), 0.2, random.Random(0))
    assert BertDiverge.info()["method"] == "model"


def test_text_without_words_is_skipped(tiny_masked_lm: str) -> None:
    result = get_perturbation("bert-diverge", model=tiny_masked_lm).apply(
        _ctx("123 456 ..."), 0.5, seed=0)
    assert isinstance(result, Skip)


def test_marked_vocabularies_offer_whole_words(marked_masked_lm: tuple[str, str]) -> None:
    """The rigged head's logits are its bias: 10 for the continuation piece `car`, 9 for the
    word start of `bus`, 8 for `.`, 7 for `van`, 6 for `truck`, 0 elsewhere
    (tests/wordpiece_models.py). The top two whole words at a masked `truck` are `bus` and
    `van`, with their softmax probabilities over the whole vocabulary."""
    import math

    import transformers

    family, path = marked_masked_lm
    size = len(transformers.AutoTokenizer.from_pretrained(path).get_vocab())
    total = sum(math.exp(b) for b in (10, 9, 8, 7, 6)) + (size - 5)
    found = BertDiverge(model=path, top_k=2).candidates(["the", "truck", "stopped"], 1)
    assert [w for w, _ in found] == ["bus", "van"], family
    assert [p for _, p in found] == pytest.approx([math.exp(9) / total, math.exp(7) / total],
                                                   rel=1e-4)
