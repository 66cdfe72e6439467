"""The card's position test of a judge asked to compare two texts (`analyses.position`).

The pairs: each example's original text against a lightly damaged copy of it (token-drop at
ratio 0.1, seed 0: a real but small difference, so a fair judge has a preference to keep and a
judge swayed by the slot flips it). Each pair is asked three times through the judge's pairwise
prompt and its response cache: original first, copy first, and original first again as a new
sample (the placebo: how often the verdict changes when nothing does). An example whose text
admits no token drop is left out and counted.

Its results go to `<card>/runs/position/position.json`, recorded in the card's marker; a card
made again with the same settings reuses them, and a new card of the same judge asks nothing
the response cache holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalstress.analyses.position import PairVerdicts, position_test
from evalstress.card.plan import CardPlan, MethodPlan
from evalstress.card.run import CardOptions, MethodOutcome, run_study
from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.core.wording import plural
from evalstress.engine.scoring import configure_caches, request_for
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.evaluators.judge import JudgeEvaluator
from evalstress.evaluators.judge_identity import served_by
from evalstress.evaluators.judge_pairwise import ask_verdict
from evalstress.llm.aio import gather_all, run_sync
from evalstress.perturb.base import PerturbContext, Variant, get_perturbation

#: the file of the method's results in its folder
POSITION_FILE = "position.json"
#: the light damage that makes each pair's second text
DAMAGE, SEVERITY, SEED = "token-drop", 0.1, 0
#: the re-ask's sample index (a sample of its own: its own cache entry and seed)
REASK = 1


def position_pairs(examples: Sequence[Example]) -> tuple[list[tuple[ScoreRequest,
                                                                     ScoreRequest]], int]:
    """(original, lightly damaged copy) per example, and how many examples admit no damage."""
    parser = TextParser()
    damage = get_perturbation(DAMAGE)
    pairs, skipped = [], 0
    for example in examples:
        made = damage.apply(PerturbContext(example, parser), SEVERITY, SEED)
        if isinstance(made, Variant):
            pairs.append((request_for(example, example.hypothesis), request_for(example,
                                                                                 made.text)))
        else:
            skipped += 1
    return pairs, skipped


def ask_pairs(judge: JudgeEvaluator, pairs: Sequence[tuple[ScoreRequest, ScoreRequest]],
              aspect: str) -> list[PairVerdicts]:
    """Each pair asked original first, copy first and original first again."""
    winner = {"1": "a", "2": "b"}
    loser = {"1": "b", "2": "a"}

    async def one(x: ScoreRequest, y: ScoreRequest) -> PairVerdicts:
        (v1, _), (v2, _), (v3, _) = await gather_all(
            ask_verdict(judge, x, y, aspect), ask_verdict(judge, y, x, aspect),
            ask_verdict(judge, x, y, aspect, REASK))
        return PairVerdicts(winner.get(v1 or "", v1), loser.get(v2 or "", v2),
                            winner.get(v3 or "", v3))

    async def every() -> list[PairVerdicts]:
        try:
            return list(await gather_all(*(one(x, y) for x, y in pairs)))
        finally:
            await judge.client.aclose()

    return run_sync(every)


def judge_positions(plan: CardPlan, options: CardOptions) -> dict[str, Any]:
    """The position test of the card's judge on its examples: the results its section reads."""
    pairs, skipped = position_pairs(plan.examples)
    made = create_evaluator(plan.evaluator.spec)
    if not isinstance(made, JudgeEvaluator):
        made.close()
        raise ValueError(f"{plan.evaluator.label} is no judge: it cannot compare two texts")
    configure_caches([made], options.cache_dir, options.no_cache)
    try:
        verdicts = ask_pairs(made, pairs, plan.evaluator.aspects[0])
        usage = made.usage
        served = served_by(made)
    finally:
        made.close()
    result = position_test(verdicts).to_dict()
    result["pairs_rule"] = (f"each example's original against a copy with {DAMAGE} at "
                            f"{SEVERITY} (seed {SEED}); asked original first, copy first, and "
                            "original first again (the re-ask placebo)")
    result["notes"] = [f"{plural(skipped, 'example')} admit no {DAMAGE}: left out"] \
        if skipped else []
    return {"analyses": {"position": result},
            "summary": f"{result['verdict']} (swap flip rate "
                       f"{_share(result['swap_flip_rate'])}, re-ask "
                       f"{_share(result['reask_flip_rate'])}, {result['pairs']} pairs)",
            "usage": {"calls": usage.calls, "requests": usage.requests,
                      "cached": usage.cache_hits, "prompt_tokens": usage.prompt_tokens,
                      "completion_tokens": usage.completion_tokens},
            "counts": {"pairs": len(pairs), "skipped": skipped}, "served": served}


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def run_position(plan: CardPlan, method: MethodPlan, options: CardOptions) -> MethodOutcome:
    """The method in the card's folder (claimed and locked by the card): reused when its file
    records the same fingerprint, else asked and written."""
    doing = f"{plural(len(plan.examples), 'pair')}, each asked three times"
    return run_study(plan, method, options, POSITION_FILE, doing,
                     lambda: judge_positions(plan, options))
