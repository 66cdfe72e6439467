"""Generation-stage throughput against the loopback fake server's ideal, and a cached rerun.

The fake OpenAI server runs in its own process with a fixed latency and answers every request
with a valid continuation of the text it was asked about (so every unit is accepted on its first
ask and the count of calls equals the count of units). For each concurrency C the stage writes,
extracts and validates N continuation variants; the ideal is C / latency units per second. The
same jobs sent through the bare TextGenerator (no prompts built, no validation) show how much of
the gap is the stage's own work. A rerun on the same response cache must make 0 calls.

Usage: python bench/bench_generate.py [--units 2000] [--latency 0.05] [--concurrency 16 64]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.core.data import builtin_corpus
from evalstress.core.text import TextParser
from evalstress.engine.generation import GenerationOptions, generate_variants, llm_units, sample_index
from evalstress.llm.generate import GenerationJob, TextGenerator
from evalstress.suites import custom_suite

SERVER = textwrap.dedent("""
    import asyncio, re, sys
    from evalstress.llm.fake_server import FakeServer, Reply
    BLOCK = re.compile(r"<text>\\n(.*?)\\n</text>", re.DOTALL)
    def reply(request):
        text = BLOCK.findall(request["messages"][-1]["content"])[-1]
        return Reply(f"<text>\\n{text} Everyone agreed to meet again the next week.\\n</text>")
    server = FakeServer(latency=float(sys.argv[1]), responder=reply, keep_requests=False)
    async def main():
        task = asyncio.create_task(server.serve())
        while not server._ready.is_set():
            await asyncio.sleep(0.01)
        print(server.base_url, flush=True)
        await task
    asyncio.run(main())
""")


def server_calls(base_url: str) -> int:
    with urllib.request.urlopen(base_url + "/_stats") as response:
        return int(json.load(response)["calls"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.latency)],
                              stdout=subprocess.PIPE, text=True, env=env)
    examples = builtin_corpus()
    seeds = -(-args.units // len(examples))
    units = llm_units(examples, custom_suite(["continuation"], seeds=seeds))[:args.units]
    text_parser = TextParser()
    text_parser.parse_many([e.hypothesis for e in examples])
    rows = []
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        warm = TextGenerator("fake", base_url, cache=False)  # imports and first connections
        warm.generate_many([GenerationJob.of([{"role": "user", "content": "<text>\nHi.\n"
                                                "</text>"}], i) for i in range(8)])
        for concurrency in args.concurrency:
            with tempfile.TemporaryDirectory() as tmp:
                spec = dict(model="fake", base_url=base_url, max_concurrency=concurrency,
                            cache=f"{tmp}/llm.sqlite")
                gen = TextGenerator(**spec)  # type: ignore[arg-type]
                before = server_calls(base_url)
                wall0, cpu0 = time.perf_counter(), time.process_time()
                outcome = generate_variants(examples, units, gen, text_parser,
                                            options=GenerationOptions(max_reasks=2))
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                calls = server_calls(base_url) - before
                gen.close()
                accepted = len(outcome.variants)

                again = TextGenerator(**spec)  # type: ignore[arg-type]
                before = server_calls(base_url)
                wall_c0 = time.perf_counter()
                rerun = generate_variants(examples, units, again, text_parser)
                cached_wall = time.perf_counter() - wall_c0
                rerun_calls = server_calls(base_url) - before
                assert [v.text for v in rerun.variants] == [v.text for v in outcome.variants]
                again.close()

                bare = TextGenerator(**{**spec, "cache": False})  # type: ignore[arg-type]
                jobs = [GenerationJob.of(u.perturbation.messages(
                    u.example.hypothesis, u.example.task, u.severity),
                    sample_index(u.seed, 0) + 500) for u in units]  # fresh samples: no hits
                wall_b0 = time.perf_counter()
                bare.generate_many(jobs)
                bare_wall = time.perf_counter() - wall_b0
            ideal = concurrency / args.latency
            rows.append((concurrency, len(units), accepted, calls, wall, cpu, ideal,
                         rerun_calls, cached_wall, bare_wall))
    finally:
        server.terminate()
        server.wait()
    print(f"{'C':>4}{'units':>7}{'accepted':>9}{'calls':>7}{'units/s':>9}{'ideal':>7}"
          f"{'ratio':>7}{'bare/s':>8}{'bare ratio':>11}{'cpu ms/unit':>12}{'rerun calls':>12}"
          f"{'rerun s':>9}")
    for (c, n, accepted, calls, wall, cpu, ideal, rerun_calls, cached_wall, bare_wall) in rows:
        print(f"{c:>4}{n:>7}{accepted:>9}{calls:>7}{n / wall:>9.0f}{ideal:>7.0f}"
              f"{n / wall / ideal:>7.2f}{n / bare_wall:>8.0f}{n / bare_wall / ideal:>11.2f}"
              f"{cpu / n * 1000:>12.2f}{rerun_calls:>12d}{cached_wall:>9.2f}")


if __name__ == "__main__":
    main()
