"""Whether a judge's prompt suits the shipped 135M model, which cannot write free text first.

SmolLM2-135M (`model=local`) answers a rating it is asked for directly, but asked to reason
before its score it rarely stops: it loops inside the free text until `max_tokens` and the
score never comes (docs/judges.md quotes a measured run: most scores missing after many
minutes). So a judge on the shipped model whose prompt asks for reasoning first is refused when
it is built, naming a score-only prompt instead, unless the spec says `allow_reasoning=true`
(a larger model given as a .gguf file is not refused).
"""

from __future__ import annotations

from pathlib import Path

from evalstress.evaluators.judge_output import OutputContract
from evalstress.llm.local import SHIPPED_FILE

#: built-in forms whose answer opens with free text (analysis, a note per evaluation step,
#: feedback) before the rating
FORMS_REASONING_FIRST = ("analyze-rate", "g-eval", "rubric")


def is_shipped_small_model(model: str) -> bool:
    """`local`, or a path to the shipped SmolLM2-135M GGUF file itself."""
    text = str(model).strip()
    return text == "local" or Path(text).name == SHIPPED_FILE


def reasoning_first(form: str, contract: OutputContract | None) -> str | None:
    """What in the judge's prompt asks for free text before the score (None: nothing does):
    a built-in form that analyses first, or an output contract `json:A|...|score` whose fields
    before the score are free text."""
    if contract is not None:
        if contract.kind == "json" and len(contract.fields) > 1:
            free = ", ".join(contract.fields[:-1])
            return f"its output json:{'|'.join(contract.fields)} asks for {free} before the score"
        return None
    if form in FORMS_REASONING_FIRST:
        return f"form={form} asks for an analysis before the rating"
    return None


def check_small_model_prompt(model: str, form: str, contract: OutputContract | None,
                             allow: bool) -> None:
    """Refuse (ValueError, one line) a judge on the shipped 135M model whose prompt asks for
    reasoning before the score, unless `allow`."""
    if allow or not is_shipped_small_model(model):
        return
    problem = reasoning_first(form, contract)
    if problem is None:
        return
    alternative = ("a template whose answer is the score alone (output=json:score, number or "
                   "labels:...; docs/templates/json-score.yaml)" if contract is not None
                   else "form=score-only, its default")
    raise ValueError(
        f"judge model={model} (SmolLM2-135M): {problem}, and this model loops in free text "
        f"until max_tokens instead of giving the score (measured: 12 of 18 scores missing, "
        f"967 s, on docs/templates/json-judge.yaml); use {alternative}, a larger model, or "
        "add allow_reasoning=true to go ahead")


__all__ = ["FORMS_REASONING_FIRST", "check_small_model_prompt", "is_shipped_small_model",
           "reasoning_first"]
