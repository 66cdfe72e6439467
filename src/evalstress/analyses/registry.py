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
from typing import TYPE_CHECKING, Any

from evalstress.core.registry import Registry
from evalstress.core.strict import check_names

if TYPE_CHECKING:
    from evalstress.engine.result import RunResult

AnalysisFn = Callable[["RunResult", Mapping[str, Any]], Any]
#: analyses by name: the pure ones of `analyses.builtin`, the studies a suite may run
#: (`studies.attack.suite`), plugins through the entry point group
ANALYSES: Registry[AnalysisFn] = Registry(
    "analysis", builtin=("evalstress.analyses.builtin", "evalstress.studies.attack.suite"),
    group="evalstress.analyses")

#: the option keys each analysis reads; a suite's `options:` key that none reads is an error
#: with a did-you-mean (evalstress.suites)
_OPTIONS: dict[str, tuple[str, ...]] = {}


def register_analysis(name: str, options: Sequence[str] = ()
                      ) -> Callable[[AnalysisFn], AnalysisFn]:
    """Decorator that makes an analysis available to suites under `name`; `options` are the
    option keys it reads."""
    _OPTIONS[name] = tuple(options)
    return ANALYSES.register(name)


def analysis_options() -> dict[str, tuple[str, ...]]:
    """Option keys per analysis name."""
    ANALYSES.all()  # the built-in modules declare theirs as they load
    return dict(_OPTIONS)


def analysis_names() -> list[str]:
    return ANALYSES.names()


def run_analyses(names: Sequence[str], run: RunResult,
                 options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the named analyses on a run's score table, in the order given."""
    names = [names] if isinstance(names, str) else names  # one name is a one-item list
    check_names("analysis", names, analysis_names())
    opts = dict(options or {})
    entries = ANALYSES.all()
    return {name: entries[name](run, opts) for name in names}


def pick(options: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The given, non-empty options among `keys` (the keyword arguments of an analysis)."""
    return {k: options[k] for k in keys if k in options and options[k] is not None}
