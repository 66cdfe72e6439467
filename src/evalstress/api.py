"""The notebook face: `evalstress.stress(data, evaluators, suite=...)`.

One call does what `evalstress run` does — plan, perturb, score through the caches, analyse — and
returns a `StressResult`: `.to_frame()` gives the score table (or an analysis as a table), and in
Jupyter the result shows the run's HTML report inline (`_repr_html_`, the same report that
`evalstress run` writes, framed so its styles stay inside it).

    import evalstress
    result = evalstress.stress("examples/summaries.jsonl",
                               ["rouge", my_scorer, "judge:model=local"], suite="dhp",
                               mapping={"hypothesis": "highlight"}, limit=20)
    result.to_frame("discernment")

Evaluators are built first, so a missing extra (`pip install 'evalstress[models]'`) or a bad spec
fails before any data is read or perturbed.
"""

from __future__ import annotations

import html
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evalstress.core.bars import progress_for
from evalstress.core.consoles import FittedConsole
from evalstress.core.data import Example, FieldMap
from evalstress.engine.result import RunResult
from evalstress.engine.variantfile import COLUMNS, read_records, variants_path
from evalstress.job import LEXICAL_DEFAULT, RunSettings, build_evaluators, build_job, run_job
from evalstress.job.build import EvaluatorLike, load_job_examples
from evalstress.report import write_outputs
from evalstress.suites import Suite

#: the evaluators of `stress()` without any: those of a run that names none
DEFAULT_EVALUATORS = tuple(LEXICAL_DEFAULT)
#: The table each analysis turns into by default in `to_frame(name)`.
_DEFAULT_PART = {"blindspot": "rows", "discernment": "summaries",
                 "criteria-confusion": "summaries"}


@dataclass
class StressResult:
    """A finished stress run: the score table, the analyses, and the report on demand."""

    run: RunResult
    analyses: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    out: Path | None = None
    # bookkeeping of save(), outside the constructor's signature (not for callers to pass)
    _tmp: tempfile.TemporaryDirectory[str] | None = field(default=None, init=False, repr=False)
    _paths: dict[str, Path] | None = field(default=None, init=False, repr=False)

    @property
    def table(self) -> pd.DataFrame:
        """The long score table (one row per text x evaluator x aspect)."""
        return self.run.table

    def variants(self) -> pd.DataFrame:
        """Every variant with its full text and provenance: id, example_id, perturbation,
        severity, seed, noise_ratio, method, provenance, text (read from the run's files)."""

        found = variants_path(self.run.files.root)
        rows = list(read_records(found)) if found is not None else []
        return pd.DataFrame(rows, columns=list(COLUMNS))

    def to_frame(self, analysis: str | None = None, part: str | None = None) -> pd.DataFrame:
        """The score table; or, given an analysis name, its main table (`part` picks another
        list of its JSON form, e.g. `to_frame("discernment", "units")`)."""
        if analysis is None:
            return self.run.table.copy()
        if analysis not in self.analyses:
            raise KeyError(f"no analysis '{analysis}' in this run; it has "
                           f"{', '.join(self.analyses) or 'none'}")
        data = self.analyses[analysis].to_dict()
        tables = {k: v for k, v in data.items()
                  if isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v)}
        key = part or _DEFAULT_PART.get(analysis) or next(iter(tables), None)
        if key is None or key not in tables:
            raise KeyError(f"analysis '{analysis}' has no table '{key}'; it has "
                           f"{', '.join(tables) or 'none'}")
        return pd.DataFrame(tables[key])

    def save(self, out: str | Path | None = None) -> dict[str, Path]:
        """Write the run directory (results.json, scores.parquet, variants, report.html)."""

        if out is not None:
            self.out = Path(out)
        if self.out is None:
            self._tmp = self._tmp or tempfile.TemporaryDirectory(prefix="evalstress-")
            self.out = Path(self._tmp.name)
        self._paths = write_outputs(self.run, self.analyses, self.out, config=self.config)
        return self._paths

    def report_html(self) -> str:
        """The run's self-contained HTML report (written with the run directory)."""
        paths = self._paths or self.save()
        return Path(paths["report"]).read_text(encoding="utf-8")

    def _repr_html_(self) -> str:
        document = html.escape(self.report_html(), quote=True)
        return (f'<iframe srcdoc="{document}" title="evalstress report" '
                'style="width:100%;height:720px;border:1px solid #ddd" '
                'sandbox="allow-scripts"></iframe>')

    def __repr__(self) -> str:
        table = self.run.table
        missing = int((table["status"] != "ok").sum()) if len(table) else 0
        return (f"StressResult(suite={self.run.plan.suite.name!r}, "
                f"examples={len(self.run.plan.examples)}, variants={len(self.run.plan.variants)}, "
                f"evaluators={list(self.run.stats)}, scores={len(table)}, missing={missing}, "
                f"analyses={list(self.analyses)})")


def load_data(data: Any, mapping: FieldMap | Mapping[str, str] | Sequence[str] | None = None,
              task: str | None = None, limit: int | None = None) -> list[Example]:
    """Examples from a file path, a DataFrame, Example objects, dict rows or a HF dataset;
    None or "builtin" is the built-in corpus (the loader every run uses)."""
    path, rows = _data_source(data)
    settings = RunSettings.resolve({"data": path, "map": _mapping(mapping), "task": task,
                                    "limit": limit}, face="load_data")
    return load_job_examples(settings, rows)[0]


def _data_source(data: Any) -> tuple[Path | None, Any]:
    """(path, rows): a file path, rows Python holds, or neither (the built-in corpus)."""
    if data is None or (isinstance(data, str) and data == "builtin"):
        return None, None
    if isinstance(data, str | Path):
        return Path(data), None
    return None, data


def _mapping(mapping: Any) -> Any:
    """A field mapping as settings hold it (a FieldMap passes as it is)."""
    if mapping is None or isinstance(mapping, FieldMap | list):
        return mapping
    if isinstance(mapping, Mapping):
        return dict(mapping)
    return list(mapping)


def stress(data: Any = None,
           evaluators: EvaluatorLike | Sequence[EvaluatorLike] | Mapping[str, Any]
           = DEFAULT_EVALUATORS, suite: str | Path | Suite = "blindspot", *,
           perturbations: Sequence[str] | None = None, seeds: int | Sequence[int] | None = None,
           mapping: FieldMap | Mapping[str, str] | Sequence[str] | None = None,
           task: str | None = None, limit: int | None = None, options: Mapping[str, Any] | None
           = None, rel_tol: float | None = None, protocol: str | None = None,
           cache: bool = True, cache_dir: str | Path | None = None,
           out: str | Path | None = None, progress: bool = True) -> StressResult:
    """Stress-test evaluators on data with a suite, from Python or a notebook.

    `data`: a JSONL/CSV/Parquet path, a DataFrame, dict rows, Examples, a `datasets.Dataset`, or
    None for the built-in corpus. `evaluators`: specs (`"rouge"`, `"judge:model=local"`),
    Evaluator objects, plain callables (text request -> number), or a mapping label -> any of
    those. `suite`: a built-in name, a YAML path or a Suite; `perturbations` and `seeds` override
    it; `options` adds analysis options (e.g. `{"aspect_map": {"rougeL": "informativeness"}}`).
    `protocol="paper"` runs the suite under the papers' own settings, as `--protocol paper`.
    Scores go through the same caches as the command line (`cache=False` scores afresh).
    With `out`, the run directory is written there at once; else on first `save()` or display.
    `progress` goes to stderr as the command line's does: bars in a terminal or a notebook cell,
    plain lines in a log.
    """
    path, rows = _data_source(data)
    named = isinstance(suite, str | Path)
    settings = RunSettings.resolve(
        {"data": path, "map": _mapping(mapping), "task": task, "limit": limit,
         "suite": str(suite) if named else None, "perturbations": list(perturbations or []),
         "seeds": seeds if isinstance(seeds, int) or seeds is None else list(seeds),
         "protocol": protocol, "rel_tol": rel_tol, "options": dict(options or {}) or None,
         "no_cache": not cache, "cache_dir": Path(cache_dir) if cache_dir is not None else None,
         "out": Path(out) if out is not None else None, "quiet": not progress, "workers": 1},
        face="stress")
    # evaluators first: a missing extra or a bad spec fails before any data is read
    made = build_evaluators(evaluators, "give each its own name (name= in a spec, or a mapping "
                            "label -> evaluator)")
    job = build_job(settings, rows=rows, evaluators=made,
                    suite=None if named else suite,  # type: ignore[arg-type]
                    progress=progress_for(FittedConsole(stderr=True)) if progress else None)
    for note in job.notes:  # a default task, rows without references: said as `run` says them
        sys.stderr.write(note + "\n")
    done = run_job(job)
    stressed = StressResult(done.run, done.analyses, dict(job.config))
    if out is not None:
        stressed.out, stressed._paths = Path(out), done.paths
    return stressed
