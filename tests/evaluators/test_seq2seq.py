"""BARTScore and boolean QA equal their definitions computed pair by pair with the model."""

from __future__ import annotations

import functools

import pytest

from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SOURCE = "The city council approved a new park on Monday after a long debate about costs."
REQUESTS = [
    ScoreRequest("The council approved a park.", SOURCE,
                 ("A new park was approved by the council.", "Council says yes to park plan.")),
    ScoreRequest("Costs were debated for a long time before the vote on Monday.", SOURCE,
                 ("The council debated costs.",)),
    ScoreRequest("No references here.", SOURCE, ()),
]


@functools.lru_cache(maxsize=2)
def _load(path: str) -> tuple[object, object]:
    return (transformers.AutoTokenizer.from_pretrained(path),
            transformers.AutoModelForSeq2SeqLM.from_pretrained(path).eval())


def _loglik(path: str, src: str, tgt: str) -> tuple[float, float]:
    """Sum of log p(y_t | y_<t, x) over the target's tokens, one pair at a time, no padding."""
    tokenizer, model = _load(path)
    x = tokenizer(src, return_tensors="pt")["input_ids"]
    y = tokenizer(tgt, return_tensors="pt")["input_ids"]
    start = torch.tensor([[model.config.decoder_start_token_id]])
    decoder_in = torch.cat([start, y[:, :-1]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=x, decoder_input_ids=decoder_in).logits[0]
    logp = torch.log_softmax(logits, dim=-1)
    total = float(sum(logp[t, int(y[0, t])] for t in range(y.shape[1])))
    return total / y.shape[1], total


def test_bartscore_equals_length_averaged_loglikelihood(tiny_bart: str) -> None:
    rows = create_evaluator(f"bartscore:model={tiny_bart},batch_size=2").score(REQUESTS)
    for request, row in zip(REQUESTS[:2], rows[:2], strict=True):
        prec = [_loglik(tiny_bart, r, request.text) for r in request.references]
        rec = [_loglik(tiny_bart, request.text, r) for r in request.references]
        faith = _loglik(tiny_bart, request.source, request.text)
        assert row["precision"].value == pytest.approx(max(p[0] for p in prec), abs=1e-4)
        assert row["recall"].value == pytest.approx(max(r[0] for r in rec), abs=1e-4)
        assert row["f"].value == pytest.approx(
            max((p[0] + r[0]) / 2 for p, r in zip(prec, rec, strict=True)), abs=1e-4)
        assert row["faithfulness"].value == pytest.approx(faith[0], abs=1e-4)
        assert row["faithfulness_noavg"].value == pytest.approx(faith[1], abs=1e-3)
        assert row["precision_noavg"].value == pytest.approx(max(p[1] for p in prec), abs=1e-3)
    assert not rows[2]["precision"].ok and rows[2]["faithfulness"].ok


def test_bartscore_mean_over_references_and_variant_choice(tiny_bart: str) -> None:
    evaluator = create_evaluator(f"bartscore:model={tiny_bart},variants=recall,agg=mean")
    assert evaluator.aspects == ("recall", "recall_noavg")
    row = evaluator.score(REQUESTS[:1])[0]
    expected = [_loglik(tiny_bart, REQUESTS[0].text, r)[0] for r in REQUESTS[0].references]
    assert row["recall"].value == pytest.approx(sum(expected) / 2, abs=1e-4)


def test_bartscore_needs_a_model() -> None:
    with pytest.raises(ValueError, match="seq2seq"):
        create_evaluator("bartscore")


def test_boolean_qa_is_yes_share_of_first_decoded_token(tiny_bart: str) -> None:
    question = "question: Is this a good summary? </s> summary: {text} </s> document: {source}"
    evaluator = create_evaluator({"name": "boolean-qa", "model": tiny_bart, "question": question,
                                  "aspect": "good"})
    rows = evaluator.score(REQUESTS)
    tokenizer, model = _load(tiny_bart)
    yes = tokenizer("Yes", add_special_tokens=False)["input_ids"][0]
    no = tokenizer("No", add_special_tokens=False)["input_ids"][0]
    for request, row in zip(REQUESTS, rows, strict=True):
        enc = tokenizer(question.format(text=request.text, source=request.source),
                        return_tensors="pt")
        start = torch.tensor([[model.config.decoder_start_token_id]])
        with torch.no_grad():
            probs = torch.softmax(model(**enc, decoder_input_ids=start).logits[0, 0], dim=-1)
        expected = float(probs[yes] / (probs[yes] + probs[no]))
        assert row["good"].value == pytest.approx(expected, abs=1e-5)


def test_boolean_qa_default_dimensions_and_missing_inputs(tiny_bart: str) -> None:
    evaluator = create_evaluator(f"boolean-qa:model={tiny_bart}")
    assert evaluator.aspects == ("coherence", "consistency", "fluency", "relevance")
    row = evaluator.score([ScoreRequest("A text without a source.")])[0]
    assert row["fluency"].ok and 0 < row["fluency"].value < 1  # type: ignore[operator]
    assert not row["coherence"].ok and not row["relevance"].ok
