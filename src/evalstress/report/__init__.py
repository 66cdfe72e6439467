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


def skips_frame(run: RunResult) -> pd.DataFrame:
    return pd.DataFrame([asdict(s) for s in run.plan.skips],
                        columns=["example_id", "perturbation", "severity", "seed", "reason"])


def write_outputs(run: RunResult, analyses: Mapping[str, Any], out_dir: str | Path, *,
                  config: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Write scores.parquet, variants.jsonl, skips.jsonl, results.json and report.html."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "scores": out / "scores.parquet",
        "variants": out / "variants.jsonl",
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
        "evalstress": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": dict(config or {}),
        "suite": {"name": run.plan.suite.name, "seeds": list(run.plan.suite.seeds),
                  "protocol": run.plan.suite.protocol,
                  "perturbations": {p.name: {**p.perturbation.info(), "grid": list(p.grid),
                                            "params": dict(p.perturbation.params)}
                                    for p in run.plan.suite.perturbations}},
        "counts": {"examples": len(run.plan.examples), "variants": len(run.plan.variants),
                   "skipped": len(run.plan.skips), "parses": run.plan.parses,
                   "missing_scores": int((run.table["status"] != "ok").sum())},
        "skip_reasons": reasons,
        "missing_reasons": missing_reasons,
        "evaluators": {label: {"signature": run.signatures.get(label),
                               "stats": asdict(stats)} for label, stats in run.stats.items()},
        "analyses": {name: result.to_dict() for name, result in analyses.items()},
    }
    paths["results"].write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str),
                                encoding="utf-8")
    from evalstress.report.html import write_html

    paths["report"] = write_html(json.loads(paths["results"].read_text(encoding="utf-8")),
                                 out / "report.html",
                                 title=f"evalstress report: {run.plan.suite.name}")
    return paths
