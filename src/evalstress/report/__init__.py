"""Outputs of a run: the score table, variants with provenance, skips and results.json.

A run already has its scores, variants, skips and examples on disk in a staging folder; writing
adds results.json and report.html there and renames the folder into place, so a failed write
leaves the previous run directory as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalstress.core.redact import redact_value
from evalstress.core.version import __version__
from evalstress.engine.result import RunResult
from evalstress.engine.rundir import promote
from evalstress.llm.accounting import usage_block

#: Version of the results.json layout (docs/results.schema.json). Keys are only ever added;
#: the major number changes if one is removed or renamed.
SCHEMA_VERSION = "1.0"


def write_outputs(run: RunResult, analyses: Mapping[str, Any], out_dir: str | Path, *,
                  config: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Write scores.parquet, variants.parquet, skips.jsonl, examples.jsonl, results.json and
    report.html into the run's staging folder, then rename it to `out_dir`."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    files = run.files
    summary = run.summary
    results = {
        "schema_version": SCHEMA_VERSION,
        "evalstress": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": redact_value(dict(config or {})),  # a mistyped key never reaches disk
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
    for key in ("sequential", "backend"):  # the sequential DHP design, the Ray backend
        if summary.get(key):
            results[key] = summary[key]
    text = json.dumps(results, indent=2, ensure_ascii=False, default=str)
    files.path("results.json").write_text(text, encoding="utf-8")
    from evalstress.report.html import write_report

    write_report(files.root, files.path("report.html"))
    promote(files, out)
    return {"scores": out / "scores.parquet", "variants": out / "variants.parquet",
            "skips": out / "skips.jsonl", "examples": out / "examples.jsonl",
            "results": out / "results.json", "report": out / "report.html"}


def meant_for(signature: Mapping[str, Any] | None) -> list[str] | None:
    """The tests an evaluator declares it is meant for (`Evaluator.meant_for`), by its name."""
    from evalstress.evaluators.base import registry

    cls = registry().get(str((signature or {}).get("evaluator", "")))
    declared = getattr(cls, "meant_for", None) if cls is not None else None
    return list(declared) if declared is not None else None


__all__ = ["meant_for", "write_outputs"]
