"""What a rerun of an attack costs: the same `Attacker` cold, then again from the caches.

A fake OpenAI-compatible server (in this process, fixed latency) plays generator and gold judge;
the victim is ROUGE-L on the built-in corpus. Prints the cold and warm wall times and their ratio
(the warm rerun should cost a small fraction and make no server call), server calls, victim
queries and the share of them that the score cache served.
Usage: python bench/bench_attack.py [--examples 8] [--budget 41] [--latency 0.02]

`--baselines DATA` instead runs the victim-only methods (TextFooler-style, the rules, appendix J
with MiniLM's embedding neighbours) on SummEval against ROUGE-L, BLEU and BERTScore-F with
*assumed* gold labels (80 towards good, 20 towards bad: the label-preservation assumption these
methods make, not a judge), victims compared with the original text as paper 004's code does;
it prints the ASR table and the wall time per method. Use it where no capable gold judge is at
hand; its ASR is an upper bound on what a judge would confirm.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from collections.abc import Sequence

from evalstress.core.data import builtin_corpus
from evalstress.engine.scoring import open_cache
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, create_evaluator
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.methods import make_methods
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim, gold_evaluator


def responder(body: dict) -> Reply:
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


class AssumedLabel(Evaluator):
    """The labels a victim-only attack assumes: the example's own original is good (80); any
    other text gets `value` (80 towards good: invariance; 20 towards bad: damage)."""

    name = "assumed-label"
    score_range = (0.0, 100.0)

    def __init__(self, value: float, originals: dict[str, str]):
        super().__init__(value=value)
        self.value, self.originals = float(value), originals

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("label",)

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        return [{"label": Score(80.0 if self.originals.get(r.source) == r.text else self.value)}
                for r in requests]


def baselines(data: Path, examples: int, budget: int, out: Path | None = None,
              names: Sequence[str] = ("rules", "appendix-j:model=minilm,mlm_top=0,positions=16",
                                      "textfooler")) -> None:
    from rich.console import Console

    from evalstress.analyses.adversarial import AdversarialResult, asr_terminal_table
    from evalstress.core.data import load_examples

    items = load_examples(data, ["hypothesis=highlight", "references=references"],
                          task="summarization", limit=examples)
    cache = open_cache()
    victims = [Victim(create_evaluator(spec), aspect, cache=cache, reference_mode="original")
               for spec, aspect in (("rouge:types=rougeL", None), ("bleu", None),
                                    ("bertscore", "f"))]
    # against the original every original scores itself alike, so min-max has nothing to span:
    # BERTScore-F (cosine-based) gets 0-1
    ranges = {"bertscore": (0.0, 1.0)}
    params = AttackParams(budget=budget)
    records = []
    seconds: dict[str, float] = {}
    originals = {e.source: e.hypothesis for e in items}
    methods = make_methods(list(names))
    for method in methods:
        for direction, label in (("good", 80.0), ("bad", 20.0)):
            if not method.applies(direction):
                continue
            attacker = Attacker(items, victims, Gold([AssumedLabel(label, originals)]), [method],
                                [direction], params, ranges=ranges)
            start = time.perf_counter()
            part = f"{method.name.replace(':', '-')}-{direction}.jsonl"
            records += attacker.run(out / part if out else None)
            seconds[method.name] = seconds.get(method.name, 0.0) + time.perf_counter() - start
            print(f"{method.name} {direction}: {time.perf_counter() - start:.1f} s", flush=True)
    result = AdversarialResult.from_records(records, params.to_dict())
    Console(width=160).print(asr_terminal_table(result))
    for name, took in seconds.items():
        print(f"{name}: {took:.1f} s for {len(items)} examples x 3 victims")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--budget", type=int, default=41)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--baselines", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="folder for the attack records")
    parser.add_argument("--methods", default="rules,appendix-j:model=minilm;mlm_top=0;"
                        "positions=16,textfooler", help="methods, comma-separated (a ';' "
                        "inside a method spec stands for its own commas); the slowest last")
    args = parser.parse_args()
    if args.baselines is not None:
        names = [m.replace(";", ",") for m in args.methods.split(",")]
        baselines(args.baselines, args.examples, args.budget, args.out, names)
        return
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
