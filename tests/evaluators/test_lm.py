"""GPT-PPL and MLM-PPL equal their definitions computed directly with the model."""

from __future__ import annotations

import functools
import math

import pytest

from evalstress.core import models
from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TEXTS = ["The committee met on Tuesday to discuss the budget.",
         "She went to the office.", "Rain.", "a b c d e f g h i j k l m n o p"]


def _direct_gpt_ppl(path: str, text: str) -> float:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return math.exp(float(model(ids, labels=ids).loss))


def test_gpt_ppl_is_negated_perplexity_of_the_model(tiny_gpt: str) -> None:
    rows = create_evaluator(f"gpt-ppl:model={tiny_gpt},batch_size=3").score(
        [ScoreRequest(t) for t in TEXTS])
    for text, row in zip(TEXTS, rows, strict=True):
        assert row["neg_ppl"].value == pytest.approx(-_direct_gpt_ppl(tiny_gpt, text), rel=1e-4)


def test_gpt_ppl_on_one_cpu_thread_is_the_same_perplexity_and_puts_torchs_threads_back(
        tiny_gpt: str) -> None:
    before = torch.get_num_threads()
    evaluator = create_evaluator(f"gpt-ppl:model={tiny_gpt},batch_size=3,threads=1")
    seen: list[int] = []
    forward = evaluator.shared.model.forward

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(torch.get_num_threads())
        return forward(*args, **kwargs)

    evaluator.shared.model.forward = watched
    try:
        rows = evaluator.score([ScoreRequest(t) for t in TEXTS])
    finally:
        del evaluator.shared.model.forward
    assert seen and set(seen) == {1} and torch.get_num_threads() == before
    for text, row in zip(TEXTS, rows, strict=True):
        assert row["neg_ppl"].value == pytest.approx(-_direct_gpt_ppl(tiny_gpt, text), rel=1e-4)
    # the thread count does not change the numbers: the cache key stays the default's
    assert evaluator.signature() == create_evaluator(f"gpt-ppl:model={tiny_gpt}").signature()


def test_gpt_ppl_cuts_long_texts_to_the_window_and_says_so(tiny_gpt: str) -> None:
    long_text = " ".join(["word"] * 100)  # the tiny model's window is 64 positions
    row = create_evaluator(f"gpt-ppl:model={tiny_gpt}").score([ScoreRequest(long_text)])[0]
    assert row["neg_ppl"].ok and row["neg_ppl"].extra["truncated"] is True


def _direct_pseudo_ppl(path: str, text: str) -> float:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = _mlm(path)
    ids = tokenizer(text)["input_ids"]
    total, count = 0.0, 0
    for t in range(1, len(ids) - 1):  # [CLS] and [SEP] are not scored
        masked = list(ids)
        masked[t] = tokenizer.mask_token_id
        with torch.no_grad():
            logits = model(torch.tensor([masked])).logits[0, t]
        total += float(torch.log_softmax(logits, dim=-1)[ids[t]])
        count += 1
    return math.exp(-total / count)


@functools.lru_cache(maxsize=2)
def _mlm(path: str) -> object:
    return transformers.AutoModelForMaskedLM.from_pretrained(path).eval()


def test_mlm_ppl_is_pseudo_perplexity_by_the_definition(tiny_mlm: str) -> None:
    rows = create_evaluator(f"mlm-ppl:model={tiny_mlm},batch_size=7").score(
        [ScoreRequest(t) for t in TEXTS])
    for text, row in zip(TEXTS, rows, strict=True):
        assert row["neg_ppl"].value == pytest.approx(-_direct_pseudo_ppl(tiny_mlm, text), rel=1e-4)


def test_mlm_ppl_without_a_model_explains() -> None:
    with pytest.raises(ValueError, match="masked LM"):
        create_evaluator("mlm-ppl")


def test_higher_is_better_for_negated_perplexity(tiny_gpt: str) -> None:
    evaluator = create_evaluator(f"gpt-ppl:model={tiny_gpt}")
    assert evaluator.aspects == ("neg_ppl",) and evaluator.higher_is_better("neg_ppl")


@pytest.mark.slow
@pytest.mark.long_run
def test_gpt_ppl_default_is_the_shipped_smollm2_gguf() -> None:
    pytest.importorskip("gguf")
    path = models.resolve_model("smollm2")
    text = "The cat sat on the mat and looked out of the window."
    folder, name = path.rsplit("/", 1)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name).eval()
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = -math.exp(float(model(ids, labels=ids).loss))
    evaluator = create_evaluator("gpt-ppl")
    rows = evaluator.score([ScoreRequest(text), ScoreRequest(text + " " + text)])
    assert rows[0]["neg_ppl"].value == pytest.approx(expected, rel=1e-4)
    assert evaluator.signature()["versions"]["path"].endswith(".gguf")
