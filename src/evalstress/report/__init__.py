"""Outputs of a run: the score table, variants with provenance, skips and results.json.

A run already has its scores, variants, skips and examples on disk in a staging folder; writing
adds results.json and report.html there and renames the folder into place, so a failed write
leaves the previous run directory as it was.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalstress.core.phases import phase
from evalstress.core.redact import redact_value
from evalstress.core.storage import StorageError, describe
from evalstress.core.version import __version__
from evalstress.engine.result import RunResult
from evalstress.engine.rundir import RunFiles, promote
from evalstress.evaluators.base import registry
from evalstress.llm.accounting import usage_block

#: Version of the results.json layout (docs/results.schema.json). Keys are only ever added;
#: the major number changes if one is removed or renamed.
SCHEMA_VERSION = "1.0"


def write_outputs(run: RunResult, analyses: Mapping[str, Any], out_dir: str | Path, *,
                  config: Mapping[str, Any] | None = None, force: bool = False,
                  health: Mapping[str, Any] | None = None,
                  browser_reader: Callable[[], dict[str, Any] | None] | None = None
                  ) -> dict[str, Path]:
    """Write scores.parquet, variants.parquet, skips.jsonl, examples.jsonl, results.json and
    report.html into the run's staging folder, then rename it to `out_dir` (replacing a
    folder evalstress did not write only with `force`). `browser_reader` returns the report's
    variant browser data when another process reads it meanwhile (`html.write_report`)."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    files = run.files
    summary = run.summary
    results = {
        **results_head(config),
        "suite": {"name": run.plan.suite.name, "seeds": list(run.plan.suite.seeds),
                  "protocol": run.plan.suite.protocol,
                  "perturbations": {p.name: {**p.perturbation.info(), "grid": list(p.grid),
                                            "params": dict(p.perturbation.params)}
                                    for p in run.plan.suite.perturbations},
                  "expect": dict(run.plan.suite.expect)},
        "counts": {"examples": len(run.plan.examples), "variants": len(run.plan.variants),
                   "skipped": len(run.plan.skips), "parses": run.plan.parses,
                   "missing_scores": int(summary.get("missing_scores", 0))},
        "skip_reasons": redact_value(summary.get("skip_reasons", [])),
        "missing_reasons": redact_value(summary.get("missing_reasons", [])),
        "evaluators": {label: {"signature": redact_value(run.signatures.get(label)),
                               "stats": asdict(stats),
                               "meant_for": meant_for(run.signatures.get(label)),
                               **({"usage": usage_block(run.usage[label])}
                                  if label in run.usage else {})}
                       for label, stats in run.stats.items()},
        "analyses": {name: result.to_dict() for name, result in analyses.items()},
    }
    # LLM-written or imported variants: `$defs/generation` in docs/results.schema.json
    if run.plan.generation is not None:
        results["generation"] = run.plan.generation
    elif summary.get("generation"):
        results["generation"] = {"perturbations": summary["generation"]}
    if health and any(health.values()):  # degenerate evaluators: `$defs/health`
        results["health"] = dict(health)
    for key in ("sequential", "backend"):  # the sequential DHP design, the Ray backend
        if summary.get(key):
            results[key] = summary[key]
    text = json.dumps(results, indent=2, ensure_ascii=False, default=str)
    with naming(files.path("results.json")):
        files.path("results.json").write_text(text, encoding="utf-8")
    from evalstress.report.html import write_report

    with naming(files.path("report.html")), phase("report.html"):
        write_report(files.root, files.path("report.html"), browser_reader=browser_reader)
    with phase("rename into --out"):
        promote(files, out, command=str((config or {}).get("command", "run")), force=force)
    return {"scores": out / "scores.parquet", "variants": out / "variants.parquet",
            "skips": out / "skips.jsonl", "examples": out / "examples.jsonl",
            "results": out / "results.json", "report": out / "report.html"}


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """A full disk or a read-only folder while writing `path` becomes a StorageError naming
    it (a file object's write error knows no file name)."""
    try:
        yield
    except OSError as exc:
        line = describe(exc, path)
        if line is None:
            raise
        raise StorageError(line) from None


def results_head(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The first keys of every results.json (docs/results.schema.json): the layout version,
    evalstress' version, when, and how the run was asked for (secrets redacted)."""
    return {"schema_version": SCHEMA_VERSION, "evalstress": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "config": redact_value(dict(config or {}))}  # a mistyped key never reaches disk


def write_study_outputs(files: RunFiles, out: str | Path, *, config: Mapping[str, Any],
                        analyses: Mapping[str, Any], counts: Mapping[str, Any],
                        extra: Mapping[str, Any] | None = None, title: str,
                        force: bool = False) -> dict[str, Path]:
    """A study's run directory (attack, correlate, self-bias): its own files are already in
    the staging folder `files`; this adds results.json (the same head and layout as a run's)
    and report.html, then renames the folder to `out` as a run's is."""
    from evalstress.report.html import write_html

    out = Path(out)
    results = {**results_head(config), "counts": dict(counts), **dict(extra or {}),
               "analyses": {name: result.to_dict() for name, result in analyses.items()}}
    with naming(files.path("results.json")):
        files.path("results.json").write_text(
            json.dumps(results, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    with naming(files.path("report.html")):
        write_html(results, files.path("report.html"), title=title)
    names = sorted(p.name for p in files.root.iterdir() if not p.name.startswith("."))
    promote(files, out, command=str(config.get("command", "study")), force=force)
    return {name.split(".")[0]: out / name for name in names}


def meant_for(signature: Mapping[str, Any] | None) -> list[str] | None:
    """The tests an evaluator declares it is meant for (`Evaluator.meant_for`), by its name."""

    cls = registry().get(str((signature or {}).get("evaluator", "")))
    declared = getattr(cls, "meant_for", None) if cls is not None else None
    return list(declared) if declared is not None else None


__all__ = ["SCHEMA_VERSION", "meant_for", "results_head", "write_outputs",
           "write_study_outputs"]
