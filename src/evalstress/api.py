"""The notebook face: `evalstress.stress(data, evaluators, suite=...)`.

One call does what `evalstress run` does — plan, perturb, score through the caches, analyse — and
returns a `StressResult`: `.to_frame()` gives the score table (or an analysis as a table), and in
Jupyter the result shows the run's HTML report inline (`_repr_html_`, the same report that
`evalstress run` writes, framed so its styles stay inside it).

    import evalstress
    result = evalstress.stress("summeval.jsonl", ["rouge", my_scorer, "judge:model=local"],
                               suite="dhp", mapping={"hypothesis": "highlight"}, limit=20)
    result.to_frame("discernment")

Evaluators are built first, so a missing extra (`pip install 'evalstress[models]'`) or a bad spec
fails before any data is read or perturbed.
"""

from __future__ import annotations

import dataclasses
import html
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evalstress.core.bars import RichBars
from evalstress.core.data import Example, FieldMap, builtin_corpus, from_hf_dataset, load_examples
from evalstress.core.strict import ConfigError, check_names
from evalstress.engine.result import RunResult
from evalstress.evaluators.base import Evaluator, create_evaluator, distinct_labels
from evalstress.evaluators.external import CallableEvaluator
from evalstress.job import StressJob, run_job
from evalstress.suites import Suite, custom_suite, known_options, load_suite, parse_seeds

EvaluatorLike = str | Mapping[str, Any] | Evaluator | Callable[..., Any]
DEFAULT_EVALUATORS = ("bleu", "chrf", "rouge")
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
    _tmp: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)
    _paths: dict[str, Path] | None = field(default=None, repr=False)

    @property
    def table(self) -> pd.DataFrame:
        """The long score table (one row per text x evaluator x aspect)."""
        return self.run.table

    def variants(self) -> pd.DataFrame:
        """Every variant with its full text and provenance: id, example_id, perturbation,
        severity, seed, noise_ratio, method, provenance, text (read from the run's files)."""
        from evalstress.engine.variantfile import COLUMNS, read_records, variants_path

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
        from evalstress.report import write_outputs

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


def make_evaluators(evaluators: EvaluatorLike | Sequence[EvaluatorLike] | Mapping[str, Any]
                    ) -> list[Evaluator]:
    """Evaluators from specs, instances, plain callables, or a mapping label -> any of those."""
    items: list[tuple[str | None, Any]]
    if isinstance(evaluators, Mapping) and not _is_spec_mapping(evaluators):
        items = [(str(k), v) for k, v in evaluators.items()]
    elif isinstance(evaluators, str | Evaluator) or callable(evaluators) or isinstance(
            evaluators, Mapping):
        items = [(None, evaluators)]
    else:
        items = [(None, e) for e in evaluators]
    made = [_one_evaluator(label, item) for label, item in items]
    distinct_labels(made, "give each its own name (name= in a spec, or a mapping label -> "
                    "evaluator)")
    return made


def _is_spec_mapping(value: Mapping[str, Any]) -> bool:
    """`{"name": "rouge", ...}` or `{"evaluator": "judge", ...}` is one spec; any other mapping
    names evaluators by label."""
    from evalstress.evaluators.base import registry

    return "evaluator" in value or value.get("name") in registry()


def _one_evaluator(label: str | None, item: Any) -> Evaluator:
    if isinstance(item, Evaluator):
        evaluator = item
    elif isinstance(item, str | Mapping):
        evaluator = create_evaluator(item)
    elif callable(item):
        evaluator = CallableEvaluator(item)
        evaluator.display_name = getattr(item, "__name__", None) or type(item).__name__
    else:
        raise TypeError(f"cannot make an evaluator of {item!r}: give a spec string, an "
                        "Evaluator or a callable")
    if label is not None:
        evaluator.display_name = label
    return evaluator


def load_data(data: Any, mapping: FieldMap | Mapping[str, str] | Sequence[str] | None = None,
              task: str | None = None, limit: int | None = None) -> list[Example]:
    """Examples from a file path, a DataFrame, Example objects, dict rows or a HF dataset;
    None or "builtin" is the built-in corpus."""
    if data is None or (isinstance(data, str) and data == "builtin"):
        examples = builtin_corpus()
    elif isinstance(data, str | Path):
        return load_examples(data, mapping, task=task, limit=limit)
    elif isinstance(data, pd.DataFrame):
        records = [{str(k): v for k, v in row.items()} for row in data.to_dict(orient="records")]
        examples = from_hf_dataset(records, mapping, task=task, name="dataframe")
    elif isinstance(data, Iterable):
        rows = list(data)
        if all(isinstance(r, Example) for r in rows):
            examples = rows
        else:
            examples = from_hf_dataset(rows, mapping, task=task, name="rows")
    else:
        raise TypeError(f"cannot read examples from {type(data).__name__}: give a path, a "
                        "DataFrame, a list of Example or dict rows, or a datasets.Dataset")
    examples = examples[:limit] if limit else examples
    if not examples:
        raise ValueError("no examples to stress")
    return examples


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
    """
    check_names("option", options or {}, known_options(), "stress(options=...)")

    made = make_evaluators(evaluators)  # first: a missing extra fails before any work
    base = suite if isinstance(suite, Suite) else load_suite(suite)
    the_suite = base
    if perturbations:
        the_suite = custom_suite(list(perturbations), seeds if seeds is not None
                                 else list(base.seeds), base.analyses, base.protocol)
        the_suite.options = dict(base.options)
    if protocol is not None:
        try:
            the_suite = the_suite.with_protocol(protocol)
        except ValueError as exc:
            raise ConfigError(f"stress(protocol=...): {exc}") from None
    if seeds is not None:  # after the protocol: the caller's seeds win
        the_suite = dataclasses.replace(the_suite, seeds=parse_seeds(
            seeds if isinstance(seeds, int) else list(seeds), "seeds"))  # not the caller's Suite
    examples = load_data(data, mapping, task, limit)
    config = {"command": "stress", "data": str(data) if isinstance(data, str | Path) else
              type(data).__name__, "suite": the_suite.name, "evaluators": [e.label for e in made],
              "seeds": list(the_suite.seeds), "limit": limit,
              **({"protocol": protocol} if protocol is not None else {})}
    done = run_job(StressJob(
        examples, the_suite, made, out=Path(out) if out is not None else None,
        cache_dir=Path(cache_dir) if cache_dir is not None else None,
        no_cache=not cache, options={**dict(options or {}),
                                     **({"rel_tol": rel_tol} if rel_tol is not None else {})},
        config=config, workers=1, progress=RichBars() if progress else None))
    stressed = StressResult(done.run, done.analyses, config)
    if out is not None:
        stressed.out, stressed._paths = Path(out), done.paths
    return stressed
