"""The criteria method's sequential rule on items that change rarely, against the exhaustive
analysis: how often the two verdicts differ and how many examples the rule scores.

Each draw is one directional item of 57 examples (the standard budget's built-in corpus): a
share `pi` of the examples changes by 1 or 2 points (a judge's whole-number rating), all in the
damaged direction, the others not at all. The sequential design (`VerdictDesign`, kind
"criteria", looks of 10 and the runner's tapering last chunks) takes the examples look by look
until the item's unit stops; its verdict is the criteria analysis's test on the examples scored
by then (one-sided Wilcoxon p < 0.05 and r >= 0.3), the exhaustive verdict the same test on all
57. Draws are seeded: the same run gives the same table.

Usage: PYTHONPATH=src python bench/criteria_sparse.py [--draws 200] [--pi 0.05 0.1 ...]
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pyarrow as pa

from evalstress.analyses.sequential_verdicts import VerdictDesign
from evalstress.analyses.stats import rank_biserial, wilcoxon_test
from evalstress.core.records import ORIGINAL

N = 57
#: where a run of 57 examples in chunks of 10 ends each chunk (`engine.pipeline.chunk_positions`)
BOUNDS = (0, 10, 20, 30, 40, 43, 47, 51, 53, 55, 56, 57)


def passes(d: np.ndarray) -> bool:
    """The criteria analysis's directional verdict on these differences."""
    p = wilcoxon_test(d, alternative="greater").pvalue
    return p is not None and p < 0.05 and (rank_biserial(d) or 0.0) >= 0.3


def sequential(d: np.ndarray) -> tuple[bool, int]:
    """The verdict on the examples the design scored before the item's unit stopped, and how
    many those were."""
    design = VerdictDesign(N, kind="criteria", looks=6)
    for start, stop in itertools.pairwise(BOUNDS):
        rows = []
        for i in range(start, stop):
            base = {"task": "summarization", "seed": 0, "evaluator": "judge", "aspect": "overall",
                    "status": "ok", "higher_is_better": True, "example_id": f"e{i}"}
            rows.append({**base, "perturbation": ORIGINAL, "severity": "0", "score": 3.0})
            rows.append({**base, "perturbation": "spelling-mistake", "severity": "0.1",
                         "score": 3.0 - d[i]})
        design.observe(pa.Table.from_pylist(rows))
        if design.stopped():
            return passes(d[:stop]), stop
    return passes(d), N


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--pi", type=float, nargs="+", default=[0.0, 0.05, 0.1, 0.15, 0.2, 0.3])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| share changing | differ from exhaustive | mean examples scored |")
    print("|---|---|---|")
    for pi in args.pi:
        differ = scored = 0
        for _ in range(args.draws):
            d = np.where(rng.random(N) < pi, rng.integers(1, 3, N).astype(float), 0.0)
            verdict, n = sequential(d)
            differ += verdict != passes(d)
            scored += n
        print(f"| {pi:g} | {differ / args.draws:.1%} | {scored / args.draws:.1f} |", flush=True)


if __name__ == "__main__":
    main()
