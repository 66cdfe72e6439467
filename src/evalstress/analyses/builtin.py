"""The built-in analyses as suites name them: each reads the run's score table (and, where it
needs them, its skips or examples) and returns a result that serializes to JSON.

Options per analysis (the keys each reads from the suite's `options:` and the command line):
- blindspot: rel_tol, abs_tol, protocol (default|paper), strict, max_missing; for the four-way
  verdicts: tolerance (a number or one per evaluator[/aspect]), tol_share, alpha, correction
  (holm|bh|none), n_boot, seed
- discernment: expert_weights, aspect_map, level_map, alpha, zero_method, hmp, by_task,
  include_unverified
- criteria-confusion: aspect_map, alpha, min_effect, n_boot, seed, human_key, include_unverified,
  matrices_over (all | common: the examples every unit scored, under a sequential design)

`include_unverified` keeps the LLM-written variants nothing verified (`analyses.trust`); by
default discernment and criteria confusion set them aside and say how many.
- correlation: human_key, n_boot, seed
- bias: tolerance, tol_share, alpha, correction (holm by default), n_boot, seed
  (`analyses.bias`: each bias probe's effect above its placebo)
- style: bins
- description-types: levels (`analyses.description_types`)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

import evalstress.analyses.description_types  # noqa: F401  (registers description-types)
from evalstress.analyses.bias import bias_analysis
from evalstress.analyses.blindspot import blindspot
from evalstress.analyses.confusion import criteria_confusion
from evalstress.analyses.correlation import run_correlation
from evalstress.analyses.discernment import discernment_analysis
from evalstress.analyses.registry import pick, register_analysis
from evalstress.analyses.style import response_style
from evalstress.analyses.trust import VariantTrust
from evalstress.engine.result import RunResult, skip_counts, skips_frame

BLINDSPOT_OPTIONS = ("rel_tol", "abs_tol", "protocol", "strict", "max_missing", "tolerance",
                     "tol_share", "alpha", "correction", "n_boot", "seed", "tolerance_over")
DISCERNMENT_OPTIONS = ("expert_weights", "aspect_map", "level_map", "alpha", "zero_method", "hmp",
                       "by_task")
BIAS_OPTIONS = ("tolerance", "tol_share", "alpha", "correction", "n_boot", "seed")
CONFUSION_OPTIONS = ("aspect_map", "alpha", "min_effect", "n_boot", "seed", "matrices_over")
#: the option that keeps unverified LLM-written variants in the verdicts
INCLUDE_UNVERIFIED = "include_unverified"


def variant_trust(run: RunResult, options: Mapping[str, Any]) -> VariantTrust:
    """Which of the run's LLM-written variants the verdicts may rest on."""
    return VariantTrust.of_generation(run.plan.generation,
                                      bool(options.get(INCLUDE_UNVERIFIED, False)))


def human_frame(run: RunResult, key: str) -> pd.DataFrame | None:
    """Human scores kept in each example's `meta[key]` (aspect -> number), by example id."""
    records = {e.id: dict(e.meta[key]) for e in run.plan.examples
               if isinstance((e.meta or {}).get(key), dict)}
    if not records:
        return None
    return pd.DataFrame.from_dict(records, orient="index").apply(pd.to_numeric, errors="coerce")


@register_analysis("blindspot", BLINDSPOT_OPTIONS)
def blindspot_of_run(run: RunResult, options: Mapping[str, Any]) -> Any:
    paper = options.get("protocol") == "paper"  # counts unchanged examples: needs each skip
    return blindspot(run.scores, skips=skips_frame(run) if paper else skip_counts(run),
                     **pick(options, *BLINDSPOT_OPTIONS))


@register_analysis("discernment", (*DISCERNMENT_OPTIONS, INCLUDE_UNVERIFIED))
def discernment_of_run(run: RunResult, options: Mapping[str, Any]) -> Any:
    return discernment_analysis(run.scores, trust=variant_trust(run, options),
                                **pick(options, *DISCERNMENT_OPTIONS))


@register_analysis("criteria-confusion", (*CONFUSION_OPTIONS, "human_key", INCLUDE_UNVERIFIED))
def confusion_of_run(run: RunResult, options: Mapping[str, Any]) -> Any:
    human = human_frame(run, str(options.get("human_key", "human")))
    return criteria_confusion(run.scores, human=human, trust=variant_trust(run, options),
                              **pick(options, *CONFUSION_OPTIONS))


@register_analysis("correlation", ("human_key", "n_boot", "seed"))
def correlation_of_run(run: RunResult, options: Mapping[str, Any]) -> Any:
    return run_correlation(run.scores, run.plan.examples,
                           **pick(options, "human_key", "n_boot", "seed"))


@register_analysis("style", ("bins",))
def style_of_run(run: RunResult, options: Mapping[str, Any]) -> Any:
    return response_style(run.scores, **pick(options, "bins"))


@register_analysis("bias", BIAS_OPTIONS)
def bias_of_run(run: RunResult, options: Mapping[str, Any]) -> Any:
    return bias_analysis(run.scores, **pick(options, *BIAS_OPTIONS))
