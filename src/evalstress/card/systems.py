"""The card's human correlation on data that lists other systems' outputs with human scores
(SummEval: 16 systems' summaries of each article, each rated by experts on four aspects).

The gold text of an example has no human score there; the systems' outputs have. So this
method scores every output through the correlate study (`studies.correlate`: the engine's
Scorer and caches) and hands the frames to the one correlation analysis
(`analyses.correlation.human_correlation`) at summary level (per document across its systems,
averaged) and system level (each system's mean over documents), Kendall tau-b and Spearman,
with percentile intervals that resample documents, the unit the data draws.

Its results go to `<card>/runs/correlation/correlation.json`, recorded in the card's marker
like the card's other files; a card made again with the same settings reuses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from evalstress.analyses.agreement import agreement, human_ratings, rating_mean, rating_rows
from evalstress.analyses.correlation import human_correlation
from evalstress.analyses.stats import CorrelationMethod
from evalstress.card.plan import SYSTEM_FIELDS, SYSTEMS_FILE, SYSTEMS_KEY, CardPlan, MethodPlan
from evalstress.card.run import CardOptions, MethodOutcome, run_study
from evalstress.core.data import Example
from evalstress.core.wording import plural
from evalstress.engine.scoring import open_run_cache
from evalstress.evaluators.base import create_evaluator
from evalstress.evaluators.judge_identity import served_by
from evalstress.studies.correlate import SystemDocument, score_system_outputs

#: the correlations the card reports, and at which levels (summary, system)
METHODS: tuple[CorrelationMethod, ...] = ("kendall", "spearman")
LEVELS = ("segment-doc", "system")
#: bootstrap resamples of documents and the seed (the blind-spot verdicts' own)
N_BOOT = 2000
SEED = 0


def system_documents(examples: Sequence[Example], fields: Sequence[str],
                     key: str = SYSTEMS_KEY) -> list[SystemDocument]:
    """One document per example: its source and references (as the card's field map reads
    them), and each listed output's text and human scores (`fields`)."""
    docs = []
    for example in examples:
        outputs = (example.meta or {}).get(key) or []
        texts = {str(o["system"]): str(o[SYSTEM_FIELDS[1]]) for o in outputs}
        human = {str(o["system"]): {f: rating_mean(human_ratings(o.get(f))) for f in fields}
                 for o in outputs}
        docs.append(SystemDocument(example.id, example.source or "", tuple(example.references),
                                   example.task, texts, human))
    return docs


def system_ratings(examples: Sequence[Example], fields: Sequence[str],
                   key: str = SYSTEMS_KEY) -> pd.DataFrame | None:
    """The raters' own scores where the outputs give a list per aspect (one per rater), as
    `analyses.agreement` reads them; None where every output gives one score per aspect."""
    rows = [row for example in examples for o in (example.meta or {}).get(key) or []
            for row in rating_rows(example.id, str(o["system"]),
                                   {f: human_ratings(o.get(f)) for f in fields})]
    if not rows:
        return None
    frame = pd.DataFrame.from_records(rows)
    return frame if frame["rater"].nunique() > 1 else None


def systems_summary(docs: Sequence[SystemDocument], rows: int) -> str:
    systems = len({sid for doc in docs for sid in doc.outputs})
    return (f"{rows} correlations of {plural(systems, 'system')}' outputs on "
            f"{plural(len(docs), 'document')} with their human scores")


def correlate_systems(plan: CardPlan, fields: Sequence[str], options: CardOptions
                      ) -> dict[str, Any]:
    """Score every listed output with the card's evaluator and correlate: the results the
    correlation section reads (`analyses.correlation`), with the counts and the signature."""
    docs = system_documents(plan.examples, fields)
    evaluator = create_evaluator(plan.evaluator.spec)
    cache = open_run_cache(options.cache_dir, options.no_cache)
    try:
        scores, human, stats = score_system_outputs(docs, [evaluator], cache=cache,
                                                    progress=options.progress)
        served = served_by(evaluator)
    finally:
        evaluator.close()
        if cache is not None:
            cache.close()
    result = human_correlation(scores[["doc_id", "system_id", "evaluator", "aspect", "score"]],
                               human, methods=METHODS, levels=LEVELS, n_boot=N_BOOT,
                               seed=SEED)
    analysis = result.to_dict()
    block = agreement(scores[["doc_id", "system_id", "evaluator", "aspect", "score"]], human,
                      system_ratings(plan.examples, fields), n_boot=N_BOOT, seed=SEED)
    agreed = block.to_dict()
    if plan.preferences is not None:  # the preference pairs beside the systems' outputs
        from evalstress.card.preference import preference_block

        agreed["preferences"], cost = preference_block(plan, plan.preferences, options)
        served = sorted({*served, *(cost.get("served") or [])})
    missing = int(scores["score"].isna().sum())
    analysis["notes"] = [*analysis.get("notes", []),
                         f"{len(scores)} scores of {len(human)} outputs"
                         + (f", {missing} missing" if missing else "")]
    return {"analyses": {"correlation": analysis, "agreement": agreed},
            "summary": systems_summary(docs, len(analysis["rows"])),
            "evaluators": {plan.evaluator.label: stats.get(plan.evaluator.label, {})},
            "served": served,
            "counts": {"documents": len(docs), "outputs": len(human), "missing": missing}}


def run_systems_correlation(plan: CardPlan, method: MethodPlan, fields: Sequence[str],
                            options: CardOptions) -> MethodOutcome:
    """The method in the card's folder (claimed and locked by the card): reused when its file
    records the same fingerprint, else scored and written."""
    doing = (f"every listed system output of {plural(len(plan.examples), 'example')}, "
             f"against {', '.join(fields)}")
    return run_study(plan, method, options, SYSTEMS_FILE, doing,
                     lambda: correlate_systems(plan, fields, options),
                     (ValueError, ImportError, KeyError))
