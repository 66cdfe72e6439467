"""BERTScore through evalstress (runner path, no cache) vs bert-score called directly.

Same texts both ways: SummEval highlights (hypothesis) with their 10 references, originals plus
truncation / token-drop / repeated-token variants. The direct baseline is a BERTScorer built once
(model load not timed on either side) scoring the distinct (text, references) pairs, and, for
reference, every requested pair as a naive loop over the score table would. Prints wall times and
the ratio evalstress / direct (target <= 1.1), and the distinct texts scored vs requested.

    PYTHONPATH=src python bench/bench_models.py [--examples 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from evalstress.core import models
from evalstress.core.data import load_examples
from evalstress.engine.planning import plan_dataset
from evalstress.engine.scoring import Scorer, request_for
from evalstress.evaluators import create_evaluator
from evalstress.suites import custom_suite

DATA = Path(__file__).resolve().parents[1] / ".." / ".." / "shared" / "data" / "summeval.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(DATA if DATA.exists()
                                              else "/work/shared/data/summeval.jsonl"))
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from bert_score import BERTScorer

    examples = load_examples(args.data, ["hypothesis=highlight", "references=references"],
                             task="summarization", limit=args.examples)
    suite = custom_suite(["truncation", "token-drop", "repeated-token"], [0, 1], ["blindspot"])
    plan = plan_dataset(examples, suite)
    by_id = {e.id: e for e in examples}
    requests = [request_for(e, e.hypothesis) for e in examples] + [
        request_for(by_id[v.example_id], v.text) for v in plan.variants]
    distinct = list({r.key: r for r in requests}.values())

    evaluator = create_evaluator("bertscore")  # embeds in batches of 64, as bert-score does
    path = models.resolve_model("minilm")
    direct = BERTScorer(model_type=path, num_layers=6)
    evaluator.score(distinct[:2])  # load and warm up both sides
    direct.score([distinct[0].text], [list(distinct[0].references)])

    def ours() -> Scorer:
        # a fresh evaluator each time: nothing kept from the previous repeat but the loaded model
        scorer = Scorer(create_evaluator("bertscore"), cache=None)
        scorer.score(requests)
        return scorer

    def theirs(items: list) -> None:
        direct.score([r.text for r in items], [list(r.references) for r in items],
                     batch_size=64)

    timings: dict[str, list[float]] = {"evalstress": [], "direct (distinct)": [],
                                       "direct (all requested)": []}
    scorer = None
    for _ in range(args.repeats):
        start = time.perf_counter()
        scorer = ours()
        timings["evalstress"].append(time.perf_counter() - start)
        start = time.perf_counter()
        theirs(distinct)
        timings["direct (distinct)"].append(time.perf_counter() - start)
    start = time.perf_counter()
    theirs(requests)
    timings["direct (all requested)"].append(time.perf_counter() - start)

    base = statistics.median(timings["direct (distinct)"])
    print(f"BERTScore (MiniLM-L6, 6 layers, 10 refs), {len(examples)} SummEval examples, "
          f"{len(plan.variants)} variants; median of {args.repeats} runs")
    print(f"{'path':<26}{'seconds':>10}{'ratio':>8}")
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"{name:<26}{median:>10.2f}{median / base:>8.2f}")
    assert scorer is not None
    print(f"score requests: {scorer.stats.requested}, distinct scored: {scorer.stats.scored} "
          f"({scorer.stats.scored / scorer.stats.requested:.0%} of requested), "
          f"batches: {scorer.stats.calls}, cut to window: {scorer.stats.truncated}")


if __name__ == "__main__":
    main()
