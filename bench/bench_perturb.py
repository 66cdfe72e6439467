"""Benchmark: the whole rule-based catalogue against one spaCy parse pass, and against nlpaug.

Run: `PYTHONPATH=src python bench/bench_perturb.py [--limit N] [--seeds 5]`

1. parse pass: `TextParser.parse_many` over the WikiText paragraphs (fresh parser);
2. perturbation pass: every registered rule-based perturbation x every grid severity x seeds over
   the same paragraphs with a fresh parser, the parse included once (what `plan_dataset` does);
3. side by side with nlpaug for the operations it also offers (random word deletion, random
   word swap, random character deletion, keyboard typos), same texts, same number of variants;
   left out, with a note, when nlpaug (the `bench` extra) is not installed.
Prints wall times and ratios; the target is a catalogue pass <= 3x the parse pass.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from evalstress.core.data import Example
from evalstress.core.text import TextParser, load_spacy
from evalstress.engine.planning import plan_dataset
from evalstress.perturb.base import PerturbContext, registry
from evalstress.suites import Suite

DATA = Path(__file__).resolve().parents[1] / ".." / ".." / "shared" / "data"


def load_texts(limit: int | None) -> list[str]:
    path = DATA / "wikitext_paragraphs.jsonl"
    if not path.exists():
        path = Path("/work/shared/data/wikitext_paragraphs.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [r["text"] for r in rows][:limit]


def timed(label: str, fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - start
    print(f"  {label:<44} {elapsed:9.2f} s", flush=True)
    return elapsed, out


def catalogue_suite(seeds: int) -> Suite:
    names = [n for n, cls in registry().items() if cls.method == "rule"]
    return Suite.from_dict({"name": "catalogue", "perturbations": names, "seeds": seeds})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="first N paragraphs (all: 2000)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--no-nlpaug", action="store_true")
    parser.add_argument("--profile", action="store_true", help="per-perturbation times")
    args = parser.parse_args()

    texts = load_texts(args.limit)
    examples = [Example(f"wiki-{i}", "open-ended", "", t) for i, t in enumerate(texts)]
    load_spacy()  # model loading is not part of either pass
    print(f"{len(texts)} WikiText paragraphs, {args.seeds} seeds")

    parse_s, _ = timed("parse pass (TextParser.parse_many)", lambda: TextParser().parse_many(texts))

    suite = catalogue_suite(args.seeds)
    units = sum(len(p.grid) for p in suite.perturbations) * len(suite.seeds)
    fresh = TextParser()
    pert_s, plan = timed(f"catalogue pass ({len(suite.perturbations)} perturbations, "
                         f"{units} units/text)", lambda: plan_dataset(examples, suite, parser=fresh))
    print(f"  variants {len(plan.variants)}, skips {len(plan.skips)}, parses {fresh.parses}")
    print(f"  ratio catalogue / parse = {pert_s / parse_s:.2f}x   (target <= 3x)")
    print(f"  per unit of work: {1e6 * (pert_s - parse_s) / (len(texts) * units):.1f} us "
          "(parse time subtracted)")

    if args.profile:
        per: dict[str, float] = {}
        for plan_item in suite.perturbations:
            shared: dict[str, Any] = {}
            ctxs = [PerturbContext(e, fresh, examples, shared) for e in examples]
            start = time.perf_counter()
            for ctx in ctxs:
                for sev in plan_item.grid:
                    for seed in suite.seeds:
                        plan_item.perturbation.apply(ctx, sev, seed)
            per[plan_item.name] = time.perf_counter() - start
        print("\n  per perturbation (s, all severities and seeds):")
        for name, sec in sorted(per.items(), key=lambda kv: -kv[1]):
            print(f"    {name:<24} {sec:7.2f}")

    if args.no_nlpaug:
        return
    compare_nlpaug(examples, fresh, args.seeds)


def compare_nlpaug(examples: list[Example], parser: TextParser, seeds: int) -> None:
    """Same texts, same number of outputs: ours (parse already cached) vs nlpaug, when
    installed (the `bench` extra); without it, one line says the comparison was left out."""
    try:
        import nlpaug.augmenter.char as nac
        import nlpaug.augmenter.word as naw
    except ImportError:
        print("\n  nlpaug is not installed: side-by-side comparison skipped "
              "(pip install 'evalstress[bench]' to run it)")
        return

    texts = [e.hypothesis for e in examples]
    pairs = [
        ("token-drop", 0.3, naw.RandomWordAug(action="delete", aug_p=0.3, aug_max=None)),
        ("local-swap", 0.3, naw.RandomWordAug(action="swap", aug_p=0.3, aug_max=None)),
        ("char-deletion", 50, nac.RandomCharAug(action="delete", aug_char_max=1,
                                                aug_word_p=50 / 200, aug_word_max=None)),
        ("char-typo", 50, nac.KeyboardAug(aug_char_max=1, aug_word_p=50 / 200,
                                          aug_word_max=None)),
    ]
    from evalstress.perturb.base import get_perturbation

    print("\n  side by side with nlpaug (parse excluded: both start from the text in memory)")
    print(f"  {'operation':<16}{'evalstress s':>14}{'nlpaug s':>12}{'ratio':>9}")
    for name, severity, aug in pairs:
        pert = get_perturbation(name)
        ctxs = [PerturbContext(e, parser, examples, {}) for e in examples]
        start = time.perf_counter()
        for ctx in ctxs:
            for seed in range(seeds):
                pert.apply(ctx, severity, seed)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        for seed in range(seeds):
            random.seed(seed)
            aug.augment(texts)
        theirs = time.perf_counter() - start
        print(f"  {name:<16}{ours:>14.2f}{theirs:>12.2f}{ours / theirs:>8.2f}x")


if __name__ == "__main__":
    main()
