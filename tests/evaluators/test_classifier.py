"""hf-classifier equals the model called directly, for regression and classification heads."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

REQUESTS = [ScoreRequest("A fine short answer.", "What is it?", ("A good answer.", "Fine.")),
            ScoreRequest("Another, somewhat longer answer to the same question here.",
                         "What is it?", ("An answer.",))]


def _direct(path: str, first: str, second: str | None = None) -> torch.Tensor:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    enc = tokenizer(first, second, return_tensors="pt") if second else tokenizer(
        first, return_tensors="pt")
    with torch.no_grad():
        return model(**enc).logits[0]


def test_regression_head_gives_its_raw_output(tiny_classifier: Callable[[int], str]) -> None:
    path = tiny_classifier(1)
    rows = create_evaluator(f"hf-classifier:model={path},aspect=quality").score(REQUESTS)
    for request, row in zip(REQUESTS, rows, strict=True):
        assert row["quality"].value == pytest.approx(float(_direct(path, request.text)[0]),
                                                     abs=1e-5)


def test_classifier_probability_of_named_label_best_reference(
        tiny_classifier: Callable[[int], str]) -> None:
    path = tiny_classifier(3)
    rows = create_evaluator(f"hf-classifier:model={path},label=class1,pair=references").score(
        REQUESTS)
    for request, row in zip(REQUESTS, rows, strict=True):
        expected = max(float(torch.softmax(_direct(path, request.text, ref), dim=-1)[1])
                       for ref in request.references)
        assert row["score"].value == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="not one of"):
        evaluator = create_evaluator(f"hf-classifier:model={path},label=nope")
        evaluator.score(REQUESTS)


def test_missing_pair_is_recorded_missing(tiny_classifier: Callable[[int], str]) -> None:
    path = tiny_classifier(2)
    row = create_evaluator(f"hf-classifier:model={path},pair=source").score(
        [ScoreRequest("no source")])[0]
    assert not row["score"].ok and "source" in (row["score"].reason or "")
