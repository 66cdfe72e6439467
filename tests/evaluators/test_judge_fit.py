"""A judge on the shipped 135M model whose prompt asks for reasoning before the score is refused
when the spec loads, with one line naming the score-only alternative; `allow_reasoning=true`
goes ahead, and a score-only prompt or another model is never refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstress.evaluators.base import create_evaluator, parse_spec

ROOT = Path(__file__).resolve().parents[2]
REASONING = ROOT / "docs" / "templates" / "json-judge.yaml"
SCORE_ONLY = ROOT / "docs" / "templates" / "json-score.yaml"


def judge(spec: str):  # type: ignore[no-untyped-def]
    name, params = parse_spec(spec)
    return create_evaluator({"name": name, **params, "cache": "false"})


@pytest.mark.parametrize(("spec", "named"), [
    (f"judge:model=local,prompt={REASONING},aspect=fluency", "json:reasoning|score"),
    ("judge:model=local,form=analyze-rate", "form=analyze-rate"),
    ("judge:model=local,form=rubric", "form=rubric"),
    ("judge:model=local,form=g-eval", "form=g-eval"),
    ("judge:model=local,preset=paper-003", "form=g-eval"),
    ("judge:model=local,preset=paper-000", "form=analyze-rate"),
])
def test_reasoning_first_on_the_shipped_model_is_refused(spec: str, named: str) -> None:
    with pytest.raises(ValueError, match="SmolLM2-135M") as caught:
        judge(spec)
    message = str(caught.value)
    assert named in message and "allow_reasoning=true" in message
    assert "\n" not in message
    assert ("json-score.yaml" in message) == ("prompt=" in spec)
    assert ("form=score-only" in message) == ("prompt=" not in spec)


@pytest.mark.parametrize("spec", [
    f"judge:model=local,prompt={REASONING},aspect=fluency,allow_reasoning=true",
    f"judge:model=local,prompt={SCORE_ONLY},aspect=fluency",
    "judge:model=local",
    "judge:model=local,form=rate-explain",
    "judge:model=gpt-4o-mini,base_url=http://127.0.0.1:1/v1,form=analyze-rate",
    f"judge:model=big,base_url=http://127.0.0.1:1/v1,prompt={REASONING},aspect=fluency",
])
def test_score_first_prompts_other_models_and_the_flag_go_ahead(spec: str) -> None:
    evaluator = judge(spec)
    assert evaluator.name == "judge"
    evaluator.close()


def test_the_flag_never_changes_the_cache_identity() -> None:
    plain = judge("judge:model=m,base_url=https://api.example/v1,form=analyze-rate")
    flagged = judge("judge:model=m,base_url=https://api.example/v1,form=analyze-rate,"
                    "allow_reasoning=true")
    assert plain.signature() == flagged.signature()
