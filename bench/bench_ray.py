"""Ray against a local run on cheap metrics (BLEU + chrF): where the time goes.

Runs the same command three ways, each with a fresh score cache, on N WikiText paragraphs (each
its own reference; the built-in corpus where the shared data is absent): a local serial run,
the same on a Ray started in this process with `--cpus` CPUs (the shards as Ray tasks, then the
driver's pass), and the driver's pass alone (time of the Ray run minus its shards, read from
the progress events). Ray's start-up is timed apart and left out. Prints seconds per way and
checks that the Ray run's score table is the local run's.

Usage: python bench/bench_ray.py [--examples 200] [--suite blindspot] [--cpus 2]
       [--src DIR]   (import evalstress from DIR, e.g. an older checkout's src, to compare)
Native thread pools are held to one thread (RAYON_NUM_THREADS=1). Timings are of a shared
machine: compare the rows of one printout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data/wikitext_paragraphs.jsonl")


class Timer:
    """A Progress that notes when the shards finished (the driver's pass starts then)."""

    def __init__(self) -> None:
        self.shards_done: float | None = None

    def start(self, label: str, total: int | None = None) -> None:
        pass

    def advance(self, label: str, n: int = 1) -> None:
        pass

    def finish(self, label: str) -> None:
        if label == "ray shards":
            self.shards_done = time.perf_counter()


def examples_of(count: int) -> list[Any]:
    from evalstress.core.data import Example, builtin_corpus

    if not DATA.exists():
        return builtin_corpus()[:count]
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return [Example(f"{row['id']}-{i}", "open-ended", "", row["text"], (row["text"],))
            for i, row in zip(range(count), rows, strict=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--suite", default="blindspot")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = "1"
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ["PYTHONPATH"] = str(args.src)  # the Ray workers import the same evalstress
    sys.path.insert(0, str(args.src))
    import pandas as pd
    import ray

    from evalstress.engine.ray import run_on_ray
    from evalstress.engine.runner import run
    from evalstress.engine.scoring import open_cache
    from evalstress.evaluators.base import create_evaluator
    from evalstress.suites import load_suite

    examples = examples_of(args.examples)
    print(f"{len(examples)} examples, suite {args.suite}, BLEU + chrF, evalstress from "
          f"{args.src}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        local = run(examples, load_suite(args.suite), [create_evaluator("bleu"),
                                                       create_evaluator("chrf")],
                    cache=open_cache(folder / "local.sqlite"), workers=1)
        local_s = time.perf_counter() - started
        print(f"local, 1 process:      {local_s:7.1f} s", flush=True)
        started = time.perf_counter()
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(args.src),
                                           "RAYON_NUM_THREADS": "1"}})
        print(f"ray start-up:          {time.perf_counter() - started:7.1f} s (left out)",
              flush=True)
        try:
            timer = Timer()
            started = time.perf_counter()
            on_ray = run_on_ray(examples, load_suite(args.suite),
                                [create_evaluator("bleu"), create_evaluator("chrf")],
                                cache=open_cache(folder / "ray.sqlite"), progress=timer,
                                shards=args.cpus, workers=1)
            ended = time.perf_counter()
            ray_s = ended - started
        finally:
            ray.shutdown()
        driver = ended - timer.shards_done if timer.shards_done else float("nan")
        print(f"ray, {args.cpus} shards:         {ray_s:7.1f} s, of which the driver's pass "
              f"{driver:.1f} s; ray / local {ray_s / local_s:.2f}", flush=True)
        pd.testing.assert_frame_equal(local.table, on_ray.table)
        print("the Ray run's score table is the local run's", flush=True)


if __name__ == "__main__":
    main()
