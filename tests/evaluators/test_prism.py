"""PRISM-style scores: a hand-computed case on a tiny model whose next-token distribution is a
fixed softmax, and the random tiny BART against a pair-by-pair forward pass."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

V = 30522
BIAS = {2003: 2.0, 1996: 1.0}  # "is" and "the" in the shared WordPiece vocabulary


@pytest.fixture(scope="module")
def fixed_bart(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A BART whose weights are all zero: every hidden state is 0, so the logits at every step
    are the final bias alone, whatever the source and the previous tokens."""
    from evalstress.core import models

    config = transformers.BartConfig(
        vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16,
        max_position_embeddings=64, pad_token_id=0, bos_token_id=101, eos_token_id=102,
        decoder_start_token_id=102, forced_eos_token_id=102)
    model = transformers.BartForConditionalGeneration(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for token, value in BIAS.items():
            model.final_logits_bias[0, token] = value
    folder = tmp_path_factory.mktemp("fixed-bart")
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(models.resolve_model("minilm")).save_pretrained(
        folder)
    return str(folder)


def logp(token: int) -> float:
    """log softmax of the bias vector: b_t - log(sum_j exp(b_j))."""
    norm = math.log((V - len(BIAS)) + sum(math.exp(b) for b in BIAS.values()))
    return BIAS.get(token, 0.0) - norm


def test_prism_hand_computed_on_a_fixed_distribution(fixed_bart: str) -> None:
    # "the sky is blue" -> [CLS] the sky is blue [SEP]: 6 target tokens, each with its own
    # probability under the fixed softmax, whatever the source
    ids = [101, 1996, 3712, 2003, 2630, 102]
    expected = sum(logp(t) for t in ids) / len(ids)
    row = create_evaluator(f"prism:model={fixed_bart}").score(
        [ScoreRequest("the sky is blue", "some source", ("the sky is blue",))])[0]
    for aspect in ("ref", "ref_hypo", "hypo_ref", "src"):
        assert row[aspect].value == pytest.approx(expected, abs=1e-4), aspect
    # a language tag ("is") opens the target; its probability is left out of the mean
    tagged = create_evaluator(f"prism:model={fixed_bart},lang_tag=is,variants=ref_hypo").score(
        [ScoreRequest("the sky is blue", "", ("a sky",))])[0]
    assert tagged["ref_hypo"].value == pytest.approx(expected, abs=1e-4)
    # two references: the mean over them (hypothesis -> reference differs with the reference)
    two = create_evaluator(f"prism:model={fixed_bart},variants=hypo_ref").score(
        [ScoreRequest("x", "", ("the sky is blue", "is"))])[0]
    second = sum(logp(t) for t in (101, 2003, 102)) / 3
    assert two["hypo_ref"].value == pytest.approx((expected + second) / 2, abs=1e-4)


def _mean_logprob(path: str, src: str, tgt: str) -> float:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    x = tokenizer(src, return_tensors="pt")["input_ids"]
    y = tokenizer(tgt, return_tensors="pt")["input_ids"]
    start = torch.tensor([[model.config.decoder_start_token_id]])
    with torch.no_grad():
        logits = model(input_ids=x, decoder_input_ids=torch.cat([start, y[:, :-1]], 1)).logits[0]
    lp = torch.log_softmax(logits, -1)
    return float(sum(lp[t, int(y[0, t])] for t in range(y.shape[1]))) / y.shape[1]


def test_prism_on_a_random_tiny_bart_equals_pair_by_pair(tiny_bart: str) -> None:
    request = ScoreRequest("The council approved a park.", "The city council met on Monday.",
                           ("A park was approved.", "Council says yes to the park."))
    row = create_evaluator(f"prism:model={tiny_bart},batch_size=3").score([request])[0]
    fwd = [_mean_logprob(tiny_bart, r, request.text) for r in request.references]
    rev = [_mean_logprob(tiny_bart, request.text, r) for r in request.references]
    assert row["ref_hypo"].value == pytest.approx(sum(fwd) / 2, abs=1e-4)
    assert row["hypo_ref"].value == pytest.approx(sum(rev) / 2, abs=1e-4)
    assert row["ref"].value == pytest.approx((sum(fwd) + sum(rev)) / 4, abs=1e-4)
    assert row["src"].value == pytest.approx(
        _mean_logprob(tiny_bart, request.source, request.text), abs=1e-4)
    missing = create_evaluator(f"prism:model={tiny_bart}").score([ScoreRequest("x")])[0]
    assert not missing["ref"].ok and not missing["src"].ok


def test_prism_needs_a_model_and_known_variants(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seq2seq"):
        create_evaluator("prism")
    with pytest.raises(ValueError, match="variants"):
        create_evaluator(f"prism:model={tmp_path},variants=bleu")
