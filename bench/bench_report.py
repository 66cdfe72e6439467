"""The HTML report of a 20k-variant run: its size and how fast Chromium opens it.

Runs the `blindspot-full` suite (22 tests of paper 002) on SummEval articles with BLEU, chrF and
ROUGE until the run has at least `--variants` variants, writes the run directory and its report,
then opens report.html in headless Chromium (Debian's, driven by Playwright) several times and
prints the median time to the load event and to the variant browser's first page. With
`--also N` it copies the run, pads variants.parquet to N variants and measures that report too:
the browser embeds a capped sample, so the page stays about the same size.

Targets (issue 14): under 15 MB, open within 3 s.
Usage: python bench/bench_report.py [--variants 20000] [--opens 5] [--also 100000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq

from evalstress.analyses import run_analyses
from evalstress.core.data import load_examples
from evalstress.engine import variantfile
from evalstress.engine.runner import run
from evalstress.engine.variantfile import read_variants, variant_table, write_part
from evalstress.evaluators.base import create_evaluator
from evalstress.report import write_outputs
from evalstress.report.html import write_report
from evalstress.suites import load_suite

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "summeval.jsonl"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-component-update", "--disable-sync"]


def build(out: Path, variants: int) -> float:
    suite = load_suite("blindspot-full")
    per_example = sum(len(p.grid) for p in suite.perturbations) * len(suite.seeds)
    count = -(-variants // per_example) + 2  # a few more: some perturbations skip
    examples = load_examples(DATA, {"hypothesis": "highlight", "references": "references"},
                             task="summarization", limit=count)
    evaluators = [create_evaluator(name) for name in ("bleu", "chrf", "rouge")]
    result = run(examples, suite, evaluators)
    analyses = run_analyses(suite.analyses, result, suite.options)
    start = time.perf_counter()
    write_outputs(result, analyses, out, config={"command": "bench", "suite": suite.name})
    return time.perf_counter() - start


def pad(source: Path, target: Path, total: int) -> None:
    """A copy of the run whose variants.parquet holds `total` rows (clones with new seeds)."""
    shutil.copytree(source, target)
    variants = list(read_variants(source / variantfile.FILE))
    clones = (replace(variants[i % len(variants)],
                      seed=variants[i % len(variants)].seed + 100 * (i // len(variants)))
              for i in range(total))
    write_part(target / variantfile.FILE, variant_table(clones))


def open_times(report: Path, opens: int) -> tuple[float, float]:
    from playwright.sync_api import sync_playwright

    loads, ready = [], []
    with sync_playwright() as p:
        for _ in range(opens):
            with tempfile.TemporaryDirectory() as profile:
                context = p.chromium.launch_persistent_context(
                    profile, executable_path="/usr/bin/chromium", headless=True, args=FLAGS,
                    viewport={"width": 1400, "height": 900})
                page = context.new_page()
                start = time.perf_counter()
                page.goto(report.as_uri(), wait_until="load", timeout=60_000)
                loads.append(time.perf_counter() - start)
                page.wait_for_selector("#browser-list .card", timeout=60_000)
                ready.append(time.perf_counter() - start)
                context.close()
    return statistics.median(loads), statistics.median(ready)


def measure(folder: Path, opens: int, label: str) -> None:
    variants = pq.ParquetFile(folder / variantfile.FILE).metadata.num_rows
    start = time.perf_counter()
    report = write_report(folder)
    built = time.perf_counter() - start
    size = report.stat().st_size / 1e6
    load, ready = open_times(report, opens)
    print(f"{label}: {variants:,} variants -> report.html {size:.2f} MB (target < 15), "
          f"rebuilt in {built:.1f} s; Chromium median of {opens}: load event {load:.2f} s, "
          f"browser ready {ready:.2f} s (target < 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variants", type=int, default=20_000)
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--also", type=int, default=0, help="also pad a copy to N variants")
    parser.add_argument("--keep", type=Path, help="keep the run directory here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "run"
        written = build(folder, args.variants)
        print(f"run written with its report in {written:.1f} s")
        measure(folder, args.opens, "run")
        if args.also:
            padded = Path(tmp) / "padded"
            pad(folder, padded, args.also)
            measure(padded, args.opens, f"padded copy ({args.also:,})")


if __name__ == "__main__":
    main()
