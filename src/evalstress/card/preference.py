"""The card's agreement with explicit human preferences (`--preferences FILE`: pairs of outputs
of one input with the output people preferred, `core.preferences`).

The study `studies.preference` scores both outputs of each pair with the card's evaluator
through the engine's Scorer and score cache, and shows an LLM judge each pair in both orders
through its pairwise prompt and response cache; `analyses.preference` turns the picks into
accuracies with intervals that draw items, Holm-corrected, and the raters' agreement where the
file gives votes.

The block goes into the agreement block of the human-correlation method (`preferences`), in
`<card>/runs/correlation/correlation.json`: beside the systems' correlation where the data
lists scored system outputs, on its own otherwise.
"""

from __future__ import annotations

from typing import Any

from evalstress.analyses.preference import N_BOOT
from evalstress.card.plan import CardPlan, MethodPlan
from evalstress.card.run import CardOptions, MethodOutcome, run_study
from evalstress.core.preferences import PreferenceData
from evalstress.core.wording import plural
from evalstress.engine.scoring import configure_caches, open_run_cache
from evalstress.evaluators.base import create_evaluator
from evalstress.studies.preference import preference_study

#: the file the method writes (the systems' correlation writes the same one)
PREFERENCE_FILE = "correlation.json"
SEED = 0


def preference_block(plan: CardPlan, data: PreferenceData, options: CardOptions
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The preference block of the card's evaluator on `data`, and what it cost."""
    evaluator = create_evaluator(plan.evaluator.spec)
    configure_caches([evaluator], options.cache_dir, options.no_cache)
    cache = open_run_cache(options.cache_dir, options.no_cache)
    try:
        result, cost, missing = preference_study([evaluator], data, cache=cache,
                                              progress=options.progress, n_boot=N_BOOT,
                                              seed=SEED)
    finally:
        evaluator.close()
        if cache is not None:
            cache.close()
    block = result.to_dict()
    block["data"] = data.describe()
    # why scores went missing, for the run-health check (`agreement.preference_missing`)
    block["health"] = [{"evaluator": m.evaluator, "missing": m.missing, "rows": m.rows,
                        "top_reason": m.top_reason} for m in missing]
    return block, cost.get(plan.evaluator.label, {})


def empty_agreement() -> dict[str, Any]:
    """An agreement block without rating rows: the data lists no scored outputs, only the
    preference pairs."""
    return {"analysis": "agreement", "method": {}, "items": 0, "systems": 0, "rows": [],
            "pairs": [], "human_human": [], "human_human_note": "", "notes": []}


def preference_summary(block: dict[str, Any]) -> str:
    agrees = sum(1 for r in block["rows"] if r["verdict"] == "agrees")
    return (f"{plural(block['pairs'], 'preference pair')} on {plural(block['items'], 'item')}: "
            f"{agrees} of {plural(len(block['rows']), 'test')} agree with people beyond "
            "chance")


def correlate_preferences(plan: CardPlan, options: CardOptions) -> dict[str, Any]:
    """The human-correlation method's results where the data lists no scored outputs: the
    preference block alone, in the agreement block the sections read."""
    assert plan.preferences is not None
    block, cost = preference_block(plan, plan.preferences, options)
    return {"analyses": {"correlation": {"rows": [], "notes": []},
                         "agreement": {**empty_agreement(), "preferences": block}},
            "summary": preference_summary(block), "cost": cost,
            "served": list(cost.get("served") or []),
            "counts": {"pairs": block["pairs"], "items": block["items"]}}


def run_preference_correlation(plan: CardPlan, method: MethodPlan, options: CardOptions
                               ) -> MethodOutcome:
    """The method in the card's folder: reused when its file records the same fingerprint
    (the preference file's hash is part of it), else scored and written."""
    assert plan.preferences is not None
    doing = (f"{plural(len(plan.preferences.pairs), 'preference pair')} of "
             f"{plan.preferences.path.name}, both outputs scored"
             + (" and asked in both orders" if plan.evaluator.name == "judge" else ""))
    return run_study(plan, method, options, PREFERENCE_FILE, doing,
                     lambda: correlate_preferences(plan, options),
                     (ValueError, ImportError, KeyError))
