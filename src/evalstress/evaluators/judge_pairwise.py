"""Pairwise judging: which of two texts is better, asked in both orders to expose position bias.

`JudgeEvaluator.compare(a, b)` shows each pair twice, a first and b first. The built-in prompt
asks for a final `Verdict: 1|2|tie`. A user's pairwise template (`pair_prompt=FILE`, with
`{text_1}` and `{text_2}`; see `judge_prompt.py`) may ask in its own words, read through
`pair_output=` (an output contract, see `judge_output.py`) whose value says the verdict: 1 (the
first text is better), 2 (the second) or 0 (a tie), e.g. `pair_output=labels:A=1|B=2|C=0`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalstress.evaluators.base import ScoreRequest
from evalstress.evaluators.judge_output import OutputContract
from evalstress.evaluators.judge_prompt import TemplateError
from evalstress.llm.aio import gather_all
from evalstress.llm.client import LLMError

if TYPE_CHECKING:
    from evalstress.evaluators.judge import JudgeEvaluator

_VERDICT = re.compile(r"(?:verdict|winner|better)\s*[:=]?\s*\**\s*(text\s*)?(1|2|tie)\b",
                      re.IGNORECASE)
#: a pair contract's value -> the verdict it stands for
VERDICT_VALUES = {1.0: "1", 2.0: "2", 0.0: "tie"}


@dataclass
class PairwiseResult:
    """Verdicts for one pair judged in both orders: 'a', 'b', 'tie' or None (unparsable)."""

    ab: str | None  # a shown first
    ba: str | None  # b shown first
    reasons: tuple[str, ...] = ()

    @property
    def consistent(self) -> bool | None:
        if self.ab is None or self.ba is None:
            return None
        return self.ab == self.ba


def position_bias(results: Sequence[PairwiseResult]) -> dict[str, Any]:
    """How much the slot decides: the share of verdicts for the first-shown text, the share of
    pairs whose verdict flips with the order, and the order-consistent preference for a."""
    verdicts = [(r.ab, "a") for r in results] + [(r.ba, "b") for r in results]
    valid = [(v, first) for v, first in verdicts if v is not None]
    decisive = [(v, first) for v, first in valid if v != "tie"]
    both = [r for r in results if r.consistent is not None]
    return {
        "pairs": len(results),
        "verdicts": len(verdicts),
        "unparsable": len(verdicts) - len(valid),
        "first_position_win_rate": (sum(v == first for v, first in decisive) / len(decisive)
                                    if decisive else None),
        "tie_rate": (sum(v == "tie" for v, _ in valid) / len(valid)) if valid else None,
        "consistency": (sum(bool(r.consistent) for r in both) / len(both)) if both else None,
        "a_preferred_consistently": sum(r.ab == r.ba == "a" for r in results),
        "b_preferred_consistently": sum(r.ab == r.ba == "b" for r in results),
    }


def pair_contract(output: str | None, labels: str | None) -> OutputContract | None:
    """The contract of `pair_output=`; its values must be verdicts (1, 2 or 0 for a tie)."""
    if output is None:
        return None
    contract = OutputContract.parse(output, labels, None)
    if not contract.labels:  # a number: 0, 1 or 2
        contract = OutputContract.parse(output, labels, (0.0, 2.0))
    odd = sorted({v for v in contract.labels.values() if v not in VERDICT_VALUES})
    if odd:
        raise ValueError(f"pair_output={output}: a verdict is 1 (first text better), 2 (second) "
                         f"or 0 (tie); got {', '.join(str(v) for v in odd)}")
    return contract


def read_verdict(text: str, contract: OutputContract | None) -> tuple[str | None, str]:
    """('1' | '2' | 'tie', '') from an answer, or (None, why not)."""
    if contract is None:
        matches = list(_VERDICT.finditer(text))
        if not matches:
            return None, f"no verdict in the answer: {text.strip()[:80]!r}"
        return matches[-1][2].lower(), ""
    reading = contract.read(text)
    if reading.value is None:
        return None, reading.reason
    verdict = VERDICT_VALUES.get(reading.value)
    if verdict is None:
        return None, f"{reading.matched} is no verdict (1, 2 or 0 for a tie)"
    return verdict, ""


def pair_messages(judge: JudgeEvaluator, first: ScoreRequest, second: ScoreRequest,
                  aspect: str, system: str) -> list[dict[str, str]]:
    """The request that compares `first` (Text 1) with `second` (Text 2) on `aspect`; `system`
    is the judge's system message for the built-in wording."""
    if judge.pair_template is not None:
        values = judge.template_values(first, aspect)
        values.pop("text", None)
        return judge.pair_template.render({**values, "text_1": first.text,
                                           "text_2": second.text})
    criterion = judge.criterion_text(aspect)
    blocks = [*judge.context(first), f"Text 1:\n{first.text}", f"Text 2:\n{second.text}",
              f"Criterion:\n{criterion}" if criterion else "Criterion: (none given)",
              "Compare the two texts on this criterion only. Think briefly, then end with a "
              "final line 'Verdict: 1' if Text 1 is better, 'Verdict: 2' if Text 2 is better, "
              "or 'Verdict: tie' if neither is better."]
    return [{"role": "system", "content": system}, {"role": "user",
                                                    "content": "\n\n".join(blocks)}]


def pair_params(judge: JudgeEvaluator, sample: int = 0) -> dict[str, Any]:
    """The request settings of a pairwise verdict's sample `sample` (seed: the judge's + it)."""
    params: dict[str, Any] = {"temperature": judge.temperature,
                              "max_tokens": max(judge.max_tokens, 256),
                              "seed": judge.seed + sample}
    contract = judge.pair_contract
    if contract is not None:
        params.update(contract.request_params(judge.pair_constrain, params["max_tokens"]))
    return params


async def ask_verdict(judge: JudgeEvaluator, first: ScoreRequest, second: ScoreRequest,
                      aspect: str, sample: int = 0) -> tuple[str | None, str]:
    """One verdict ('1', '2' or 'tie') on `first` shown before `second`, or (None, why not);
    `sample` > 0 asks the same request again (its own response-cache entry and seed)."""
    try:
        messages = judge.pair_messages(first, second, aspect)
    except TemplateError as exc:
        return None, str(exc)
    try:
        answer = await judge.client.chat(messages, pair_params(judge, sample), sample)
    except LLMError as exc:
        return None, f"request failed: {exc}"
    return read_verdict(answer.text, judge.pair_contract)


async def compare_all(judge: JudgeEvaluator, a: Sequence[ScoreRequest],
                      b: Sequence[ScoreRequest], aspect: str) -> list[PairwiseResult]:
    """Every pair (a[i], b[i]) judged with a first and with b first."""

    async def verdict(first: ScoreRequest, second: ScoreRequest) -> tuple[str | None, str]:
        return await ask_verdict(judge, first, second, aspect)

    async def pair(x: ScoreRequest, y: ScoreRequest) -> PairwiseResult:
        (v1, r1), (v2, r2) = await gather_all(verdict(x, y), verdict(y, x))
        ab = {"1": "a", "2": "b"}.get(v1 or "", v1)
        ba = {"1": "b", "2": "a"}.get(v2 or "", v2)
        return PairwiseResult(ab, ba, tuple(r for r in (r1, r2) if r))

    try:
        return list(await gather_all(*(pair(x, y) for x, y in zip(a, b, strict=True))))
    finally:
        await judge.client.aclose()
