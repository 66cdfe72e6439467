"""Analysis names a suite's `analyses:` list may use, and the dispatcher over them.

Each analysis is `fn(run_result, options) -> result with to_dict()`; the built-in ones read
`run_result.scores` (the Parquet score table, column-pruned, one group at a time). Options are one flat
mapping (the suite's `options:` plus command-line values); every analysis reads the keys it
knows and ignores the rest:

- blindspot: rel_tol, abs_tol, protocol (default|paper), strict, max_missing
- discernment: expert_weights, aspect_map, level_map, alpha, zero_method, hmp, by_task
- criteria-confusion: aspect_map, alpha, min_effect, n_boot, seed, human_key
- correlation: human_key, n_boot, seed
- style: bins
- adversarial: attack (a mapping: gold, generator, methods, victims, budget, ...; see
  `analyses.adversarial.adversarial_analysis`), out_dir, cache_dir, no_cache
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from evalstress.registry import Registry
from evalstress.runner import RunResult

AnalysisFn = Callable[[RunResult, Mapping[str, Any]], Any]
#: analyses by name: the built-in ones below and in description_types, plugins through the
#: `evalstress.analyses` entry point group
ANALYSES: Registry[AnalysisFn] = Registry(
    "analysis", builtin="evalstress.analyses.description_types", group="evalstress.analyses")

#: the option keys each analysis reads (the list above); a suite's `options:` key that none
#: reads is an error with a did-you-mean (evalstress.suites)
_OPTIONS: dict[str, tuple[str, ...]] = {
    "blindspot": ("rel_tol", "abs_tol", "protocol", "strict", "max_missing"),
    "discernment": ("expert_weights", "aspect_map", "level_map", "alpha", "zero_method", "hmp",
                    "by_task"),
    "criteria-confusion": ("aspect_map", "alpha", "min_effect", "n_boot", "seed", "human_key"),
    "correlation": ("human_key", "n_boot", "seed"),
    "style": ("bins",),
    "adversarial": ("attack", "out_dir", "cache_dir", "no_cache"),
    "description-types": ("levels",),
}


def analysis_options() -> dict[str, tuple[str, ...]]:
    """Option keys per analysis name."""
    return dict(_OPTIONS)


def register_analysis(name: str) -> Callable[[AnalysisFn], AnalysisFn]:
    """Decorator that makes an analysis available to suites under `name`."""
    return ANALYSES.register(name)


def analysis_names() -> list[str]:
    return ANALYSES.names()


def run_analyses(names: Sequence[str], run: RunResult,
                 options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the named analyses on a run's score table, in the order given."""
    from evalstress.strict import check_names

    names = [names] if isinstance(names, str) else names  # one name is a one-item list
    check_names("analysis", names, analysis_names())
    opts = dict(options or {})
    entries = ANALYSES.all()
    return {name: entries[name](run, opts) for name in names}


def _pick(options: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: options[k] for k in keys if k in options and options[k] is not None}


def _human_frame(run: RunResult, key: str) -> pd.DataFrame | None:
    records = {e.id: dict(e.meta[key]) for e in run.plan.examples
               if isinstance((e.meta or {}).get(key), dict)}
    if not records:
        return None
    return pd.DataFrame.from_dict(records, orient="index").apply(pd.to_numeric, errors="coerce")


@register_analysis("blindspot")
def _blindspot(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.blindspot import blindspot
    from evalstress.report import skip_counts, skips_frame

    paper = options.get("protocol") == "paper"  # counts unchanged examples: needs each skip
    return blindspot(run.scores, skips=skips_frame(run) if paper else skip_counts(run),
                     **_pick(options, "rel_tol", "abs_tol", "protocol", "strict",
                           "max_missing"))


@register_analysis("discernment")
def _discernment(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.discernment import discernment_analysis

    return discernment_analysis(run.scores, **_pick(
        options, "expert_weights", "aspect_map", "level_map", "alpha", "zero_method", "hmp",
        "by_task"))


@register_analysis("criteria-confusion")
def _confusion(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.confusion import criteria_confusion

    human = _human_frame(run, str(options.get("human_key", "human")))
    return criteria_confusion(run.scores, human=human, **_pick(
        options, "aspect_map", "alpha", "min_effect", "n_boot", "seed"))


@register_analysis("correlation")
def _correlation(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.correlation import run_correlation

    return run_correlation(run.scores, run.plan.examples,
                           **_pick(options, "human_key", "n_boot", "seed"))


@register_analysis("style")
def _style(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.style import response_style

    return response_style(run.scores, **_pick(options, "bins"))


@register_analysis("adversarial")
def _adversarial(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.adversarial import adversarial_analysis

    return adversarial_analysis(run, options)
