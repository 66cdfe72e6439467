"""Analysis names a suite's `analyses:` list may use, and the dispatcher over them.

Each analysis is `fn(run_result, options) -> result with to_dict()`. Options are one flat
mapping (the suite's `options:` plus command-line values); every analysis reads the keys it
knows and ignores the rest:

- blindspot: rel_tol, abs_tol, protocol (default|paper), strict
- discernment: expert_weights, aspect_map, level_map, alpha, zero_method, hmp, by_task
- criteria-confusion: aspect_map, alpha, min_effect, n_boot, seed, human_key
- correlation: human_key, n_boot, seed
- style: bins
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from evalstress.runner import RunResult

AnalysisFn = Callable[[RunResult, Mapping[str, Any]], Any]
_ANALYSES: dict[str, AnalysisFn] = {}


def register_analysis(name: str) -> Callable[[AnalysisFn], AnalysisFn]:
    """Decorator that makes an analysis available to suites under `name`."""

    def register(fn: AnalysisFn) -> AnalysisFn:
        _ANALYSES[name] = fn
        return fn

    return register


def analysis_names() -> list[str]:
    return sorted(_ANALYSES)


def run_analyses(names: Sequence[str], run: RunResult,
                 options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the named analyses on a run's score table, in the order given."""
    unknown = [n for n in names if n not in _ANALYSES]
    if unknown:
        raise ValueError(f"unknown analysis {', '.join(unknown)}; known: "
                         f"{', '.join(analysis_names())}")
    opts = dict(options or {})
    return {name: _ANALYSES[name](run, opts) for name in names}


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
    from evalstress.report import skips_frame

    return blindspot(run.table, skips=skips_frame(run),
                     **_pick(options, "rel_tol", "abs_tol", "protocol", "strict"))


@register_analysis("discernment")
def _discernment(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.discernment import discernment_analysis

    return discernment_analysis(run.table, **_pick(
        options, "expert_weights", "aspect_map", "level_map", "alpha", "zero_method", "hmp",
        "by_task"))


@register_analysis("criteria-confusion")
def _confusion(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.confusion import criteria_confusion

    human = _human_frame(run, str(options.get("human_key", "human")))
    return criteria_confusion(run.table, human=human, **_pick(
        options, "aspect_map", "alpha", "min_effect", "n_boot", "seed"))


@register_analysis("correlation")
def _correlation(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.correlation import run_correlation

    return run_correlation(run.table, run.plan.examples,
                           **_pick(options, "human_key", "n_boot", "seed"))


@register_analysis("style")
def _style(run: RunResult, options: Mapping[str, Any]) -> Any:
    from evalstress.analyses.style import response_style

    return response_style(run.table, **_pick(options, "bins"))
