"""Benchmark: one long text through the word diff and through every rule perturbation.

Run: `PYTHONPATH=src python bench/bench_longtext.py [--kb 300] [--difflib-kb 30]`

1. word diff: `evalstress.core.worddiff.word_diff` against the diff the project used before
   (`difflib.SequenceMatcher(autojunk=False)` over word lists), side by side on the same
   original and variant (10% of the words dropped at random, spread over the whole text: the
   worst case for prefix/suffix trimming). difflib is quadratic, so it runs on `--difflib-kb`
   and the growth from 1/4 of that size is printed; word_diff runs on both sizes and on `--kb`.
2. noise ratio: plain rapidfuzz Levenshtein over the word lists against `word_distance`
   (common prefix/suffix cut, small-distance hint), same pair, side by side.
3. whole text: a `--kb` text (WikiText paragraphs joined) parsed once, then every registered
   rule perturbation at its first grid severity, each with its word diff: the seconds per
   perturbation, slowest first, so a superlinear one stands out.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import time
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from evalstress.core.data import Example
from evalstress.core.text import TextParser, word_distance
from evalstress.core.worddiff import word_diff
from evalstress.perturb.base import PerturbContext, Skip, registry

DATA = Path("/work/shared/data/wikitext_paragraphs.jsonl")


def long_text(kb: int) -> str:
    rows = [json.loads(line)["text"] for line in DATA.read_text(encoding="utf-8").splitlines()
            if line]
    out: list[str] = []
    size = 0
    i = 0
    while size < kb * 1000:
        out.append(rows[i % len(rows)])
        size += len(rows[i % len(rows)]) + 2
        i += 1
    return "\n\n".join(out)[:kb * 1000]


def dropped(text: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(w for w in text.split() if rng.random() > 0.1)


def difflib_diff(original: str, text: str) -> str:
    a, b = original.split(), text.split()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(f"[-{' '.join(a[i1:i2])}-]{{+{' '.join(b[j1:j2])}+}}")
    return " ".join(out)


def seconds(fn: object, *args: str) -> float:
    start = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kb", type=int, default=300)
    parser.add_argument("--difflib-kb", type=int, default=30)
    args = parser.parse_args()

    print("1. word diff (10% of words dropped at random)")
    small, large = max(1, args.difflib_kb // 4), args.difflib_kb
    for kb in (small, large):
        original = long_text(kb)
        variant = dropped(original)
        old, new = seconds(difflib_diff, original, variant), seconds(word_diff, original, variant)
        print(f"  {kb:>5} KB: difflib {old:8.3f} s   word_diff {new:7.3f} s   "
              f"ratio {old / max(new, 1e-9):8.0f}x")
    original = long_text(args.kb)
    variant = dropped(original)
    print(f"  {args.kb:>5} KB: word_diff {seconds(word_diff, original, variant):.3f} s "
          f"(difflib not run: quadratic, {(args.kb / large) ** 2:.0f}x its {large} KB time "
          "or more)")

    print("2. noise ratio's word distance on the same pair")
    a, b = original.split(), variant.split()
    plain = seconds(lambda x, y: Levenshtein.distance(x, y), a, b)  # type: ignore[arg-type]
    ours = seconds(word_distance, a, b)  # type: ignore[arg-type]
    assert Levenshtein.distance(a, b) == word_distance(a, b)
    print(f"  {args.kb:>5} KB: Levenshtein {plain:.3f} s   word_distance {ours:.3f} s   "
          f"ratio {plain / max(ours, 1e-9):.1f}x")

    print(f"3. one {args.kb} KB text: parse once, every rule perturbation + its diff")
    text_parser = TextParser()
    example = Example("long", "summarization", "", original, (original[:2000],))
    start = time.perf_counter()
    text_parser.parse(original)
    print(f"  parse: {time.perf_counter() - start:.2f} s")
    timings = []
    for name, cls in sorted(registry().items()):
        if cls.method != "rule" or not cls.grid:
            continue
        ctx = PerturbContext(example, text_parser, [example], {})
        start = time.perf_counter()
        try:
            result = cls().apply(ctx, cls.grid[0], 0)
            if not isinstance(result, Skip):
                result.diff(original)
            outcome = "skip" if isinstance(result, Skip) else "variant"
        except Exception as exc:  # the bench reports a crash and goes on
            outcome = f"CRASH {type(exc).__name__}: {str(exc)[:60]}"
        timings.append((time.perf_counter() - start, name, outcome))
    for took, name, outcome in sorted(timings, reverse=True):
        print(f"  {took:8.3f} s  {name:<28} {outcome}")
    print(f"  total {sum(t for t, _, _ in timings):.1f} s over {len(timings)} perturbations")


if __name__ == "__main__":
    main()
