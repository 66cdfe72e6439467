"""Stress tests as unit tests: a pytest plugin and plain assertion helpers.

    from evalstress.testing import assert_passes

    def test_my_metric_sees_truncation():
        assert_passes(my_metric, suite="blindspot", data="dev.jsonl",
                      require=["my_metric:truncation=pass"])

`my_metric` is a function of a `ScoreRequest` (returning a number, a mapping aspect -> number,
or None for a missing score), an evaluator spec ("rouge", "bertscore:num_layers=6") or an
Evaluator. The run is real (the same runner, analyses and run directory as `evalstress run`)
and the expectations are those of `evalstress check`: the suite's `expect:` block plus
`require=`, `max_failures=` and `min_d=`; with none, every applicable test must pass. On failure
the AssertionError lists one line per broken expectation and where the HTML report is.

Installed with evalstress, the plugin registers itself through the `pytest11` entry point
(`-p no:evalstress.testing` turns it off); or name it in `pytest_plugins = ["evalstress.testing"]`.
It adds the `evalstress` fixture, whose `assert_passes` and `stress` write their run
directories under the test's tmp_path. Nothing heavy is imported until a test asks for a run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from evalstress.analyses.outcomes import Outcome
    from evalstress.report.check import CheckResult

Metric = Any  # a callable, a spec string or mapping, or an Evaluator


@dataclass
class StressRun:
    """A finished stress-test run: its directory, results and the expectation checks."""

    out_dir: Path
    results: dict[str, Any]
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def outcomes(self) -> list[Outcome]:
        from evalstress.analyses.outcomes import outcomes

        return outcomes(self.results)

    @property
    def broken(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.ok]

    @property
    def report(self) -> Path:
        return self.out_dir / "report.html"


def _evaluators(metrics: Sequence[Metric], aspects: str | None, name: str | None) -> list[Any]:
    """The metrics as `build_evaluators` takes them: a plain function becomes a `python`
    evaluator of its aspects, labelled `name` (else the function's name)."""
    from evalstress.evaluators.base import Evaluator
    from evalstress.evaluators.external import CallableEvaluator
    from evalstress.job import build_evaluators

    items: list[Any] = []
    for metric in metrics:
        if callable(metric) and not isinstance(metric, Evaluator | str | Mapping):
            wrapped = CallableEvaluator(metric, aspects=aspects or "score")
            wrapped.display_name = str(name or getattr(metric, "__name__", "metric"))
            items.append(wrapped)
        elif isinstance(metric, Evaluator | str | Mapping):
            items.append(metric)
        else:
            raise TypeError(f"metric must be a function, an evaluator spec or an Evaluator, "
                            f"not {type(metric).__name__}")
    return build_evaluators(items)


def stress(metric: Metric | Sequence[Metric], *, suite: str | Path = "blindspot",
           data: Any = None, task: str | None = None, mapping: Mapping[str, str] | None = None,
           limit: int | None = None, seeds: int | Sequence[int] | None = None,
           aspects: str | None = None, name: str | None = None,
           out: str | Path | None = None, cache_dir: str | Path | None = None,
           options: Mapping[str, Any] | None = None) -> StressRun:
    """Run a suite on `data` (default: the built-in corpus) with one or more metrics and
    write a run directory (`out`, default a fresh temporary folder)."""
    import json

    from evalstress.job import RunSettings, build_job, run_job

    metrics = list(metric) if isinstance(metric, list | tuple) else [metric]
    evaluators = _evaluators(metrics, aspects, name)
    folder = Path(out) if out else Path(tempfile.mkdtemp(prefix="evalstress-"))
    from_file = isinstance(data, str | Path)
    settings = RunSettings.resolve(
        {"data": Path(data) if from_file else None, "task": task,
         "map": dict(mapping) if mapping else None, "limit": limit, "suite": str(suite),
         "seeds": seeds if isinstance(seeds, int) or seeds is None else list(seeds),
         "out": folder, "cache_dir": Path(cache_dir) if cache_dir else None,
         "options": dict(options or {}) or None, "workers": 1, "quiet": True},
        face="evalstress.testing.stress")
    job = build_job(settings, rows=None if from_file else data, evaluators=evaluators,
                    command="evalstress.testing")
    run_job(job)
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return StressRun(folder, results)


def check(stress_run: StressRun, *, require: Iterable[str] = (), max_failures: int | None = None,
          min_d: float | None = None) -> StressRun:
    """Check a run against its suite's `expect:` block plus these expectations."""
    from evalstress.report.check import Expectations, evaluate, parse_expect, parse_requirement

    flags = Expectations([parse_requirement(r, "require") for r in require], max_failures,
                         min_d)
    block = (stress_run.results.get("suite") or {}).get("expect") or {}
    base = parse_expect(block) if block else Expectations()
    stress_run.checks = evaluate(stress_run.results, base.merged(flags))
    return stress_run


def assert_passes(metric: Metric | Sequence[Metric], *, suite: str | Path = "blindspot",
                  data: Any = None, require: Iterable[str] = (), max_failures: int | None = None,
                  min_d: float | None = None, **kwargs: Any) -> StressRun:
    """Run the suite and raise AssertionError, one line per broken expectation, unless every
    expectation holds. Keyword arguments go to `stress` (task, mapping, limit, seeds, ...)."""
    done = check(stress(metric, suite=suite, data=data, **kwargs), require=require,
                 max_failures=max_failures, min_d=min_d)
    if done.broken:
        lines = "\n".join(f"  - {c.reason}" for c in done.broken)
        raise AssertionError(f"evalstress suite '{suite}': {len(done.broken)} of "
                             f"{len(done.checks)} expectations not met:\n{lines}\n"
                             f"report: {done.report}")
    return done


class _Fixture:
    """The `evalstress` fixture: the helpers above, writing under the test's tmp_path."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self._count = 0

    def _out(self) -> Path:
        self._count += 1
        return self.tmp_path / f"evalstress-run-{self._count}"

    def stress(self, metric: Metric, **kwargs: Any) -> StressRun:
        kwargs.setdefault("out", self._out())
        return stress(metric, **kwargs)

    def assert_passes(self, metric: Metric, **kwargs: Any) -> StressRun:
        kwargs.setdefault("out", self._out())
        return assert_passes(metric, **kwargs)


def _fixture(tmp_path: Path) -> _Fixture:
    return _Fixture(tmp_path)


def _register() -> Callable[..., Any] | None:
    try:
        import pytest
    except ImportError:  # pragma: no cover - the helpers work without pytest
        return None
    return pytest.fixture(name="evalstress")(_fixture)


evalstress_fixture = _register()
