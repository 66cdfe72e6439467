"""The score file of a 100,000-example run: row groups, footer and the time to read one key.

Builds a synthetic score table of the `blindspot-full` suite's shape (every perturbation x
severity x seed of it, BLEU + chrF + ROUGE: 5 aspects) with cheap fake rows, written chunk by
chunk through the run directory's own writer (`Staging.write_chunk`, 64 examples a chunk),
then merges the parts as `Staging.finalize` does (`write_merged`), prints the time that took,
the file's row groups (all, and the most of one key), its footer's size, and the seconds to open
the file and read one key (one perturbation of one aspect, as an analysis does) with
`ScoreTable.read`. With --one-pass it also writes the same parts as one pass of the grouped
writer (a row group per key per million rows held: what finalize wrote before the merge) and
reads the same key from that file.

Target: at most 64 row groups per key and a read of one key under 1 s at 100,000 examples.
Usage: python bench/bench_score_merge.py [--examples 100000] [--one-pass] [--keep DIR]
(--keep DIR: build there and keep it; the parts found there are used again.)
Disk: about 5 bytes a score row for each of parts, spill and final file (~2.5 GB at 100,000
examples, 225 million rows, while it runs). Timings are of a shared machine.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from evalstress.core.scoretable import (  # noqa: E402
    MAX_GROUPS_PER_KEY,
    SCORE_SCHEMA,
    ScoreTable,
    write_grouped,
    write_merged,
)
from evalstress.engine.rundir import SCORE_OPTIONS, SCORE_PART_OPTIONS, Staging  # noqa: E402
from evalstress.suites import load_suite  # noqa: E402

CHUNK = 64
ASPECTS = (("bleu", "bleu"), ("chrf", "chrf"), ("rouge", "rouge1"), ("rouge", "rouge2"),
           ("rouge", "rougeL"))


def units(suite_name: str) -> list[tuple[str, str, int, int]]:
    """(perturbation, severity, rank, seed) of every unit the suite runs on an example."""
    suite = load_suite(suite_name)
    return [(p.name, str(s), rank, seed) for p in suite.perturbations
            for rank, s in enumerate(p.grid) for seed in suite.seeds]


def chunk_tables(index: int, size: int, plan: list[tuple[str, str, int, int]],
                 rng: np.random.Generator) -> list[pa.Table]:
    """One chunk's tables as the runner hands them over: per evaluator, each aspect's rows of
    the originals, then of every variant (example by example)."""
    ids = [f"ex{index * CHUNK + i:07d}" for i in range(size)]
    example_col = list(ids) + [e for e in ids for _ in plan]
    pert = ["original"] * size + [u[0] for _ in ids for u in plan]
    sev = [""] * size + [u[1] for _ in ids for u in plan]
    rank = [-1] * size + [u[2] for _ in ids for u in plan]
    seed = [-1] * size + [u[3] for _ in ids for u in plan]
    n = len(example_col)
    base = {"example_id": pa.array(example_col), "task": pa.array(["open-ended"] * n),
            "perturbation": pa.array(pert), "severity": pa.array(sev),
            "severity_rank": pa.array(rank, pa.int64()), "seed": pa.array(seed, pa.int64()),
            "noise_ratio": pa.array(rng.random(n))}
    tables = []
    for evaluator in dict.fromkeys(e for e, _ in ASPECTS):
        aspects = [a for e, a in ASPECTS if e == evaluator]
        parts = []
        for aspect in aspects:
            parts.append(pa.table({
                **base, "evaluator": pa.array([evaluator] * n), "aspect": pa.array([aspect] * n),
                "score": pa.array(rng.random(n)), "higher_is_better": pa.array([True] * n),
                "status": pa.array(["ok"] * n), "reason": pa.array([""] * n),
                "answer": pa.nulls(n, pa.string())}, schema=SCORE_SCHEMA))
        # the runner's rows go variant by variant, each with its aspects in turn
        table = pa.concat_tables(parts)
        order = np.arange(n * len(aspects)).reshape(len(aspects), n).T.ravel()
        tables.append(table.take(pa.array(order)))
    return tables


def part_tables(staging: Staging, chunks: int) -> Iterator[pa.Table]:
    """The chunk parts' tables, in order, as finalize reads them."""
    for index in range(chunks):
        part = pq.ParquetFile(staging.files.part(index, "scores.parquet"))
        for group in range(part.num_row_groups):
            yield part.read_row_group(group)


def read_one_key(path: Path, key: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    rows = ScoreTable(path).read(["example_id", "severity", "seed", "score"], where=key)
    return time.perf_counter() - started, len(rows)


def describe(path: Path) -> str:
    parquet = pq.ParquetFile(path)
    meta = parquet.metadata
    per_key: dict[tuple[str, str, str], int] = {}
    names = parquet.schema_arrow.names
    columns = [names.index(c) for c in ("evaluator", "aspect", "perturbation")]
    for group in range(meta.num_row_groups):
        stats = [meta.row_group(group).column(c).statistics for c in columns]
        key = tuple(str(s.min) for s in stats)
        per_key[key] = per_key.get(key, 0) + 1  # type: ignore[index]
    return (f"{meta.num_rows:,} rows, {meta.num_row_groups:,} row groups, at most "
            f"{max(per_key.values())} of one key ({len(per_key)} keys), footer "
            f"{meta.serialized_size / 1e6:.1f} MB, file {path.stat().st_size / 1e6:,.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--suite", default="blindspot-full")
    parser.add_argument("--one-pass", action="store_true",
                        help="also write and read the one-pass grouped file")
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it")
    args = parser.parse_args()
    plan = units(args.suite)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-score-merge-"))
    rng = np.random.default_rng(0)
    try:
        staging = Staging.open(folder / "run", "bench")  # a kept folder's parts are reused
        started = time.perf_counter()
        chunks = -(-args.examples // CHUNK)
        for index in range(chunks):
            if staging.summary(index) is not None:
                continue
            size = min(CHUNK, args.examples - index * CHUNK)
            staging.write_chunk(index, scores=chunk_tables(index, size, plan, rng),
                                variants=None, skips="", examples="", summary={})
        print(f"{args.examples:,} examples x {len(plan) + 1} units x {len(ASPECTS)} aspects, "
              f"{chunks} chunk parts written in {time.perf_counter() - started:.0f} s",
              flush=True)
        key = {"evaluator": "rouge", "aspect": "rouge2", "perturbation": plan[len(plan) // 2][0]}
        rows = sum(pq.ParquetFile(staging.files.part(i, "scores.parquet")).metadata.num_rows
                   for i in range(chunks))
        path = folder / "merged.parquet"
        started = time.perf_counter()
        # the call `Staging.finalize` makes, to a file of its own: the parts stay for --one-pass
        write_merged(part_tables(staging, chunks), path, rows=rows,
                     spill=folder / "spill.parquet", options=SCORE_OPTIONS,
                     spill_options=SCORE_PART_OPTIONS)
        print(f"merged: written in {time.perf_counter() - started:.0f} s; {describe(path)}",
              flush=True)
        times = []
        for _ in range(3):
            seconds, found = read_one_key(path, key)
            times.append(seconds)
            print(f"merged: read {key} ({found:,} rows) in {seconds:.2f} s", flush=True)
        print(f"target: <= {MAX_GROUPS_PER_KEY} row groups per key, read < 1 s: best read "
              f"{min(times):.2f} s ({'meets' if min(times) < 1 else 'MISSES'})", flush=True)
        if args.one_pass:
            one_pass = folder / "one-pass.parquet"
            started = time.perf_counter()
            with pq.ParquetWriter(one_pass, SCORE_SCHEMA, **SCORE_OPTIONS) as writer:
                write_grouped(part_tables(staging, chunks), writer)
            print(f"one pass: written in {time.perf_counter() - started:.0f} s; "
                  f"{describe(one_pass)}", flush=True)
            for _ in range(3):
                seconds, found = read_one_key(one_pass, key)
                print(f"one pass: read {key} ({found:,} rows) in {seconds:.2f} s", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
