"""Judge throughput and client CPU against the fake server (separate process, fixed latency).

For each concurrency C and each transport (lean aiohttp, the openai SDK), prints side by side
with the ideal (C / latency): measured throughput and its ratio (target >= 0.9 at C=16..128),
client CPU per call (target <= 0.5 ms); then calls made by a cached rerun (target 0) and, for a
runner pass over examples x perturbations, server calls vs distinct texts (originals judged once).
Usage: python bench/bench_judge.py [--calls 2000] [--concurrency 16,32,64,128]
       [--transports aiohttp,openai] [--latency 0.5,0.05]
The default latencies: 500 ms, what hosted endpoints answer in (0.5-3 s), where the client is
the only thing measured; 50 ms, where the ideal (C / latency: 1,280 calls/s at C=64) asks more
CPU than a 2-core machine running both the client and the fake server has, so the ratio there
shows the machine's bound as much as the client's.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.core.data import builtin_corpus
from evalstress.engine.runner import run
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.suites import custom_suite


def server_calls(base_url: str) -> int:
    with urllib.request.urlopen(base_url + "/_stats") as response:
        return int(json.load(response)["calls"])


def measure(base_url: str, tmp: str, concurrency: int, transport: str, calls: int,
            tag: str) -> tuple[float, float, int, list[float | None], Any]:
    """Judge `calls` fresh texts at one concurrency; wall s, CPU s, server calls, scores."""
    os.environ["EVALSTRESS_LLM_TRANSPORT"] = transport
    spec = (f"judge:model=fake,base_url={base_url},aspect=fluency,"
            f"max_concurrency={concurrency},cache={tmp}/llm-{tag}.sqlite")
    judge = create_evaluator(spec)
    requests = [ScoreRequest(f"Text number {i} ({tag}). It is short.", "A source.", (),
                             "summarization") for i in range(calls)]
    judge.score([ScoreRequest(f"warm-up text {tag}")])
    before = server_calls(base_url)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rows = judge.score(requests)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    made = server_calls(base_url) - before
    return wall, cpu, made, [r["fluency"].value for r in rows], (judge, requests)


def bench_at(latency: float, args: argparse.Namespace, levels: list[int],
             transports: list[str], env: dict[str, str], runner: bool) -> None:
    """Every concurrency and transport against a fake server with this latency."""
    server = subprocess.Popen([sys.executable, "-m", "evalstress.llm.fake_server", "--latency",
                               str(latency), "--content", "Fine text.\nRating: 4"],
                              stdout=subprocess.PIPE, text=True, env=env)
    lines = []
    runner_calls = distinct = 0
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            last: Any = None
            for concurrency in levels:
                for transport in transports:
                    tag = f"{transport}-{concurrency}"
                    wall, cpu, made, scores, last = measure(base_url, tmp, concurrency,
                                                            transport, args.calls, tag)
                    ideal = concurrency / latency
                    ok = sum(v is not None for v in scores)
                    lines.append((concurrency, transport, args.calls / wall, ideal,
                                  cpu / args.calls * 1000, made, ok))
            judge, requests = last
            rerun0 = server_calls(base_url)
            wall_c0 = time.perf_counter()
            judge.score(requests)
            cached_wall = time.perf_counter() - wall_c0
            rerun_calls = server_calls(base_url) - rerun0
            judge.close()
            if runner:
                examples = builtin_corpus()[:12]
                suite = custom_suite(["truncation", "token-drop", "sentence-switching"], seeds=2)
                judge2 = create_evaluator(f"judge:model=fake,base_url={base_url},"
                                          f"aspect=fluency,max_concurrency=64,"
                                          f"cache={tmp}/llm-runner.sqlite")
                before = server_calls(base_url)
                result = run(examples, suite, [judge2], cache=None)
                runner_calls = server_calls(base_url) - before
                distinct = len({v.text for v in result.plan.variants}
                               | {e.hypothesis for e in examples})
                judge2.close()
    finally:
        server.terminate()
        server.wait()
    print(f"latency {latency * 1000:.0f} ms, {args.calls} calls per line")
    print(f"{'C':>5} {'transport':<10}{'calls/s':>10}{'ideal':>10}{'ratio':>8}"
          f"{'CPU ms/call':>13}{'server calls':>14}{'valid':>8}")
    for concurrency, transport, rate, ideal, cpu_ms, made, ok in lines:
        print(f"{concurrency:>5} {transport:<10}{rate:>10.0f}{ideal:>10.0f}{rate / ideal:>8.3f}"
              f"{cpu_ms:>13.3f}{made:>14d}{ok:>8d}")
    print(f"{'cached rerun: calls':<38}{rerun_calls:>14d} (target 0), wall {cached_wall:.3f} s")
    if runner:
        print(f"{'runner: server calls vs distinct texts':<38}{runner_calls:>14d}{distinct:>14d}"
              f"{runner_calls / distinct:>10.3f}")
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", default="16,32,64,128")
    parser.add_argument("--transports", default="aiohttp,openai")
    parser.add_argument("--latency", default="0.5,0.05",
                        help="server latencies in seconds, comma-separated")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    transports = args.transports.split(",")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    for i, latency in enumerate(float(x) for x in args.latency.split(",")):
        bench_at(latency, args, levels, transports, env, runner=i == 0)


if __name__ == "__main__":
    main()
