"""Why MiniLM is the offline BERTScore default: agreement with SummEval experts per second.

Scores the 1600 SummEval system summaries (100 articles x 16 systems, 10 references each) with
BERTScore on the shipped MiniLM (baseline) and on any other local models given, and prints the
summary-level Kendall tau with the expert scores (per article, averaged, as SummEval reports it)
and the time relative to the baseline.

    PYTHONPATH=src python bench/bench_default_model.py [MODEL_PATH:NUM_LAYERS ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "summeval.jsonl"
ASPECTS = ("coherence", "consistency", "fluency", "relevance")


def load(path: Path) -> tuple[list[ScoreRequest], dict[str, np.ndarray], np.ndarray]:
    requests, human, docs = [], {a: [] for a in ASPECTS}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for system in row["systems"]:
            requests.append(ScoreRequest(system["summary"], row["source"],
                                         tuple(row["references"])))
            docs.append(row["id"])
            for aspect in ASPECTS:
                human[aspect].append(system[aspect])
    return requests, {a: np.array(v) for a, v in human.items()}, np.array(docs)


def main() -> None:
    data = DATA if DATA.exists() else Path("/work/shared/data/summeval.jsonl")
    requests, human, docs = load(data)
    specs = ["bertscore"]
    for given in sys.argv[1:]:
        path, _, layers = given.rpartition(":")
        specs.append(f"bertscore:model={path},num_layers={layers}")
    base_time = None
    print(f"{'model':<34}{'aspect':<10}" + "".join(f"{a[:5]:>8}" for a in ASPECTS)
          + f"{'mean':>8}{'time':>8}")
    for spec in specs:
        evaluator = create_evaluator(spec)
        start = time.perf_counter()
        rows = []
        for i in range(0, len(requests), 400):
            rows += evaluator.score(requests[i:i + 400])
        elapsed = time.perf_counter() - start
        base_time = base_time or elapsed
        for aspect in ("precision", "recall", "f"):
            values = np.array([row[aspect].value for row in rows])
            taus = [float(np.nanmean([kendalltau(values[docs == d], h[docs == d]).statistic
                                      for d in np.unique(docs)])) for h in human.values()]
            name = spec.split("model=")[-1][-33:] if "model=" in spec else "minilm (default)"
            print(f"{name:<34}{aspect:<10}" + "".join(f"{t:>8.3f}" for t in taus)
                  + f"{np.mean(taus):>8.3f}{elapsed / base_time:>7.1f}x")


if __name__ == "__main__":
    main()
