"""Judge throughput and client CPU against the fake server (separate process, fixed latency).

Prints, side by side with the ideal (concurrency / latency): measured throughput and its ratio
(target >= 0.9), client CPU per call (target <= 1 ms), calls made by a cached rerun (target 0),
and for a runner pass over examples x perturbations, server calls vs distinct texts (originals
judged once). Usage: python bench/bench_judge.py [--calls 2000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.data import builtin_corpus
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.runner import run
from evalstress.suites import custom_suite


def server_calls(base_url: str) -> int:
    with urllib.request.urlopen(base_url + "/_stats") as response:
        return int(json.load(response)["calls"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    server = subprocess.Popen([sys.executable, "-m", "evalstress.llm.fake_server", "--latency",
                               str(args.latency), "--content", "Fine text.\nRating: 4"],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            spec = (f"judge:model=fake,base_url={base_url},aspect=fluency,"
                    f"max_concurrency={args.concurrency},cache={tmp}/llm.sqlite")
            judge = create_evaluator(spec)
            requests = [ScoreRequest(f"Text number {i}. It is short.", "A source.", (),
                                     "summarization") for i in range(args.calls)]
            judge.score([ScoreRequest("warm-up text")])
            before = server_calls(base_url)
            wall0, cpu0 = time.perf_counter(), time.process_time()
            rows = judge.score(requests)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            made = server_calls(base_url) - before
            ok = sum(r["fluency"].ok for r in rows)
            ideal = args.concurrency / args.latency
            rerun0 = server_calls(base_url)
            wall_c0 = time.perf_counter()
            again = judge.score(requests)
            cached_wall = time.perf_counter() - wall_c0
            rerun_calls = server_calls(base_url) - rerun0
            assert [r["fluency"].value for r in again] == [r["fluency"].value for r in rows]
            judge.close()

            examples = builtin_corpus()[:12]
            suite = custom_suite(["truncation", "token-drop", "sentence-switching"], seeds=2)
            judge2 = create_evaluator(spec.replace("llm.sqlite", "llm2.sqlite"))
            before = server_calls(base_url)
            result = run(examples, suite, [judge2], cache=None)
            runner_calls = server_calls(base_url) - before
            distinct = len({v.text for v in result.plan.variants}
                           | {e.hypothesis for e in examples})
            judge2.close()
    finally:
        server.terminate()
        server.wait()
    print(f"{'measure':<38}{'measured':>14}{'baseline':>14}{'ratio':>10}")
    print(f"{'throughput (calls/s) vs ideal C/lat':<38}{args.calls / wall:>14.0f}{ideal:>14.0f}"
          f"{args.calls / wall / ideal:>10.3f}")
    print(f"{'client CPU per call (ms) vs 1 ms':<38}{cpu / args.calls * 1000:>14.3f}{1.0:>14.3f}"
          f"{cpu / args.calls * 1000:>10.3f}")
    print(f"{'calls made / judged (first pass)':<38}{made:>14d}{args.calls:>14d}"
          f"{made / args.calls:>10.3f}")
    print(f"{'valid scores':<38}{ok:>14d}{args.calls:>14d}{ok / args.calls:>10.3f}")
    print(f"{'cached rerun: calls':<38}{rerun_calls:>14d}{0:>14d}{'':>10}")
    print(f"{'cached rerun: wall (s) vs first pass':<38}{cached_wall:>14.3f}{wall:>14.3f}"
          f"{cached_wall / wall:>10.3f}")
    print(f"{'runner: server calls vs distinct texts':<38}{runner_calls:>14d}{distinct:>14d}"
          f"{runner_calls / distinct:>10.3f}")
    print(f"{'runner: rows in score table':<38}{len(result.table):>14d}")


if __name__ == "__main__":
    main()
