"""Detection power of the card's bias test against the planted bias's strength and the number of
examples, measured on the fake server's personas; writes docs/bias-power.md and its numbers,
docs/bias-power.json.

Each replicate asks the persona `authority:S+noisy:0.3` (an authority bias of S scale points on
1-5, and noise of standard deviation 0.3 on every answer, drawn afresh per replicate) about the
card's bias suite on the built-in corpus, three seeds as the standard budget runs it, every
probe and placebo as the card makes them. The persona's rating is read as the judge reads it
(the logprob-weighted value, `llm.personas.value_of`), without a server: the numbers are those
a card would get, faster. The analysis is the card's (`analyses.bias`: all 7 probe tests, Holm).

- power: the share of replicates whose authority test says "biased toward";
- false alarms: the share of replicates in which any of the 6 other tests, none planted, says
  biased (toward or against).

Usage: python bench/bias_power.py [--replicates 40] [--check]; --check compares the committed
page with one rendered from the committed numbers (what tests/test_bias_power_page.py does).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from evalstress.analyses.bias import bias_analysis
from evalstress.card.data import spread_over_tasks
from evalstress.core.data import Example, builtin_corpus
from evalstress.core.text import TextParser
from evalstress.llm.personas import Request, parse_persona, value_of
from evalstress.perturb.base import PerturbContext, Variant, get_perturbation
from evalstress.suites import load_suite

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "bias-power.md"
DATA = ROOT / "docs" / "bias-power.json"
MODEL = "gpt-4o-mini"
STRENGTHS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
EXAMPLES = (10, 20, 40, 57)
SEEDS = (0, 1, 2)
NOISE = 0.3
PLANTED = "authority"
SCALE = (1, 5)


def probes() -> list[Any]:
    """The card's bias probes: the suite's, and self-preference given the judge's family."""
    made = [plan.perturbation for plan in load_suite("bias").perturbations]
    return [*made, get_perturbation("self-preference", family=MODEL)]


def texts_of(examples: Sequence[Example]) -> list[tuple[Example, str, str, int, str]]:
    """(example, perturbation, arm, seed, text) of every original and probe variant."""
    parser = TextParser()
    out = [(e, "original", "", 0, e.hypothesis) for e in examples]
    for probe in probes():
        for e in examples:
            for arm in type(probe).grid:
                for seed in SEEDS:
                    made = probe.apply(PerturbContext(e, parser), arm, seed)
                    if isinstance(made, Variant):
                        out.append((e, probe.name, str(arm), seed, made.text))
    return out


def table(texts: Sequence[tuple[Example, str, str, int, str]], strength: float,
          replicate: int) -> pd.DataFrame:
    """The score table of one replicate: the persona's rating of every text."""
    persona = parse_persona(f"{PLANTED}:{strength}+noisy:{NOISE}")
    rows = []
    for example, pert, arm, seed, text in texts:
        request = Request(MODEL, SCALE, example.source, (text,), f"replicate {replicate}")
        rows.append({"example_id": example.id, "task": example.task, "evaluator": "judge",
                     "aspect": "overall", "perturbation": pert, "severity": arm,
                     "severity_rank": 0, "seed": seed, "score": value_of(persona, request, text),
                     "higher_is_better": True, "status": "ok"})
    return pd.DataFrame(rows)


def measure(replicates: int) -> dict[str, Any]:
    """Power and false alarms per strength and number of examples."""
    examples = spread_over_tasks(builtin_corpus(), max(EXAMPLES))
    texts = texts_of(examples)
    order = {e.id: i for i, e in enumerate(examples)}
    cells = []
    for strength in STRENGTHS:
        for n in EXAMPLES:
            kept = [t for t in texts if order[t[0].id] < n]
            detected = alarms = 0
            for replicate in range(replicates):
                result = bias_analysis(table(kept, strength, replicate), seed=replicate)
                detected += any(r.probe == PLANTED and r.outcome == "detects"
                                for r in result.rows)
                alarms += any(r.probe != PLANTED and r.outcome in ("detects", "reversed")
                              for r in result.rows)
            cells.append({"strength": strength, "examples": n, "replicates": replicates,
                          "power": detected / replicates, "false_alarms": alarms / replicates})
            print(f"S={strength} n={n}: power {detected}/{replicates}, false alarms "
                  f"{alarms}/{replicates}", file=sys.stderr, flush=True)
    return {"persona": f"{PLANTED}:S+noisy:{NOISE}", "model": MODEL, "seeds": len(SEEDS),
            "strengths": list(STRENGTHS), "examples": list(EXAMPLES), "cells": cells}


def render(data: dict[str, Any]) -> str:
    """The page of the measured numbers."""
    cells = {(c["strength"], c["examples"]): c for c in data["cells"]}
    reps = data["cells"][0]["replicates"] if data["cells"] else 0
    head = ["planted strength S"] + [f"{n} examples" for n in data["examples"]]
    lines = [
        "# Bias probes: detection power against strength and examples",
        "",
        "How often the card's bias method finds a planted bias, by its strength and the number "
        "of examples, and how often it calls an unplanted probe biased. Made by "
        "`python bench/bias_power.py`; `tests/test_bias_power_page.py` holds this page to its "
        "numbers (`docs/bias-power.json`).",
        "",
        f"The judge is the fake server's persona `{data['persona']}`: an authority bias of S "
        f"points on the 1-5 scale, with noise of standard deviation {NOISE} on every answer. "
        f"Each cell is {reps} replicates (the noise drawn afresh), {data['seeds']} seeds, the "
        "card's bias suite with self-preference, all 7 tests corrected together (Holm) as the "
        "card does. The tolerance is 0.2 x the spread of the originals' scores, about 0.11 "
        "here: a bias below it is not meant to be called one.",
        "",
        "Power: the share of replicates whose authority test says \"biased toward an invented "
        "citation\".",
        "",
        "| " + " | ".join(head) + " |", "|" + "---|" * len(head),
    ]
    for s in data["strengths"]:
        lines.append("| " + " | ".join([f"{s:g}"] + [f"{cells[(s, n)]['power']:.0%}"
                                                     for n in data["examples"]]) + " |")
    lines += ["", "False alarms: the share of replicates in which any of the other 6 probe "
              "tests, none of them planted, says biased (toward or against).", "",
              "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in data["strengths"]:
        lines.append("| " + " | ".join([f"{s:g}"] + [f"{cells[(s, n)]['false_alarms']:.0%}"
                                                     for n in data["examples"]]) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicates", type=int, default=40)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        same = PAGE.read_text(encoding="utf-8") == render(json.loads(DATA.read_text("utf-8")))
        print("the page matches its numbers" if same else "the page departs from its numbers")
        sys.exit(0 if same else 1)
    data = measure(args.replicates)
    DATA.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    PAGE.write_text(render(data), encoding="utf-8")
    print(f"wrote {PAGE} and {DATA}")


if __name__ == "__main__":
    main()
