"""Each method's section of the card, read from its finished run directory: what ran, the
tables the card shows (the analyses' verdicts with the change figures and intervals of
`card.profile`), the files they rest on, and what the method cost."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalstress.analyses.stats import pairs_for_discernment
from evalstress.card.evidence import attack_example
from evalstress.card.execution import run_backend, shard_cost
from evalstress.card.findings import can_reach
from evalstress.card.plan import (
    CONSISTENCY_FILE,
    STUDY_MODES,
    SYSTEMS_FILE,
    CardPlan,
    MethodPlan,
)
from evalstress.card.position import POSITION_FILE
from evalstress.card.profile import (
    aimed_at,
    blindspot_rows,
    discernment_units,
    paired_rows,
    sensitivity_profile,
)
from evalstress.card.sequential import design_of
from evalstress.core.data import read_jsonl
from evalstress.core.scoretable import ScoreTable
from evalstress.engine import variantfile

#: the files of a run directory a section points at, by the name the card gives them
RUN_FILES = {"results": "results.json", "report": "report.html", "scores": "scores.parquet",
             "examples": "examples.jsonl", "skips": "skips.jsonl", "attacks": "attacks.jsonl"}


def relative(path: Path, root: Path) -> str:
    """`path` as card.json names it: relative to the card's folder when inside it."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


def run_files(run_dir: Path, root: Path) -> dict[str, str]:
    """The evidence files a run directory holds, by name (variants: its variants file),
    relative to the card's folder `root`."""
    found = {name: relative(run_dir / file, root) for name, file in RUN_FILES.items()
             if (run_dir / file).exists()}
    variants = variantfile.variants_path(run_dir)
    if variants is not None:
        found["variants"] = relative(variants, root)
    return found


def listing(items: list[str], shown: int = 5) -> str:
    """The first `shown` items, then how many more."""
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def base_section(method: MethodPlan, plan: CardPlan) -> dict[str, Any]:
    """What every section says of its method, run or not."""
    return {"key": method.key, "title": method.title, "paper": method.paper,
            "status": "run" if method.runs else "not run", "reason": method.reason,
            "suite": method.suite, "protocol": method.protocol, "seeds": method.seeds,
            "mode": method.mode, "examples": len(plan.examples) if method.runs else 0,
            "trusted": None, "trust_note": "", "run_dir": None, "files": {}, "summary": "",
            "results": {}, "cost": {},
            "left_out": [{"perturbation": name, "reason": reason, "line": line}
                         for (name, reason), line in zip(method.left_out,
                                                         method.left_out_lines(), strict=True)]}


def job_cost(results: Mapping[str, Any]) -> dict[str, Any]:
    """Scoring counts and LLM usage of a stress run's evaluator (results.json)."""
    evaluators = results.get("evaluators") or {}
    entry: Mapping[str, Any] = next(iter(evaluators.values()), {})
    stats = dict(entry.get("stats") or {})
    usage = entry.get("usage") or {}
    return {"requested": stats.get("requested"), "distinct": stats.get("distinct"),
            "cached": stats.get("cached"), "scored": stats.get("scored"),
            "calls": usage.get("calls", stats.get("calls")),
            "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": usage.get("completion_tokens"),
            "variants": (results.get("counts") or {}).get("variants")}


def blindspot_section(results: Mapping[str, Any], table: ScoreTable) -> tuple[dict[str, Any], str]:
    analysis = (results.get("analyses") or {}).get("blindspot") or {}
    rows = blindspot_rows(analysis, paired_rows(table))
    passed = sum(1 for r in rows if r["verdict"] == "pass")
    failed = [r["perturbation"] for r in rows if r["rank_pass"] is False]
    summary = (f"{passed} of {len(rows)} perturbations pass the rank and monotonic tests"
               + (f"; rank test failed (blind spots): {listing(failed)}" if failed else ""))
    return ({"tolerance": analysis.get("tolerance"), "tests": analysis.get("tests"),
             "rows": rows, "notes": analysis.get("notes") or [],
             "counts": results.get("counts")}, summary)


def discernment_section(results: Mapping[str, Any], table: ScoreTable
                        ) -> tuple[dict[str, Any], str]:
    analysis = (results.get("analyses") or {}).get("discernment") or {}
    threshold = float(analysis.get("threshold") or 1.0)
    summaries = [{k: s.get(k) for k in ("task", "group", "d_avg", "d_min", "d_min_at",
                                          "d_avg_ew", "d_min_ew", "n_units", "n_excluded",
                                          "n_too_few")}
                 for s in analysis.get("summaries") or []]
    units = discernment_units(analysis, paired_rows(table, by_task=True))
    return ({"threshold": threshold, "method": analysis.get("method"),
             "summaries": summaries, "units": units, "notes": analysis.get("notes") or [],
             "too_few": too_few(units, threshold)}, discernment_summary(units, threshold))


def too_few(units: list[dict[str, Any]], threshold: float = 1.0) -> dict[str, Any]:
    """How many units cannot reach D = threshold at their n, and how many examples D = 1 and
    D = 2 need (the D ceiling, `stats.discernment_ceiling`)."""
    return {"units": sum(1 for u in units if not can_reach(u, threshold)),
            "examples_for_d1": pairs_for_discernment(1.0),
            "examples_for_d2": pairs_for_discernment(2.0),
            "rule": "a one-sided signed-rank test on n examples gives p >= 2^-n, so "
                    "D <= n ln 2 / ln 20; a unit whose ceiling is below the threshold is "
                    "'too few examples', counted apart from the units that fail to reach it"}


def discernment_summary(units: list[dict[str, Any]], threshold: float = 1.0) -> str:
    """The section's line: units reaching D = threshold among those whose n allows it (one
    unit per task, perturbation, severity and evaluator aspect), the failing ones, and the
    units of too few examples apart."""
    several = len({u.get("aspect") for u in units}) > 1
    able = [u for u in units if can_reach(u, threshold)]
    below = [f"{u['perturbation']} ({u['severity']}, {u['task']}"
             + (f", {u['aspect']})" if several else ")") for u in able
             if u.get("d") is None or u["d"] < threshold]
    few = len(units) - len(able)
    need = (f"too few examples: their n <= {pairs_for_discernment(threshold) - 1} allows no "
            f"D >= {threshold:g} (D = 1 needs {pairs_for_discernment(1.0)} examples, D = 2 "
            f"needs {pairs_for_discernment(2.0)})")
    if not units:
        return "no unit was tested"
    if not able:
        return f"no unit has the examples to reach D >= {threshold:g}: all {few} are {need}"
    return (f"{len(able) - len(below)} of {len(able)} units reach D >= {threshold:g}"
            + (f"; below: {listing(sorted(below))}" if below else "")
            + (f"; {few} more units are {need}" if few else ""))


def confusion_matrix(items: list[dict[str, Any]], ranks: Mapping[tuple[str, str], int]
                     ) -> dict[str, Any]:
    """Intended against affected aspects: per attack at its heaviest severity (`ranks`: the
    severity's rank per (perturbation, severity)), one cell per evaluator aspect saying what it
    should do (move or stay), what it did (rank-biserial r, change with its interval) and the
    verdict."""
    heaviest: dict[str, tuple[int, str]] = {}
    for item in items:
        rank = ranks.get((item["perturbation"], item["severity"]), -1)
        if rank > heaviest.get(item["perturbation"], (-2, ""))[0]:
            heaviest[item["perturbation"]] = (rank, item["severity"])
    cells = [{"perturbation": i["perturbation"], "severity": i["severity"],
              "intended": i["intended"], "affected": i["aspect"],
              "quality_aspect": i["quality_aspect"],
              "expected": {"directional": "move", "invariance": "stay"}.get(i["test"]),
              "rank_biserial": i.get("rank_biserial"), "change": i.get("change"),
              "ci_low": i.get("ci_low"), "ci_high": i.get("ci_high"), "passed": i.get("passed")}
             for i in items if heaviest.get(i["perturbation"], (0, None))[1] == i["severity"]]
    return {"attacks": sorted(heaviest), "affected": sorted({c["affected"] for c in cells}),
            "cells": cells}


def criteria_section(results: Mapping[str, Any], table: ScoreTable, mode: str,
                     quality: Mapping[str, str | None]) -> tuple[dict[str, Any], str]:
    analysis = (results.get("analyses") or {}).get("criteria-confusion") or {}
    items = [{**item, "intended": ", ".join(aimed_at(item["perturbation"])) or None}
             for item in analysis.get("items") or []]
    profile = sensitivity_profile(table, quality)
    ranks = {(r["perturbation"], r["severity"]): r["severity_rank"] for r in profile["rows"]}
    if mode == "confusion":
        confused = sum(1 for i in items if i["test"] == "invariance" and i["passed"] is False)
        missed = sum(1 for i in items if i["test"] == "directional" and i["passed"] is False)
        tested = sum(1 for i in items if i["passed"] is not None)
        summary = (f"{tested} tests: {confused} moved an aspect that should stay, {missed} "
                   "missed damage to the aspect aimed at")
    else:
        probed = [a for a in profile["aspects"] if a["probed"]]
        summary = (f"sensitivity profile over {len(probed)} quality aspects the suite's "
                   "perturbations aim at")
    return ({"mode": mode,
             "confusion": {"items": items, "matrix": confusion_matrix(items, ranks),
                           "summaries": analysis.get("summaries") or [],
                           "thresholds": analysis.get("thresholds"),
                           "matrices": analysis.get("matrices") or []},
             "sensitivity": profile, "notes": analysis.get("notes") or []}, summary)


def adversarial_section(results: Mapping[str, Any], run_dir: str, note: str = ""
                        ) -> tuple[dict[str, Any], str]:
    """The attack's success rates (paper 004) with their Wilson intervals; `note` says what the
    card left out of the attack (TextFooler without its models)."""
    analysis = (results.get("analyses") or {}).get("adversarial") or {}
    successes = analysis.get("successes") or []
    rows = analysis.get("asr") or []
    summary = (f"{len(successes)} successful searches out of "
               f"{sum(int(r.get('attempts') or 0) for r in rows)} attempts")
    return ({"asr": rows, "successes": len(successes), "params": analysis.get("params"),
             "methods": analysis.get("methods"), "directions": analysis.get("directions"),
             "gold": analysis.get("gold"), "generator": analysis.get("generator"),
             "example": attack_example(successes, run_dir),
             "notes": [*([note] if note else []), *(analysis.get("notes") or [])]}, summary)


def attack_cost(results: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """Searches, victim and gold queries (attacks.jsonl) and the generator's usage."""
    victim = gold = searches = 0
    path = run_dir / "attacks.jsonl"
    if path.exists():  # a broken line: a DataError naming the file, line and column
        for _, record in read_jsonl(path):
            searches += 1
            victim += int(record.get("queries") or 0)
            gold += int(record.get("gold_queries") or 0)
    usage = ((results.get("analyses") or {}).get("adversarial") or {}).get("usage") or {}
    return {"searches": searches, "victim_queries": victim, "gold_queries": gold,
            "calls": usage.get("calls"), "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": usage.get("completion_tokens")}


def correlation_section(results: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    analysis = (results.get("analyses") or {}).get("correlation") or {}
    rows = analysis.get("rows") or []
    summary = str(results.get("summary") or
                  f"{len(rows)} correlations of the originals' scores with human scores")
    block = (results.get("analyses") or {}).get("agreement") or analysis.get("agreement")
    return {"rows": rows, "method": analysis.get("method"),
            "notes": analysis.get("notes") or [],
            **({"agreement": block} if block else {})}, summary


def bias_section(results: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Each probe arm's effect above its placebo (`analyses.bias`), and a line counting the
    verdicts."""
    analysis = (results.get("analyses") or {}).get("bias") or {}
    rows = analysis.get("rows") or []
    counts = {k: sum(1 for r in rows if r.get("outcome") == k)
              for k in ("detects", "reversed", "blind", "inconclusive")}
    biased = [f"{r['probe']}" + (f" ({r['arm']})" if r["arm"] != "probe" else "")
              for r in rows if r.get("outcome") in ("detects", "reversed")]
    summary = (f"{len(rows)} probe tests against their placebos: "
               f"{counts['detects'] + counts['reversed']} biased"
               + (f" ({listing(biased)})" if biased else "")
               + f", {counts['blind']} without bias beyond placebo, "
               f"{counts['inconclusive']} inconclusive")
    keys = ("alpha", "alpha_eff", "correction", "n_tests", "n_boot", "effect", "interval",
            "power_rule")
    return ({"rows": rows, **{k: analysis.get(k) for k in keys},
             "notes": analysis.get("notes") or []}, summary)


def method_section(method: MethodPlan, plan: CardPlan, run_dir: Path | None,
                   results: Mapping[str, Any] | None, root: Path) -> dict[str, Any]:
    """A method's section from its run directory and results.json (None: it did not run or
    did not finish; the section then says why, from `method.reason`). Paths are relative to
    the card's folder `root`."""
    section = base_section(method, plan)
    if not method.runs or run_dir is None or results is None:
        return section
    section["run_dir"] = relative(run_dir, root)
    section["files"] = run_files(run_dir, root)
    table = ScoreTable(run_dir / "scores.parquet") if (run_dir / "scores.parquet").exists() \
        else None
    if method.key == "blindspot" and table is not None:
        section["results"], section["summary"] = blindspot_section(results, table)
    elif method.key == "discernment" and table is not None:
        section["results"], section["summary"] = discernment_section(results, table)
    elif method.key == "criteria" and table is not None:
        section["results"], section["summary"] = criteria_section(
            results, table, method.mode or "sensitivity", plan.evaluator.quality)
    elif method.key == "bias":
        section["results"], section["summary"] = bias_section(results)
    elif method.key == "position":
        section["results"] = (results.get("analyses") or {}).get("position") or {}
        section["summary"] = str(results.get("summary") or "")
        section["files"] = {"results": relative(run_dir / POSITION_FILE, root)}
        section["cost"] = dict(results.get("usage") or {})
        return section
    elif method.key == "adversarial":
        section["results"], section["summary"] = adversarial_section(
            results, section["run_dir"], str(method.attack.get("note") or ""))
        section["cost"] = attack_cost(results, run_dir)
        section["examples"] = int((results.get("counts") or {}).get("examples") or 0)
        return section
    elif method.key == "consistency":  # its own file, not a run directory's
        section["results"], section["summary"] = dict(results.get("results") or {}), str(
            results.get("summary") or "")
        section["files"] = {"results": relative(run_dir / CONSISTENCY_FILE, root)}
        section["cost"] = dict(results.get("cost") or {})
        section["examples"] = int(section["results"].get("items") or 0)  # its subset
        return section
    elif method.key == "correlation":
        section["results"], section["summary"] = correlation_section(results)
        if method.mode in STUDY_MODES:  # its own file, not a run directory's
            section["files"] = {"results": relative(run_dir / SYSTEMS_FILE, root)}
        return section
    section["cost"] = shard_cost(job_cost(results), results)
    section["backend"] = run_backend(results)
    design = design_of(results)
    if design is not None:  # a sequential design: the texts it scored against the full one
        section["design"] = design
    return section
