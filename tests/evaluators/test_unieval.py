"""UniEval's input forms and aggregation: the exact strings its checkpoints were trained on,
sentence-level means for fluency and consistency, the mean over references for relevance, and
overall as the mean of the dimensions."""

from __future__ import annotations

import pytest

from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SUMMARY = "The council approved a park. Work starts in May."
SENTENCES = ["The council approved a park.", "Work starts in May."]
DOC = "The city council approved a new park on Monday; building work will start in May."
REFS = ("A park was approved.", "Council backs park plan.")
REQUEST = ScoreRequest(SUMMARY, DOC, REFS, "summarization")

# UniEval's summarization forms, written out from its released code
EXPECTED = {
    "coherence": [[f"question: Is this a coherent summary to the document? </s> summary: "
                   f"{SUMMARY} </s> document: {DOC}"]],
    "consistency": [[f"question: Is this claim consistent with the document? </s> claim: {s} "
                     f"</s> document: {DOC}" for s in SENTENCES]],
    "fluency": [[f"question: Is this a fluent paragraph? </s> paragraph: {s}"
                 for s in SENTENCES]],
    "relevance": [[f"question: Is this summary relevant to the reference? </s> summary: "
                   f"{SUMMARY} </s> reference: {r}"] for r in REFS],
}


def test_unieval_forms_are_the_checkpoints_own(tiny_bart: str) -> None:
    evaluator = create_evaluator(f"unieval:model={tiny_bart}")
    assert evaluator.aspects == ("coherence", "consistency", "fluency", "relevance", "overall")
    for dimension, prompts in EXPECTED.items():
        assert evaluator.unieval_prompts(dimension, REQUEST) == prompts  # type: ignore[attr-defined]


def test_unieval_aggregates_sentences_references_and_overall(tiny_bart: str,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    evaluator = create_evaluator(f"unieval:model={tiny_bart}")

    def fake(prompt: str) -> float:  # a stand-in answer model: any fixed function of the prompt
        return (len(prompt) % 89) / 100 + 0.05

    monkeypatch.setattr(evaluator, "yes_probability", lambda prompts: [fake(p) for p in prompts])
    row = evaluator.score([REQUEST])[0]
    expected = {d: sum(sum(fake(p) for p in g) / len(g) for g in groups) / len(groups)
                for d, groups in EXPECTED.items()}
    for dimension, value in expected.items():
        assert row[dimension].value == pytest.approx(value)
    assert row["overall"].value == pytest.approx(sum(expected.values()) / 4)


def test_unieval_on_a_tiny_model_equals_prompt_by_prompt(tiny_bart: str) -> None:
    row = create_evaluator(f"unieval:model={tiny_bart},dimensions=consistency").score(
        [REQUEST])[0]
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_bart)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(tiny_bart).eval()
    yes = tokenizer("Yes", add_special_tokens=False)["input_ids"][0]
    no = tokenizer("No", add_special_tokens=False)["input_ids"][0]
    values = []
    for prompt in EXPECTED["consistency"][0]:
        enc = tokenizer(prompt, return_tensors="pt")
        start = torch.tensor([[model.config.decoder_start_token_id]])
        with torch.no_grad():
            probs = torch.softmax(model(**enc, decoder_input_ids=start).logits[0, 0], -1)
        values.append(float(probs[yes] / (probs[yes] + probs[no])))
    assert row["consistency"].value == pytest.approx(sum(values) / 2, abs=1e-5)
    assert row["overall"].value == pytest.approx(row["consistency"].value)


def test_unieval_settings_and_missing_inputs(tiny_bart: str) -> None:
    with pytest.raises(ValueError, match="dimensions are"):
        create_evaluator(f"unieval:model={tiny_bart},dimensions=coverage")
    with pytest.raises(ValueError, match="unieval_task"):
        create_evaluator(f"boolean-qa:model={tiny_bart},forms=unieval,unieval_task=story")
    dialogue = create_evaluator(f"unieval:model={tiny_bart},task=dialogue,"
                                "dimensions='naturalness groundedness'")
    row = dialogue.score([ScoreRequest("Sure, see you then.", "Shall we meet at noon?")])[0]
    assert row["naturalness"].ok and not row["groundedness"].ok
    assert not row["overall"].ok
