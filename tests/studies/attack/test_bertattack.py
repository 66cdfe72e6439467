"""BERT-Attack (Li et al. 2020) on the tiny masked LM the tests build: importance by masking,
candidates from one unmasked pass (top-K whole words for a one-piece word, ranked combinations
of pieces for a longer one), the greedy search and its cap on changed words."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from evalstress.core.data import Example
from evalstress.studies.attack.base import AttackSetup
from evalstress.studies.attack.bertattack import BertAttack
from evalstress.studies.attack.methods import make_methods
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.scoring import Gold, Victim

from .conftest import SOURCE, TableVictim

TEXT = "The council will rebuild the old harbour bridge in May."
CONTENT = ("council", "rebuild", "old", "harbour", "bridge")  # spaCy: not stop-words


def reference_pass(path: str, words: list[str]) -> tuple[list[list[int]], Any, Any]:
    """transformers itself: the words' pieces and the log-probabilities of one unmasked pass."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForMaskedLM.from_pretrained(path).eval()
    pieces = [tokenizer(w, add_special_tokens=False)["input_ids"] for w in words]
    ids = [tokenizer.cls_token_id, *[i for p in pieces for i in p], tokenizer.sep_token_id]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    return pieces, torch.log_softmax(logits, dim=-1), tokenizer


def top_words(logprobs: Any, position: int, tokenizer: Any, word: str, k: int) -> list[str]:
    import torch

    out = []
    for token_id in torch.argsort(logprobs[position], descending=True).tolist():
        piece = tokenizer.convert_ids_to_tokens(token_id)
        if token_id in tokenizer.all_special_ids or piece.startswith("##") \
                or not piece.isalpha() or piece == word:
            continue
        out.append(piece)
        if len(out) == k:
            return out
    return out


def test_a_one_piece_word_gets_the_top_k_of_an_unmasked_pass(tiny_masked_lm: str) -> None:
    words = TEXT.replace(".", " .").split()
    pieces, logprobs, tokenizer = reference_pass(tiny_masked_lm, words)
    at = words.index("harbour")
    assert len(pieces[at]) == 1
    position = 1 + sum(len(p) for p in pieces[:at])
    attack = BertAttack(model=tiny_masked_lm, top=12, sim=0)
    assert attack.predict(words)[at] == top_words(logprobs, position, tokenizer, "harbour", 12)


def test_a_word_of_several_pieces_gets_combinations_ranked_by_perplexity(
        tiny_masked_lm: str) -> None:
    words = ["the", "ferryman", "played"]  # ferry ##man
    pieces, logprobs, tokenizer = reference_pass(tiny_masked_lm, words)
    n = len(pieces[1])
    assert n == 2
    import torch

    start = 1 + len(pieces[0])
    tops = [torch.topk(logprobs[start + k], 3) for k in range(n)]
    ranked = []
    for choice in itertools.product(range(3), repeat=n):
        ids = [int(tops[k].indices[c]) for k, c in enumerate(choice)]
        mean = sum(float(tops[k].values[c]) for k, c in enumerate(choice)) / n
        word = tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens(ids))
        word = word.replace(" ", "")
        if word.isalpha() and not set(ids) & set(tokenizer.all_special_ids):
            ranked.append((-mean, word))
    expected = list(dict.fromkeys(w for _, w in sorted(ranked)))[:5]
    attack = BertAttack(model=tiny_masked_lm, top=5, per_piece=3, sim=0)
    assert attack.predict(words)[1] == expected
    assert BertAttack(model=tiny_masked_lm, max_pieces=1, sim=0).predict(words)[1] == []


def missing(text: str, word: str) -> bool:
    return re.search(rf"\b{word}\b", text) is None


def setup(victim: TableVictim, budget: int = 300) -> AttackSetup:
    example = Example("a", "summarization", SOURCE, TEXT, (TEXT,))
    scored = Victim(victim)
    scored.calibrate([example])
    gold = Gold([TableVictim(default=80.0)])
    gold.calibrate([example])
    return AttackSetup(example, scored, gold, "good", AttackParams(budget=budget), [example])


@pytest.mark.slow
def test_the_search_masks_for_importance_and_substitutes_greedily(tiny_masked_lm: str) -> None:
    # by hand: the victim drops 30 without "harbour" and 10 without "bridge", nothing else.
    # Masking ranks harbour (30), bridge (10), then the other content words (0) by position.
    # Any replacement of harbour scores 50 (the first candidate wins the tie), then of bridge
    # 40; later words move nothing and stay. Target for good: tau+ - delta = 30, not reached.
    # The gold rates 80: 80 >= 70 and 80 - 40 >= 40, a success.
    victim = TableVictim(lambda t: 80 - 30 * missing(t, "harbour") - 10 * missing(t, "bridge"))
    attack = BertAttack(model=tiny_masked_lm, sim=0)
    state = setup(victim)
    record = attack.run(state)
    assert "The council will rebuild the old [MASK] bridge in May." in victim.seen
    words = TEXT.replace(".", " .").split()
    pieces, logprobs, tokenizer = reference_pass(tiny_masked_lm, words)

    def first(word: str) -> str:
        at = words.index(word)
        return top_words(logprobs, 1 + sum(len(p) for p in pieces[:at]), tokenizer, word, 1)[0]

    assert [(p["old"], p["new"], p["victim"]) for p in record.extra["path"]] == [
        ("harbour", first("harbour"), 50.0), ("bridge", first("bridge"), 40.0)]
    assert record.text == f"The council will rebuild the old {first('harbour')} " \
                          f"{first('bridge')} in May."
    assert (record.gold, record.victim_score, record.success) == (80.0, 40.0, True)
    assert record.stop == "words" and record.stop_rule == "final-text"
    # queries: the start, 5 masked texts, 48 candidates at each of the 5 content words
    assert record.queries == 1 + 5 + 5 * 48 == state.budget.used


@pytest.mark.slow
def test_changes_stop_at_forty_percent_of_the_words(tiny_masked_lm: str) -> None:
    # every replaced content word lowers the victim by 5: 10 words allow 4 changes
    victim = TableVictim(lambda t: 80 - 5 * sum(missing(t, w) for w in CONTENT))
    record = BertAttack(model=tiny_masked_lm, sim=0).run(setup(victim))
    assert len(record.extra["path"]) == 4 and record.stop == "max-changed"
    assert record.victim_score == 60.0


def test_settings_are_checked(tiny_masked_lm: str) -> None:
    with pytest.raises(ValueError, match="needs a masked LM"):
        BertAttack(model="")
    with pytest.raises(ValueError, match="max_changed"):
        BertAttack(model=tiny_masked_lm, max_changed=0)
    [method] = make_methods([f"bert-attack:model={tiny_masked_lm},top=8"])
    assert method.name == "bert-attack" and method.applies("good") and method.applies("bad")
    with pytest.raises(ValueError, match="Did you mean 'top'"):
        make_methods([f"bert-attack:model={tiny_masked_lm},tops=8"])
