"""Outputs of a run: the score table, variants with provenance, skips and results.json."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from evalstress import __version__
from evalstress.runner import RunResult

#: Version of the results.json layout (docs/results.schema.json). Keys are only ever added;
#: the major number changes if one is removed or renamed.
SCHEMA_VERSION = "1.0"


def skips_frame(run: RunResult) -> pd.DataFrame:
    return pd.DataFrame([asdict(s) for s in run.plan.skips],
                        columns=["example_id", "perturbation", "severity", "seed", "reason"])


def write_outputs(run: RunResult, analyses: Mapping[str, Any], out_dir: str | Path, *,
                  config: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Write scores.parquet, variants.jsonl, examples.jsonl, skips.jsonl, results.json and
    report.html."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "scores": out / "scores.parquet",
        "variants": out / "variants.jsonl",
        "examples": out / "examples.jsonl",
        "skips": out / "skips.jsonl",
        "results": out / "results.json",
    }
    table = run.table.copy()
    table.to_parquet(paths["scores"], index=False)
    originals = {e.id: e.hypothesis for e in run.plan.examples}
    with paths["variants"].open("w", encoding="utf-8") as handle:
        for v in run.plan.variants:
            handle.write(json.dumps({
                "id": v.id, "example_id": v.example_id, "perturbation": v.perturbation,
                "severity": v.severity, "seed": v.seed, "noise_ratio": v.noise_ratio,
                "text": v.text, "diff": v.diff(originals[v.example_id]),
            }, ensure_ascii=False) + "\n")
    with paths["examples"].open("w", encoding="utf-8") as handle:
        for e in run.plan.examples:
            handle.write(json.dumps({"id": e.id, "task": e.task, "source": e.source,
                                     "hypothesis": e.hypothesis,
                                     "references": list(e.references)},
                                    ensure_ascii=False) + "\n")
    skips = skips_frame(run)
    with paths["skips"].open("w", encoding="utf-8") as handle:
        for record in skips.to_dict(orient="records"):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    reasons = (skips.groupby(["perturbation", "reason"]).size().reset_index(name="count")
               .to_dict(orient="records") if not skips.empty else [])
    missing = run.table[run.table["status"] != "ok"]
    missing_reasons = (missing.groupby(["evaluator", "aspect", "reason"]).size()
                       .reset_index(name="count").to_dict(orient="records")
                       if not missing.empty else [])
    results = {
        "schema_version": SCHEMA_VERSION,
        "evalstress": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": dict(config or {}),
        "suite": {"name": run.plan.suite.name, "seeds": list(run.plan.suite.seeds),
                  "protocol": run.plan.suite.protocol,
                  "perturbations": {p.name: {**p.perturbation.info(), "grid": list(p.grid),
                                            "params": dict(p.perturbation.params)}
                                    for p in run.plan.suite.perturbations},
                  "expect": dict(run.plan.suite.expect)},
        "counts": {"examples": len(run.plan.examples), "variants": len(run.plan.variants),
                   "skipped": len(run.plan.skips), "parses": run.plan.parses,
                   "missing_scores": int((run.table["status"] != "ok").sum())},
        "skip_reasons": reasons,
        "missing_reasons": missing_reasons,
        "evaluators": {label: {"signature": run.signatures.get(label),
                               "stats": asdict(stats),
                               "meant_for": meant_for(run.signatures.get(label))}
                       for label, stats in run.stats.items()},
        "analyses": {name: result.to_dict() for name, result in analyses.items()},
    }
    paths["results"].write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str),
                                encoding="utf-8")
    from evalstress.report.html import write_report

    paths["report"] = write_report(out)
    return paths


def meant_for(signature: Mapping[str, Any] | None) -> list[str] | None:
    """The tests an evaluator declares it is meant for (`Evaluator.meant_for`), by its name."""
    from evalstress.evaluators.base import registry

    cls = registry().get(str((signature or {}).get("evaluator", "")))
    declared = getattr(cls, "meant_for", None) if cls is not None else None
    return list(declared) if declared is not None else None
