"""From the methods' finished run directories to the card: the sections, the sanity gate over
the evaluator's score tables, the findings with their examples, and the files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from evalstress.card.evidence import RunEvidence
from evalstress.card.figures import FIGURES, FigurePlan, card_figures
from evalstress.card.findings import headline_findings
from evalstress.card.gate import COLUMNS, sanity_gate
from evalstress.card.html import render_card_html
from evalstress.card.identity import completed_identity, family_warnings
from evalstress.card.markdown import render_markdown
from evalstress.card.model import (
    CARD_HTML,
    CARD_JSON,
    CARD_MD,
    Card,
    MethodCost,
    write_atomic,
    write_card_json,
)
from evalstress.card.plan import STUDY_MODES, CardPlan
from evalstress.card.run import MethodOutcome, run_dir_of
from evalstress.card.schema import card_problems
from evalstress.card.sections import method_section, relative
from evalstress.engine.outdir import file_digest, record_files, recorded


def source_of(key: str, mode: str | None = None) -> str:
    """The method whose run holds a method's numbers (the correlation of the originals: the
    blind-spot run; the correlation of the systems' outputs: its own)."""
    return "blindspot" if key == "correlation" and mode not in STUDY_MODES else key


def read_table(run_dir: Path) -> pd.DataFrame | None:
    """The score rows the gate and the findings read; a run written before score rows carried
    the judge's answer has no `answer` column, and its gate counts scores."""
    path = run_dir / "scores.parquet"
    if not path.exists():
        return None
    present = set(pq.read_schema(path).names)
    return pd.read_parquet(path, columns=[c for c in COLUMNS if c in present])


def evaluator_block(plan: CardPlan, outcomes: Mapping[str, MethodOutcome]) -> dict[str, Any]:
    """The evaluator under test: its traits and its full signature as the first finished run
    recorded it (a judge's endpoint identity is learnt while it scores)."""
    signature = None
    for outcome in outcomes.values():
        evaluators = (outcome.results or {}).get("evaluators") or {}
        if evaluators:
            signature = next(iter(evaluators.values())).get("signature")
            break
    block = {**plan.evaluator.to_dict(), "signature": signature}
    return {**block, **identity_entries(plan, outcomes)}


def identity_entries(plan: CardPlan, outcomes: Mapping[str, MethodOutcome]) -> dict[str, Any]:
    """A judge's identity (recorded when the card was planned, completed with the model names
    the answers of every method gave; the consistency method's record where the plan has
    none, as a card planned before the identity was) and the warnings on its model family;
    nothing for an evaluator that asks no model."""
    consistency = outcomes.get("consistency")
    identity = ((consistency.results or {}).get("identity") if consistency else None) or None
    identity = completed_identity(plan.identity or identity,
                                  [o.results for o in outcomes.values()],
                                  plan.evaluator.label) or identity
    warnings = family_warnings(plan.evaluator.spec, plan.gold, plan.generator)
    if identity is None and not warnings:
        return {}
    return {"identity": {**(identity or {}), "warnings": warnings}}


def assemble(plan: CardPlan, outcomes: Mapping[str, MethodOutcome], out: Path, *,
             max_missing: float) -> Card:
    """The card of a plan whose methods have run (or failed, or were not run)."""
    sections: dict[str, dict[str, Any]] = {}
    tables: list[pd.DataFrame] = []
    blindspot_table: pd.DataFrame | None = None
    evidence: dict[str, RunEvidence] = {}
    for method in plan.methods:
        outcome = outcomes.get(source_of(method.key, method.mode))
        run_dir = run_dir_of(out, source_of(method.key, method.mode))
        finished = outcome is not None and outcome.results is not None and method.runs
        section = method_section(method, plan, run_dir if finished else None,
                                 outcome.results if finished and outcome else None, out)
        if outcome is not None and outcome.status == "failed" and method.runs:
            section["status"], section["reason"] = "failed", outcome.error
        sections[method.key] = section
        if finished and method.kind == "job":
            evidence[method.key] = RunEvidence(run_dir, relative(run_dir, out))
            table = read_table(run_dir)
            if table is not None:
                tables.append(table)
                if method.key == "blindspot":
                    blindspot_table = table
    gate = sanity_gate(tables, blindspot_table, max_missing=max_missing,
                       declared=plan.evaluator.score_range)

    def example(method: str, aspect: str, perturbation: str, severity: str,
                pick: str, task: str | None = None) -> dict[str, Any] | None:
        source = evidence.get(method)
        return (source.before_after(aspect, perturbation, severity, pick, task) if source
                else None)

    findings = headline_findings(sections, gate.to_dict(), example)
    timings = {key: MethodCost(o.seconds, o.status == "reused", o.first_seconds)
               for key, o in outcomes.items() if o.status in ("run", "reused", "failed")}
    return Card(evaluator_block(plan, outcomes), dict(plan.data), plan.budget.to_dict(), gate,
                findings, sections, timings, out)


def write_card(card: Card) -> dict[str, Path]:
    """card.json (checked against its schema first: a departure is a bug, not a file), the
    figures (figures/*.svg), card.md and card.html, each written whole or not at all."""
    data = card.to_dict()
    problems = card_problems(data)
    if problems:
        raise RuntimeError(f"the card departs from docs/card.schema.json: {problems[0]}")
    return write_card_files(data, card.out)


def write_figures(data: Mapping[str, Any], out: Path) -> list[tuple[FigurePlan, str]]:
    """The card's figures into `out/figures` (figures an earlier card wrote there are removed,
    never a file evalstress did not write); returns each figure's plan with its SVG."""
    drawn = card_figures(data)
    folder = out / FIGURES
    if drawn:
        folder.mkdir(parents=True, exist_ok=True)
    kept = {plan.path for plan, _ in drawn}
    ours = recorded(out)
    for rel, digest in ours.items():  # only figures evalstress wrote there and nobody changed
        old = out / rel
        if rel.startswith(f"{FIGURES}/") and rel not in kept and old.is_file() \
                and not old.is_symlink() and file_digest(old) == digest:
            old.unlink()
    for plan, svg in drawn:
        write_atomic(out / plan.path, svg)
    if not drawn and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()  # an empty folder nobody recorded would refuse the card's next run
    return drawn


def write_card_files(data: Mapping[str, Any], out: Path) -> dict[str, Path]:
    """A card's files from its card.json data into `out`: card.json, its figures, card.md
    and card.html."""
    drawn = write_figures(data, out)
    json_path = write_card_json(data, out)
    md_path, html_path = out / CARD_MD, out / CARD_HTML
    write_atomic(md_path, render_markdown(data))
    write_atomic(html_path, render_card_html(data, drawn))
    record_files(out, [CARD_JSON, CARD_MD, CARD_HTML, *(plan.path for plan, _ in drawn)],
                 "card", "card")
    return {"json": json_path, "md": md_path, "html": html_path}
