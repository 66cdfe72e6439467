"""Runner overheads on the built-in corpus with the lexical metrics.

Prints, side by side:
- a cold run (empty cache) against scoring every requested text naively with the same metrics
  (no deduplication, no cache): the ratio shows what deduplication saves;
- a warm rerun (everything cached) against the cold run: the ratio shows what resuming costs;
- the streamed run (chunks written to disk as they finish, then results.json and report.html,
  renamed into place) against the in-memory flow (plan, score, then write the same files), both
  cold: what streaming costs or saves.

Usage: python bench/bench_runner.py [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.cache import SQLiteCache
from evalstress.data import builtin_corpus
from evalstress.evaluators import ScoreRequest, create_evaluator
from evalstress.report import write_outputs
from evalstress.runner import make_plan, run, score_plan
from evalstress.suites import load_suite

METRICS = ["bleu", "chrf", "rouge"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=48)
    args = parser.parse_args()
    examples = builtin_corpus()[: args.limit]
    plan = make_plan(examples, load_suite("blindspot"))
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
        start = time.perf_counter()
        cold_run = score_plan(plan, [create_evaluator(n) for n in METRICS], cache=cache)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        warm_run = score_plan(plan, [create_evaluator(n) for n in METRICS], cache=cache)
        warm = time.perf_counter() - start
        memory_cache = SQLiteCache(Path(folder) / "memory.sqlite", "scores")
        start = time.perf_counter()
        in_memory = score_plan(make_plan(examples, load_suite("blindspot")),
                               [create_evaluator(n) for n in METRICS], cache=memory_cache)
        write_outputs(in_memory, {}, Path(folder) / "run-memory")
        memory = time.perf_counter() - start
        stream_cache = SQLiteCache(Path(folder) / "stream.sqlite", "scores")
        start = time.perf_counter()
        streamed = run(examples, load_suite("blindspot"), [create_evaluator(n) for n in METRICS],
                       cache=stream_cache, workers=1)
        write_outputs(streamed, {}, Path(folder) / "run")
        stream = time.perf_counter() - start

    stats = cold_run.stats["rouge"]
    print(f"examples {len(examples)}, variants {len(plan.variants)}, requested {stats.requested}, "
          f"distinct {stats.distinct} ({stats.distinct / stats.requested:.2f} of requested)")
    print(f"naive scoring (every request, no cache)  {naive:8.2f} s   1.00x")
    print(f"evalstress cold run (dedup + cache write) {cold:8.2f} s   {cold / naive:.2f}x naive")
    print(f"evalstress warm rerun (all cached)        {warm:8.2f} s   {warm / cold:.3f}x cold")
    print(f"in-memory plan + score + write (cold)    {memory:8.2f} s   1.00x")
    print(f"streamed run + write (cold)              {stream:8.2f} s   {stream / memory:.2f}x "
          "in-memory")
    assert warm_run.stats["rouge"].scored == 0


if __name__ == "__main__":
    main()
