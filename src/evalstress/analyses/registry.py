"""Analysis names a suite's `analyses:` list may use, the option keys each reads, and the
dispatcher over them.

Each analysis is `fn(run_result, options) -> result with to_dict()`; the built-in ones
(`analyses.builtin`) read `run_result.scores` (the Parquet score table, column-pruned, one group
at a time). Options are one flat mapping (the suite's `options:` plus command-line values);
every analysis reads the keys it declares when it registers and ignores the rest. This module is
a leaf: it imports no analysis; the registry loads the built-in modules by name on first use,
as it loads plugins through the `evalstress.analyses` entry point group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstress.core.registry import Registry
from evalstress.core.strict import check_names

if TYPE_CHECKING:
    from evalstress.core.cache import SQLiteCache
    from evalstress.engine.result import RunResult
    from evalstress.suites import Suite

AnalysisFn = Callable[["RunResult", Mapping[str, Any]], Any]
#: analyses by name: the pure ones of `analyses.builtin`, the studies a suite may run
#: (`studies.attack.suite`), plugins through the entry point group
ANALYSES: Registry[AnalysisFn] = Registry(
    "analysis", builtin=("evalstress.analyses.builtin", "evalstress.studies.attack.suite"),
    group="evalstress.analyses")

#: the option keys each analysis reads; a suite's `options:` key that none reads is an error
#: with a did-you-mean (evalstress.suites)
_OPTIONS: dict[str, tuple[str, ...]] = {}
#: the analyses that score texts themselves (studies): they get a `StudyContext`
_STUDIES: set[str] = set()


@dataclass(frozen=True)
class StudyContext:
    """What a study a suite names (it scores texts itself) gets from the job that runs it: the
    job's score cache, the folder of its LLM response caches, and the run's staging folder,
    where its own files go (they move with the run into `--out`)."""

    cache: SQLiteCache | None
    cache_dir: Path | None
    no_cache: bool
    folder: Path


def register_analysis(name: str, options: Sequence[str] = (), *, study: bool = False
                      ) -> Callable[[Any], Any]:
    """Decorator that makes an analysis available to suites under `name`; `options` are the
    option keys it reads. A `study` scores texts itself: it is called with the job's
    `StudyContext` as a third argument."""
    _OPTIONS[name] = tuple(options)
    if study:
        _STUDIES.add(name)
    return ANALYSES.register(name)


def needs_study_context(names: Sequence[str]) -> bool:
    """Whether any of the named analyses is a study (the job then opens its caches for it)."""
    ANALYSES.all()
    return any(name in _STUDIES for name in names)


def analysis_options() -> dict[str, tuple[str, ...]]:
    """Option keys per analysis name."""
    ANALYSES.all()  # the built-in modules declare theirs as they load
    return dict(_OPTIONS)


def analysis_names() -> list[str]:
    return ANALYSES.names()


def known_options() -> tuple[str, ...]:
    """Every key a suite's `options:` may set: those of any analysis, and the run's own."""
    from evalstress.suites import RUN_OPTIONS

    return tuple(sorted({*RUN_OPTIONS, *(k for keys in analysis_options().values()
                                         for k in keys)}))


def check_suite(suite: Suite) -> None:
    """A suite's analyses and option keys are known ones (UnknownNameError with a did-you-mean
    naming the suite's file otherwise): checked when a job is built, before any work."""
    check_names("analysis", suite.analyses, analysis_names(),
                f"{suite.source}: field 'analyses'")
    check_names("option", suite.options, known_options(), f"{suite.source}: field 'options'")


def run_analyses(names: Sequence[str], run: RunResult,
                 options: Mapping[str, Any] | None = None,
                 study: StudyContext | None = None) -> dict[str, Any]:
    """Run the named analyses on a run's score table, in the order given; a study among them
    needs the job's `study` context."""
    names = [names] if isinstance(names, str) else names  # one name is a one-item list
    check_names("analysis", names, analysis_names())
    opts = dict(options or {})
    entries = ANALYSES.all()
    results = {}
    for name in names:
        if name not in _STUDIES:
            results[name] = entries[name](run, opts)
        elif study is None:
            raise ValueError(f"analysis '{name}' scores texts itself: run it in a job "
                             "(evalstress run, evalstress.stress), which gives it the caches")
        else:
            results[name] = entries[name](run, opts, study)  # type: ignore[call-arg]
    return results


def pick(options: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The given, non-empty options among `keys` (the keyword arguments of an analysis)."""
    return {k: options[k] for k in keys if k in options and options[k] is not None}
