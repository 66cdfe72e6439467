"""What a rerun of an attack costs: the same `Attacker` cold, then again from the caches.

A fake OpenAI-compatible server (in this process, fixed latency) plays generator and gold judge;
the victim is ROUGE-L on the built-in corpus. Prints the cold and warm wall times and their ratio
(the warm rerun should cost a small fraction and make no server call), server calls, victim
queries and the share of them that the score cache served.
Usage: python bench/bench_attack.py [--examples 8] [--budget 41] [--latency 0.02]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalstress.attack.methods import make_methods
from evalstress.attack.objective import AttackParams
from evalstress.attack.run import Attacker
from evalstress.attack.scoring import Gold, Victim, gold_evaluator
from evalstress.data import builtin_corpus
from evalstress.evaluators.base import create_evaluator
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.llm.generate import TextGenerator
from evalstress.runner import open_cache


def responder(body: dict) -> Reply:  # type: ignore[type-arg]
    if body["messages"][0]["content"].startswith("You write texts"):
        return Reply(f"<text>A rewritten text, variant {body['seed']}.</text>")
    return Reply("65")


def attack(url: str, cache_dir: Path, examples: int, params: AttackParams) -> tuple[float, int]:
    cache = open_cache(cache_dir / "scores.sqlite")
    generator = TextGenerator.from_spec(f"model=gen,base_url={url},cache={cache_dir}/llm.sqlite")
    gold = gold_evaluator(f"judge:model=gold,base_url={url},cache={cache_dir}/llm.sqlite",
                          params.gold_samples)
    victim = Victim(create_evaluator("rouge:types=rougeL"), cache=cache)
    attacker = Attacker(builtin_corpus()[:examples], [victim], Gold([gold], cache=cache),
                        make_methods(["adveval"], generator=generator), ["good", "bad"], params)
    start = time.perf_counter()
    records = attacker.run()
    seconds = time.perf_counter() - start
    generator.close()
    gold.close()
    return seconds, sum(r.queries for r in records)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--budget", type=int, default=41)
    parser.add_argument("--latency", type=float, default=0.02)
    args = parser.parse_args()
    params = AttackParams(budget=args.budget, gold_samples=4, stop_threshold=None)
    with tempfile.TemporaryDirectory() as tmp, FakeServer(responder=responder,
                                                           latency=args.latency) as server:
        cold, queries = attack(server.base_url, Path(tmp), args.examples, params)
        calls = server.calls
        warm, again = attack(server.base_url, Path(tmp), args.examples, params)
        print(f"attacks: {args.examples} examples x 2 directions, budget {args.budget}")
        print(f"victim queries: {queries} (rerun {again}); server calls cold {calls}, "
              f"rerun {server.calls - calls}")
        print(f"cold {cold:.2f} s, warm rerun {warm:.2f} s, ratio {warm / cold:.3f}")


if __name__ == "__main__":
    main()
