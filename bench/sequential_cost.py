"""The card's sequential verdicts against its exhaustive design, side by side in one run: for
each evaluator the same card made twice (blind spots; for a judge also the bias probes and the
criteria method), once with `exhaustive=True`, once as a model-based evaluator's card runs by
default, each with a cache of its own, and the two compared test by test.

- tests: the four-way verdicts of the card's tests, one per (blind-spot row, severity) and
  per (bias probe, arm), each evaluator aspect apart; the steps between severities (the
  monotonic check) are counted apart, as `steps`;
- same: the tests whose verdict (detects / blind / reversed / inconclusive) is the same;
- texts: texts scored (originals and variants, distinct), sequential / exhaustive;
- calls: the requests the fake server took (personas only);
- criteria same: the criteria method's items (evaluator aspect x perturbation x severity,
  paper 000's PASS / FAIL; items without a test counted too) whose verdict is the same, of
  all its items (personas only: their cards make the criteria method too).

Evaluators: the fake server's judge personas (the five planted biases at 0.4 with noise 0.3,
`fair`, `noisy:0.5`, `constant`) on the standard budget (57 built-in examples, three seeds),
and BERTScore (the shipped MiniLM) and GPT-PPL (the shipped SmolLM2) on a smaller budget (40
built-in examples, one seed) that keeps a CPU run in minutes.

Usage: python bench/sequential_cost.py [--only personas|models] [--model NAME] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from evalstress.card.make import make_card, plan_card
from evalstress.card.plan import Budget, get_budget
from evalstress.card.run import CardOptions
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import persona

MODEL = "gpt-4o-mini"
PERSONAS = ("verbosity:0.4+authority:0.4+bandwagon:0.4+sycophancy:0.4+self-preference:0.4"
            "+noisy:0.3", "fair", "noisy:0.5", "constant")
MODELS = ("bertscore", "gpt-ppl")
#: the standard budget's suites on 40 examples with one seed (a card's budget keeps the name
#: of the budget it narrows, as the real-data atlas's does)
SMALL_DATA = replace(get_budget("standard"), examples=40, seeds=1,
                     description="up to 40 examples spread over the tasks, one seed")


def criteria_verdicts(card_dir: Path) -> dict[tuple[str, ...], bool | None]:
    """The criteria method's items -> PASS (True) / FAIL (False) / no test (None)."""
    path = card_dir / "runs" / "criteria" / "results.json"
    if not path.exists():
        return {}
    return {(i["evaluator"], i["aspect"], i["perturbation"], str(i["severity"])): i["passed"]
            for i in json.loads(path.read_text())["analyses"]["criteria-confusion"]["items"]}


def verdicts(card_dir: Path) -> tuple[dict[tuple[str, ...], str], dict[tuple[str, ...], str]]:
    """The card's tests -> verdict, and its severity steps -> verdict, read from its runs."""
    tests: dict[tuple[str, ...], str] = {}
    steps: dict[tuple[str, ...], str] = {}
    blind = card_dir / "runs" / "blindspot" / "results.json"
    if blind.exists():
        for row in json.loads(blind.read_text())["analyses"]["blindspot"]["rows"]:
            where = (row["evaluator"], row["aspect"], row["perturbation"])
            for point in row["points"]:
                tests[("blindspot", *where, str(point["severity"]))] = point["test"]["verdict"]
            for step in row.get("steps") or []:
                steps[(*where, str(step["from"]), str(step["to"]))] = step["verdict"]
    bias = card_dir / "runs" / "bias" / "results.json"
    if bias.exists():
        for row in json.loads(bias.read_text())["analyses"]["bias"]["rows"]:
            tests[("bias", row["evaluator"], row["aspect"], row["probe"], row["arm"])] = \
                row["outcome"]
    return tests, steps


def texts(card_dir: Path) -> int:
    """Distinct texts the card's stress methods scored (originals and variants)."""
    total = 0
    for scores in sorted((card_dir / "runs").glob("*/scores.parquet")):
        table = pq.read_table(scores, columns=["example_id", "perturbation", "severity", "seed"])
        total += len(set(zip(*(table.column(c).to_pylist() for c in table.column_names),
                             strict=True)))
    return total


def card_pair(spec: str, budget: Budget, keys: tuple[str, ...], work: Path,
              calls: Any = None, design: dict[str, Any] | None = None) -> dict[str, Any]:
    """The card of `spec` made exhaustive and sequential; what each cost and how they agree."""
    made: dict[str, Any] = {}
    for kind in ("exhaustive", "sequential"):
        plan = plan_card(spec, budget=budget, exhaustive=kind == "exhaustive")
        plan = replace(plan, methods=tuple(
            (replace(m, design={**m.design, **(design or {})}) if m.design else m)
            if m.key in keys else replace(m, runs=False, reason="not benchmarked")
            for m in plan.methods))
        out = work / kind
        before = calls() if calls else 0
        started = time.perf_counter()
        make_card(plan, CardOptions(out=out, cache_dir=work / f"cache-{kind}", workers=1))
        made[kind] = {"seconds": time.perf_counter() - started, "texts": texts(out),
                        "calls": calls() - before if calls else None,
                        "verdicts": verdicts(out), "criteria": criteria_verdicts(out)}
    exhaustive, sequential = made["exhaustive"], made["sequential"]
    tests, steps = exhaustive["verdicts"]
    seq_tests, seq_steps = sequential["verdicts"]
    items, seq_items = exhaustive["criteria"], sequential["criteria"]
    return {"tests": len(tests), "same": sum(seq_tests.get(k) == v for k, v in tests.items()),
            "steps": len(steps), "same_steps": sum(seq_steps.get(k) == v
                                                   for k, v in steps.items()),
            "texts": (sequential["texts"], exhaustive["texts"]),
            "calls": (sequential["calls"], exhaustive["calls"]),
            "seconds": (sequential["seconds"], exhaustive["seconds"]),
            "criteria": len(items), "same_criteria": sum(
                k in seq_items and seq_items[k] == v for k, v in items.items()),
            "differ": sorted(f"{k}: {v} -> {seq_tests.get(k)}" for k, v in tests.items()
                             if seq_tests.get(k) != v) + sorted(
                f"criteria {k}: {v} -> {seq_items.get(k)}" for k, v in items.items()
                if seq_items.get(k) != v)}


def row(label: str, found: dict[str, Any]) -> None:
    """One evaluator's line of the table, printed as soon as its two cards are made."""
    seconds = "/".join(f"{s:.0f}" for s in found["seconds"])
    print(f"| {label} | {found['tests']} | {found['same']} "
          f"({found['same'] / max(1, found['tests']):.0%}) | {share(found['texts'])} "
          f"| {share(found['calls'])} | {found['same_steps']}/{found['steps']} "
          f"| {seconds} | {criteria_cell(found)} |", flush=True)


def criteria_cell(found: dict[str, Any]) -> str:
    """'11/11': the criteria items with the same verdict, of all; '-' without the method."""
    return f"{found['same_criteria']}/{found['criteria']}" if found["criteria"] else "-"


def share(pair: tuple[Any, Any]) -> str:
    used, full = pair
    return "-" if used is None or not full else f"{used}/{full} ({used / full:.0%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("personas", "models"))
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--looks", type=int, default=None,
                        help="looks of the sequential design (default: the card's)")
    parser.add_argument("--model", action="append", choices=MODELS, default=None,
                        help="only these model-based evaluators (repeatable)")
    parser.add_argument("--persona", action="append", default=None,
                        help="only these personas (repeatable)")
    args = parser.parse_args()
    design = {"looks": args.looks} if args.looks else None
    print("| evaluator | tests | same verdict | texts seq./exh. | calls seq./exh. "
          "| steps same | seconds seq./exh. | criteria same |")
    print("|---|---|---|---|---|---|---|---|")
    work = args.work or Path(tempfile.mkdtemp(prefix="sequential-cost-"))
    results: list[tuple[str, dict[str, Any]]] = []
    if args.only in (None, "personas"):
        for i, who in enumerate(args.persona or PERSONAS):
            with FakeServer(responder=persona(who), models=(MODEL,)) as server:
                spec = f"judge:model={MODEL},base_url={server.base_url},form=score-only"
                results.append((f"judge persona {who}", card_pair(
                    spec, get_budget("standard"), ("blindspot", "bias", "criteria"),
                    work / f"p{i}",
                    calls=lambda server=server: server.calls, design=design)))
            row(*results[-1])
    if args.only in (None, "models"):
        for name in args.model or MODELS:
            results.append((f"{name} (40 examples, 1 seed)",
                            card_pair(name, SMALL_DATA, ("blindspot",), work / name,
                                      design=design)))
            row(*results[-1])
    tests = same = used = full = items = same_items = 0
    for _, found in results:
        tests, same = tests + found["tests"], same + found["same"]
        used, full = used + found["texts"][0], full + found["texts"][1]
        items, same_items = items + found["criteria"], same_items + found["same_criteria"]
    print(f"| all | {tests} | {same} ({same / max(1, tests):.0%}) | "
          f"{share((used, full))} | | | | {same_items}/{items} |")
    for label, found in results:
        for line in found["differ"]:
            print(f"differs: {label}: {line}")


if __name__ == "__main__":
    main()
