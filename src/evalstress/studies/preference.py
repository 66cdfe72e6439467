"""Evaluators against explicit human preferences (`core.preferences`): score both outputs of
each pair through the engine's Scorer and score cache, ask an LLM judge each pair in both
orders through its pairwise prompt and response cache, and hand the picks to
`analyses.preference`. A study: it scores texts itself (`evalstress correlate --preferences`
and the card's human-correlation method)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalstress.analyses.preference import (
    N_BOOT,
    PreferenceResult,
    PreferenceTest,
    pick_from_scores,
    pick_from_verdicts,
    preference_agreement,
)
from evalstress.core.preferences import PreferenceData, PreferencePair
from evalstress.engine.runhealth import MissingShare, frame_missing_shares
from evalstress.evaluators.base import Evaluator, ScoreRequest
from evalstress.evaluators.judge import JudgeEvaluator
from evalstress.evaluators.judge_identity import served_by
from evalstress.evaluators.judge_pairwise import ask_verdict
from evalstress.llm.aio import gather_all, run_sync
from evalstress.studies.correlate import SystemDocument, score_system_outputs

#: a judge's verdict ('1': the first shown) as the pair's output, by the order shown
FIRST = {"1": "a", "2": "b"}
SECOND = {"1": "b", "2": "a"}


def pair_documents(pairs: Sequence[PreferencePair]) -> list[SystemDocument]:
    """Each pair as a document of two outputs, `a` and `b`, for the correlate study's scorer."""
    return [SystemDocument(p.id, p.source, p.references, p.task, {"a": p.a, "b": p.b}, {})
            for p in pairs]


def score_tests(evaluators: Sequence[Evaluator], data: PreferenceData, *, cache: Any = None,
                progress: Any = None
                ) -> tuple[list[PreferenceTest], dict[str, Any], list[MissingShare]]:
    """The scores reading: both outputs scored, the higher score the pick (the lower where
    lower is better), per evaluator aspect and human aspect; the scorers' counts; and each
    evaluator's share of missing scores (the run-health check)."""
    scores, _, stats = score_system_outputs(pair_documents(data.pairs), evaluators,
                                            cache=cache, progress=progress)
    value: dict[tuple[str, str, str, str], float] = {
        (str(e), str(d), str(s), str(a)): float(v) for e, d, s, a, v in zip(
            scores["evaluator"], scores["doc_id"], scores["system_id"], scores["aspect"],
            scores["score"], strict=True)}
    items = [p.item for p in data.pairs]
    tests = []
    for evaluator in evaluators:
        for aspect in evaluator.aspects:
            better = evaluator.higher_is_better(aspect)
            picks = [pick_from_scores(value.get((evaluator.label, p.id, "a", aspect)),
                                      value.get((evaluator.label, p.id, "b", aspect)), better)
                     for p in data.pairs]
            tests += [PreferenceTest(evaluator.label, aspect, human, "scores", picks,
                                     [p.preference[human] for p in data.pairs], items)
                      for human in data.aspects]
    return tests, stats, frame_missing_shares(scores)


def ask_in_both_orders(judge: JudgeEvaluator, pairs: Sequence[PreferencePair],
                       aspects: Sequence[str]) -> dict[str, list[str | None]]:
    """The pairwise reading: per aspect, each pair's pick from its verdicts with a shown
    first and with b shown first (a flip where they differ, None where either is missing)."""

    def request(pair: PreferencePair, text: str) -> ScoreRequest:
        return ScoreRequest(text, pair.source, pair.references, pair.task)

    async def one(pair: PreferencePair, aspect: str) -> str | None:
        x, y = request(pair, pair.a), request(pair, pair.b)
        (v1, _), (v2, _) = await gather_all(ask_verdict(judge, x, y, aspect),
                                            ask_verdict(judge, y, x, aspect))
        return pick_from_verdicts(FIRST.get(v1 or "", v1), SECOND.get(v2 or "", v2))

    async def every() -> dict[str, list[str | None]]:
        try:
            return {aspect: list(await gather_all(*(one(p, aspect) for p in pairs)))
                    for aspect in aspects}
        finally:
            await judge.client.aclose()

    return run_sync(every)


def pairwise_tests(judge: JudgeEvaluator, data: PreferenceData) -> list[PreferenceTest]:
    """The pairwise reading of a judge, per its aspects and the human aspects."""
    items = [p.item for p in data.pairs]
    picks = ask_in_both_orders(judge, data.pairs, judge.aspects)
    return [PreferenceTest(judge.label, aspect, human, "pairwise", found,
                           [p.preference[human] for p in data.pairs], items)
            for aspect, found in picks.items() for human in data.aspects]


def usage_of(judge: JudgeEvaluator) -> dict[str, Any]:
    usage = judge.usage
    return {"calls": usage.calls, "requests": usage.requests, "cached": usage.cache_hits,
            "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}


def preference_study(evaluators: Sequence[Evaluator], data: PreferenceData, *,
                     cache: Any = None, progress: Any = None, n_boot: int = N_BOOT,
                     seed: int = 0
                     ) -> tuple[PreferenceResult, dict[str, Any], list[MissingShare]]:
    """Every evaluator against the pairs of `data` (both readings for a judge): the
    preference block, and per evaluator its signature and scorer counts (`stats`), with a
    judge's pairwise calls and tokens (`pairwise`); and each evaluator's share of missing
    scores (the run-health check)."""
    tests, stats, missing = score_tests(evaluators, data, cache=cache, progress=progress)
    cost: dict[str, Any] = {label: dict(s) for label, s in stats.items()}
    for evaluator in evaluators:
        if isinstance(evaluator, JudgeEvaluator):
            tests += pairwise_tests(evaluator, data)
            cost.setdefault(evaluator.label, {})["pairwise"] = usage_of(evaluator)
        cost.setdefault(evaluator.label, {})["served"] = served_by(evaluator)
    votes = {h: [p.votes.get(h, ()) for p in data.pairs] for h in data.aspects
             if any(h in p.votes for p in data.pairs)}
    result = preference_agreement(tests, votes, [p.item for p in data.pairs], n_boot=n_boot,
                                  seed=seed)
    return result, cost, missing
