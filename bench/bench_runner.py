"""Runner overheads on the built-in corpus with the lexical metrics.

Prints, side by side:
- a cold run (empty cache) against scoring every requested text naively with the same metrics
  (no deduplication, no cache): the ratio shows what deduplication saves;
- a warm rerun (everything cached) against the cold run: the ratio shows what resuming costs;
- a run in chunks of 8 examples against one chunk of the whole set, both cold and both writing
  results.json and report.html: what streaming costs over holding everything at once.

Usage: python bench/bench_runner.py [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.core.cache import SQLiteCache
from evalstress.core.data import builtin_corpus
from evalstress.engine.planning import plan_dataset
from evalstress.engine.runner import run
from evalstress.evaluators import ScoreRequest, create_evaluator
from evalstress.report import write_outputs
from evalstress.suites import load_suite

METRICS = ["bleu", "chrf", "rouge"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=48)
    args = parser.parse_args()
    examples = builtin_corpus()[: args.limit]
    plan = plan_dataset(examples, load_suite("blindspot"))
    by_id = {e.id: e for e in examples}
    requests = [ScoreRequest(e.hypothesis, e.source, e.references, e.task) for e in examples]
    requests += [ScoreRequest(v.text, by_id[v.example_id].source, by_id[v.example_id].references,
                              by_id[v.example_id].task) for v in plan.variants]

    start = time.perf_counter()
    for name in METRICS:
        evaluator = create_evaluator(name)
        for i in range(0, len(requests), 256):
            evaluator.score(requests[i:i + 256])
    naive = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as folder:
        cache = SQLiteCache(Path(folder) / "scores.sqlite", "scores")
        suite = load_suite("blindspot")
        start = time.perf_counter()
        cold_run = run(examples, suite, [create_evaluator(n) for n in METRICS], cache=cache,
                       workers=1)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        warm_run = run(examples, suite, [create_evaluator(n) for n in METRICS], cache=cache,
                       workers=1)
        warm = time.perf_counter() - start
        timings = {}
        for label, chunk in (("whole", len(examples)), ("chunked", 8)):
            fresh = SQLiteCache(Path(folder) / f"{label}.sqlite", "scores")
            start = time.perf_counter()
            done = run(examples, suite, [create_evaluator(n) for n in METRICS], cache=fresh,
                       workers=1, chunk_size=chunk)
            write_outputs(done, {}, Path(folder) / f"run-{label}")
            timings[label] = time.perf_counter() - start

    stats = cold_run.stats["rouge"]
    print(f"examples {len(examples)}, variants {len(plan.variants)}, requested {stats.requested}, "
          f"distinct {stats.distinct} ({stats.distinct / stats.requested:.2f} of requested)")
    print(f"naive scoring (every request, no cache)  {naive:8.2f} s   1.00x")
    print(f"evalstress cold run (dedup + cache write) {cold:8.2f} s   {cold / naive:.2f}x naive")
    print(f"evalstress warm rerun (all cached)        {warm:8.2f} s   {warm / cold:.3f}x cold")
    whole, chunked = timings["whole"], timings["chunked"]
    print(f"one chunk + write (cold)                 {whole:8.2f} s   1.00x")
    print(f"chunks of 8 + write (cold)               {chunked:8.2f} s   {chunked / whole:.2f}x "
          "one chunk")
    assert warm_run.stats["rouge"].scored == 0


if __name__ == "__main__":
    main()
