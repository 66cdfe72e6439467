"""G-Eval judging with evaluation steps the judge writes itself (Auto-CoT), as paper 003 does.

G-Eval, and paper 003 after it, do not hand the judge a fixed procedure: the judge model is first
asked, once per task and criterion, to write the evaluation steps for that criterion (automatic
chain of thought). Every judgment of that criterion then shows those steps between the
criterion and the texts and asks for the score alone. Here:

- `judge:...,form=g-eval,steps=auto` turns it on (`steps=generic`, the default, keeps the
  judge's fixed four steps and its note-per-step answer);
- the steps are asked for through the judge's own client, so they land in its response cache:
  one request per (task, aspect, criterion text, scale), and a second run makes no call for
  them (nor for the judgments, which are cached as usual);
- an answer without usable numbered steps is re-asked with a new sample index up to the judge's
  `max_reasks`; when none comes, every judgment of that criterion is missing with the reason
  (never silently judged with other steps);
- the judgment prompt follows paper 003's layout in our own words: what is rated, the criterion
  with its scale, the steps, the source, the text, and "the rating only" (`Rating: N`, which the
  judge's parser and logprob weighting read as for any form).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalstress.evaluators.base import Score, ScoreRequest
from evalstress.evaluators.judge_settings import STEP_MODES
from evalstress.llm.accounting import message_tokens
from evalstress.llm.aio import gather_all
from evalstress.llm.client import ChatResponse, LLMError
from evalstress.llm.extract import extract_answer

if TYPE_CHECKING:
    from evalstress.evaluators.judge import JudgeEvaluator

STEPS_VERSION = "1"  # bump when the step-writing prompt changes: it enters the signature
MIN_STEPS = 2
_STEP_PARAMS = {"temperature": 0.0, "max_tokens": 600}
_TYPICAL_STEPS = 8 * 30  # tokens of a typical answer, for --dry-run estimates
_NUMBERED = re.compile(r"^\s*(?:step\s*)?(\d{1,2})\s*[.):-]\s*(\S.*)$", re.IGNORECASE)

WRITER_SYSTEM = ("You design evaluation procedures for raters of text quality. You write clear, "
                 "concrete steps and follow the requested format exactly.")

TEXT_NOUN = {"summarization": "summary", "dialogue": "summary of a conversation",
             "story": "story continuation", "qa": "answer", "translation": "translation",
             "data-to-text": "description of structured data", "open-ended": "text",
             "dialogue-response": "reply in a conversation",
             "question-generation": "question about a passage"}


def attach(judge: JudgeEvaluator, steps: str) -> AutoSteps | None:
    """The judge's Auto-CoT helper for `steps=auto`, None for `generic`; checks the setting."""
    if steps not in STEP_MODES:
        raise ValueError(f"judge steps='{steps}' is unknown; choose from {', '.join(STEP_MODES)}")
    if steps == "generic":
        return None
    if judge.form != "g-eval":
        raise ValueError(f"judge steps=auto writes G-Eval evaluation steps and needs "
                         f"form=g-eval (got form={judge.form})")
    return AutoSteps(judge)


def signature(steps: str) -> dict[str, Any]:
    """Signature entries for the score cache: none for the default, so old caches stay valid."""
    return {"steps": steps, "steps_version": STEPS_VERSION} if steps == "auto" else {}


def parse_steps(answer: str) -> tuple[list[str] | None, str]:
    """The numbered steps in an answer (inside <steps> when present), or why there are none."""
    found = extract_answer(answer, tag="steps")
    if not found.ok:
        return None, found.reason
    steps = [m[2].strip() for line in (found.text or "").splitlines()
             if (m := _NUMBERED.match(line))]
    if len(steps) < MIN_STEPS:
        shown = (found.text or "").strip().replace("\n", " ")[:80]
        return None, f"fewer than {MIN_STEPS} numbered steps in the answer: {shown!r}"
    return steps, ""


@dataclass
class StepsOutcome:
    """The steps for one (task, aspect), or the reason none came; with the answers' cache keys."""

    steps: list[str] | None
    reason: str = ""
    keys: tuple[str, ...] = ()
    asks: int = 0


class AutoSteps:
    """Writes, caches and shows the evaluation steps of one judge (see the module docstring)."""

    def __init__(self, judge: JudgeEvaluator):
        self.judge = judge
        self.book: dict[tuple[str, str], StepsOutcome] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    # --- the step-writing request -----------------------------------------------------------

    def writer_messages(self, task: str, aspect: str) -> list[dict[str, str]]:
        """The request that asks the judge model for the steps of `aspect` on `task`."""
        from evalstress.evaluators.judge import TASKS

        low, high = self.judge.scale
        crit = self.judge.criteria[self.judge.criterion_name(aspect)]
        criterion = crit.text(self.judge.criteria_level, self.judge.scale)
        noun = TEXT_NOUN.get(task, "text")
        lines = [
            f"A rater will score a {noun} on one criterion, from {low} (worst) to {high} (best). "
            "Write the evaluation steps the rater should follow.",
            f"Task: {TASKS.get(task, TASKS['open-ended'])}",
            f"Criterion: {criterion}" if criterion else
            "Criterion: none is given; the rater judges the overall quality of the text.",
            "Write 4 to 8 steps, numbered '1.', '2.', ... one per line. Each step says what to "
            "read, look for or weigh for this criterion only; the last step turns what was found "
            f"into a whole-number rating from {low} to {high}.",
            "Put the steps between <steps> and </steps>, and nothing else inside.",
        ]
        return [{"role": "system", "content": WRITER_SYSTEM},
                {"role": "user", "content": "\n\n".join(lines)}]

    def _params(self, sample: int) -> dict[str, Any]:
        return {**_STEP_PARAMS, "seed": self.judge.seed + sample}

    def _key(self, task: str, aspect: str, sample: int) -> str:
        return self.judge.client.key(self.writer_messages(task, aspect), self._params(sample),
                                     sample)

    # --- generation -------------------------------------------------------------------------

    async def prepare(self, requests: Iterable[ScoreRequest]) -> None:
        """Write the steps of every (task, aspect) these requests need, once each."""
        pairs = dict.fromkeys((r.task, a) for r in requests for a in self.judge.aspects)
        await gather_all(*(self.ensure(task, aspect) for task, aspect in pairs))

    async def ensure(self, task: str, aspect: str) -> Score | None:
        """None when the steps are ready; else a missing Score saying why there are none."""
        pair = (task, aspect)
        lock = self._locks.setdefault(pair, asyncio.Lock())
        async with lock:
            if pair not in self.book:
                self.book[pair] = await self._write(task, aspect)
        outcome = self.book[pair]
        if outcome.steps is not None:
            return None
        return Score.missing(f"no evaluation steps for '{aspect}' on {task}: {outcome.reason}",
                             steps_asks=outcome.asks, steps_keys=list(outcome.keys))

    async def _write(self, task: str, aspect: str) -> StepsOutcome:
        messages = self.writer_messages(task, aspect)
        keys: list[str] = []
        reason = ""
        for sample in range(1 + self.judge.max_reasks):
            try:
                answer = await self.judge.client.chat(messages, self._params(sample), sample)
            except LLMError as exc:
                return StepsOutcome(None, f"request failed: {exc}", tuple(keys), sample + 1)
            keys.append(answer.key)
            steps, reason = parse_steps(answer.text)
            if steps is not None:
                return StepsOutcome(steps, "", tuple(keys), sample + 1)
        return StepsOutcome(None, reason, tuple(keys), 1 + self.judge.max_reasks)

    def lookup(self, task: str, aspect: str) -> StepsOutcome | None:
        """Steps already known or in the response cache, without any call (for estimates)."""
        pair = (task, aspect)
        if pair in self.book:
            return self.book[pair]
        keys = [self._key(task, aspect, s) for s in range(1 + self.judge.max_reasks)]
        hits: Mapping[str, ChatResponse] = self.judge.client.cached(keys)
        reason = ""
        for sample, key in enumerate(keys):
            if key not in hits:
                return None  # this ask was never answered: a run would send it
            steps, reason = parse_steps(hits[key].text)
            if steps is not None:
                return StepsOutcome(steps, "", tuple(keys[:sample + 1]), sample + 1)
        return StepsOutcome(None, reason, tuple(keys), len(keys))

    # --- the judgment prompt ----------------------------------------------------------------

    def steps_text(self, task: str, aspect: str) -> str:
        outcome = self.book.get((task, aspect)) or self.lookup(task, aspect)
        if outcome is None or outcome.steps is None:
            # only for keys and estimates: `ensure` stops a judgment without steps from being sent
            return "(evaluation steps not written yet)"
        return "\n".join(f"{i}. {step}" for i, step in enumerate(outcome.steps, 1))

    def messages(self, request: ScoreRequest, aspect: str) -> list[dict[str, str]]:
        """Paper 003's G-Eval layout: criterion with scale, the written steps, texts, score only."""
        from evalstress.evaluators.judge import SYSTEM

        judge = self.judge
        low, high = judge.scale
        crit = judge.criteria[judge.criterion_name(aspect)]
        definition = crit.text(judge.criteria_level, judge.scale)
        noun = TEXT_NOUN.get(request.task, "text")
        blocks = [f"You will rate one {noun} on a single criterion. Read these instructions "
                  "carefully and keep them in view while you judge.",
                  f"Evaluation criterion ({low}-{high}):\n{definition}" if definition else
                  f"Evaluation criterion ({low}-{high}): none given; judge the text as you see "
                  "fit.",
                  "Evaluation steps:\n" + self.steps_text(request.task, aspect),
                  *judge.context(request),
                  f"{noun[:1].upper() + noun[1:]} to rate:\n{request.text}",
                  f"Give the rating only, as 'Rating: N' with N a whole number from {low} to "
                  f"{high}; no explanation."]
        return [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": "\n\n".join(blocks)}]

    # --- planning ---------------------------------------------------------------------------

    def estimate(self, requests: Sequence[ScoreRequest]) -> dict[str, int]:
        """Step-writing calls a run would still send (one per uncached pair), and their tokens."""
        pairs = dict.fromkeys((r.task, a) for r in requests for a in self.judge.aspects)
        todo = [p for p in pairs if self.lookup(*p) is None]
        prompt = sum(message_tokens(self.writer_messages(*p)) for p in todo)
        return {"calls": len(todo), "prompt_tokens": prompt,
                "completion_tokens": len(todo) * _TYPICAL_STEPS}
