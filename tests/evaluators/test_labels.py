"""Evaluator labels in tables are short and unique within a run; they are display only: the
signature, and so the score cache, rests on the spec's parameters."""

from __future__ import annotations

from typing import Any

import pytest

from evalstress.evaluators.base import create_evaluator, distinct_labels

FLUENCY = "judge:aspect=fluency coherence,model=local"


def _labels(*specs: str) -> list[str]:
    made = [create_evaluator(spec) for spec in specs]
    distinct_labels(made)
    return [e.label for e in made]


def test_a_judge_is_labelled_by_its_model_and_a_metric_by_its_name() -> None:
    assert _labels(FLUENCY, "bleu", "rouge") == ["judge(local)", "bleu", "rouge"]
    assert _labels("judge:model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1") == [
        "judge(gpt-4o-mini)"]
    assert _labels("judge:model=/x/y/SmolLM2") == ["judge(SmolLM2)"]  # a path: its last part
    assert _labels("judge:model=Qwen/Qwen2.5-7B-Instruct") == ["judge(Qwen2.5-7B-Instruct)"]
    assert _labels("bleu:tokenize=intl") == ["bleu(tokenize=intl)"]  # no model: its params


def test_evaluators_that_would_share_a_label_get_what_differs() -> None:
    assert _labels("judge:model=local,aspect=fluency", "judge:model=local,aspect=relevance") == [
        "judge(local, aspect=fluency)", "judge(local, aspect=relevance)"]
    assert _labels("judge:model=local", "judge:model=local,prompt=docs/templates/json-score.yaml"
                   ) == ["judge(local)", "judge(local, prompt=json-score.yaml)"]
    # two models whose paths end alike: the whole paths tell them apart
    assert _labels("judge:model=/a/SmolLM2", "judge:model=/b/SmolLM2") == [
        "judge(/a/SmolLM2)", "judge(/b/SmolLM2)"]
    # a name= is the user's: never changed; the unnamed twin takes what differs
    assert _labels("judge:model=local,name=judge(local)", "judge:model=local,aspect=fluency") == [
        "judge(local)", "judge(local, aspect=fluency)"]
    # the same again, the same labels
    assert _labels("judge:model=local,aspect=fluency", "judge:model=local,aspect=relevance") == [
        "judge(local, aspect=fluency)", "judge(local, aspect=relevance)"]


def test_the_same_spec_twice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"share the label judge\(local\): give each its own"):
        _labels(FLUENCY, FLUENCY)
    with pytest.raises(ValueError, match="share the label x"):
        _labels("bleu:name=x", "rouge:name=x")


def test_a_label_leaves_the_signature_and_cache_key_alone() -> None:
    first, second = (create_evaluator(s) for s in ("judge:model=local,aspect=fluency",
                                                   "judge:model=local,aspect=relevance"))
    before = [first.cache_namespace, second.cache_namespace]
    distinct_labels([first, second])
    assert first.label != "judge(local)"  # relabelled ...
    assert [first.cache_namespace, second.cache_namespace] == before  # ... same cache entries
    assert first.cache_namespace == create_evaluator("judge:model=local,aspect=fluency"
                                                     ).cache_namespace
    assert "judge(" not in str(first.signature())


@pytest.mark.parametrize("spec", [
    "bleu", "rouge:types=rougeL,use_stemmer=false", "judge:model=local,aspect=fluency coherence",
    'rouge:name="recall, stemmed",measure=recall',
    {"evaluator": "chrf", "word_order": 2, "name": "it's chrF++, order 2"}])
def test_an_evaluators_spec_builds_it_again_under_its_label(spec: str | dict[str, Any]) -> None:
    """A study that starts from a run's labels (the adversarial analysis) gets the same
    evaluator back: same signature (so the same cache entries), same label."""
    first = create_evaluator(spec)
    again = create_evaluator(first.spec)
    assert again.signature() == first.signature()
    assert again.label == first.label
