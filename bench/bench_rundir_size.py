"""Disk per example: the run directory's files and the score cache, and how the ways of storing
variants compare (size, and time to read every text back).

Runs `evalstress run` with the blindspot-full suite and BLEU, chrF and ROUGE on N WikiText
paragraphs (each its own reference), serially, with a fresh cache (or measures a finished run
given with --run-dir and --cache-dir). Prints per example the bytes of scores.parquet, the
variants, skips.jsonl, examples.jsonl, results.json and the cache (report.html left out; its
variant browser is capped, so it does not grow with N), the cache's bytes per stored score row
in its layout and in the first layout (text keys, a rowid, JSON values) holding the same rows,
and the variants stored four ways:
  jsonl text+diff   one JSON line per variant with its full text and a word diff (the first way)
  jsonl edit        one JSON line per variant with character edits against its original
  parquet text      variants.parquet, zstd: the full texts (what a run writes)
  parquet edit      the same columns with the character edits instead of the texts
with the seconds to read all of them back to texts (edits applied to the originals).

Usage: python bench/bench_rundir_size.py [--size 50] [--data wikitext_paragraphs.jsonl]
       python bench/bench_rundir_size.py --run-dir RUN --cache-dir CACHE
Timings are of a shared machine: compare the rows of one printout, not printouts.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from rapidfuzz.distance import Levenshtein  # noqa: E402

from evalstress.core.cache import SQLiteCache, decode_value  # noqa: E402
from evalstress.core.worddiff import word_diff  # noqa: E402
from evalstress.engine import variantfile  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_scale import make_data  # noqa: E402  (the same WikiText data as the scale bench)

DATA = ROOT.parent / "shared" / "data" / "wikitext_paragraphs.jsonl"
GAP = 8  # equal runs up to this many characters join the edits around them
MAX_CELLS = 4_000_000


def edits(original: str, text: str) -> list[list[Any]]:
    """(start, end, replacement) character edits turning `original` into `text`: the common
    prefix and suffix cut off, rapidfuzz opcodes in between (one replacement when too long)."""
    start, limit = 0, min(len(original), len(text))
    while start < limit and original[start] == text[start]:
        start += 1
    end = 0
    while end < limit - start and original[-1 - end] == text[-1 - end]:
        end += 1
    a, b = original[start:len(original) - end], text[start:len(text) - end]
    if not a and not b:
        return []
    if len(a) * len(b) > MAX_CELLS:
        return [[start, start + len(a), b]]
    out: list[list[Any]] = []
    for op in Levenshtein.opcodes(a, b):
        if op.tag == "equal":
            continue
        s, e, new = start + op.src_start, start + op.src_end, b[op.dest_start:op.dest_end]
        if out and s - out[-1][1] <= GAP:
            out[-1] = [out[-1][0], e, out[-1][2] + original[out[-1][1]:s] + new]
        else:
            out.append([s, e, new])
    return out


def apply(original: str, ops: list[list[Any]]) -> str:
    parts, at = [], 0
    for start, end, new in ops:
        parts += [original[at:start], new]
        at = end
    parts.append(original[at:])
    return "".join(parts)


def run(args: argparse.Namespace, folder: Path) -> tuple[Path, Path, int]:
    data = make_data(args.size, folder, Path(args.data))
    out, cache = folder / "run", folder / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAYON_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "evalstress.cli", "run", str(data), "-m",
                    "hypothesis=text", "-m", "references=text", "--task", "open-ended",
                    "--suite", "blindspot-full", "-e", "bleu", "-e", "chrf", "-e", "rouge",
                    "--out", str(out), "--cache-dir", str(cache), "--workers", "1", "--quiet"],
                   check=True, env=env)
    return out, cache, args.size


def cache_bytes(folder: Path) -> int:
    path = folder / "scores.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in folder.glob("scores.sqlite*"))


def first_layout_bytes(cache: Path, scratch: Path) -> int:
    """The same rows in the first layout: TEXT namespace and hex key, JSON value, a rowid."""
    store = SQLiteCache(cache / "scores.sqlite", "scores")
    path = scratch / "first.sqlite"
    old = sqlite3.connect(path)
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE scores (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT "
                "NOT NULL, created REAL, PRIMARY KEY (namespace, key))")
    with store._locked() as conn:
        spaces = {ns: (name, json.loads(fields) if fields else None) for ns, name, fields in
                  conn.execute("SELECT id, name, fields FROM scores_namespaces").fetchall()}
        rows = conn.execute("SELECT ns, key, value FROM scores")
        while batch := rows.fetchmany(5000):
            old.executemany("INSERT INTO scores VALUES (?, ?, ?, NULL)", [
                # a first-layout key was the whole 64-character digest: padded to its length
                (spaces[ns][0], key.hex().ljust(64, "0"),
                 json.dumps(decode_value(value, spaces[ns][1]), sort_keys=True))
                for ns, key, value in batch])
    old.commit()
    old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    old.close()
    return path.stat().st_size


def timed(read: Callable[[], list[str]]) -> tuple[float, list[str]]:
    start = time.perf_counter()
    texts = read()
    return time.perf_counter() - start, texts


def formats(run_dir: Path, scratch: Path, n: int) -> None:
    originals = {str(d["id"]): str(d["hypothesis"]) for d in map(
        json.loads, (run_dir / "examples.jsonl").read_text(encoding="utf-8").splitlines())}
    records = list(variantfile.read_records(run_dir / variantfile.FILE))
    start = time.perf_counter()
    ops = [edits(originals[r["example_id"]], r["text"]) for r in records]
    edit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    diffs = [word_diff(originals[r["example_id"]], r["text"]) for r in records]
    diff_seconds = time.perf_counter() - start
    meta = ("id", "example_id", "perturbation", "severity", "seed", "noise_ratio")
    old, edited = scratch / "text.jsonl", scratch / "edit.jsonl"
    with old.open("w", encoding="utf-8") as a, edited.open("w", encoding="utf-8") as b:
        for record, op, diff in zip(records, ops, diffs, strict=True):
            row = {k: record[k] for k in meta}
            a.write(json.dumps({**row, "text": record["text"], "diff": diff},
                               ensure_ascii=False) + "\n")
            b.write(json.dumps({**row, "edit": op}, ensure_ascii=False) + "\n")
    table = pq.read_table(run_dir / variantfile.FILE)
    table = table.set_column(table.column_names.index("text"), "edit", pa.array(
        [json.dumps(op, ensure_ascii=False, separators=(",", ":")) for op in ops]))
    parquet_edit = scratch / "edit.parquet"
    pq.write_table(table, parquet_edit, **variantfile.PARQUET_OPTIONS)

    def read_old() -> list[str]:
        with old.open(encoding="utf-8") as handle:
            return [json.loads(line)["text"] for line in handle]

    def read_edit_jsonl() -> list[str]:
        with edited.open(encoding="utf-8") as handle:
            return [apply(originals[d["example_id"]], d["edit"]) for d in map(json.loads, handle)]

    def read_parquet() -> list[str]:
        return [r["text"] for r in variantfile.read_records(run_dir / variantfile.FILE)]

    def read_parquet_edit() -> list[str]:
        columns = pq.read_table(parquet_edit, columns=["example_id", "edit"]).to_pydict()
        return [apply(originals[e], json.loads(op))
                for e, op in zip(columns["example_id"], columns["edit"], strict=True)]

    expected = [r["text"] for r in records]
    print(f"\n{len(records)} variants ({len(records) / n:.0f} per example); computing the "
          f"character edits took {edit_seconds:.1f} s, the word diffs {diff_seconds:.1f} s")
    print(f"{'format':<18}{'KB/example':>11}{'read all (s)':>14}")
    for name, path, read in (("jsonl text+diff", old, read_old),
                             ("jsonl edit", edited, read_edit_jsonl),
                             ("parquet text", run_dir / variantfile.FILE, read_parquet),
                             ("parquet edit", parquet_edit, read_parquet_edit)):
        seconds, texts = timed(read)
        assert texts == expected, f"{name} does not give the texts back"
        print(f"{name:<18}{path.stat().st_size / n / 1024:>11.1f}{seconds:>14.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--run-dir", help="measure this finished run instead of running one")
    parser.add_argument("--cache-dir", help="its score cache folder (with --run-dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-size-") as tmp:
        scratch = Path(tmp)
        if args.run_dir:
            run_dir, cache = Path(args.run_dir), Path(args.cache_dir)
            n = sum(1 for _ in (run_dir / "examples.jsonl").open(encoding="utf-8"))
        else:
            run_dir, cache, n = run(args, scratch)
        print(f"{n} examples; bytes per example")
        total = 0
        for name in ("scores.parquet", variantfile.FILE, "skips.jsonl", "examples.jsonl",
                     "results.json"):
            size = (run_dir / name).stat().st_size if (run_dir / name).exists() else 0
            total += size
            print(f"  {name:<18}{size / n / 1024:>9.1f} KB")
        size = cache_bytes(cache)
        total += size
        print(f"  {'score cache':<18}{size / n / 1024:>9.1f} KB")
        print(f"  {'total':<18}{total / n / 1024:>9.1f} KB  (report.html left out)")
        with sqlite3.connect(cache / "scores.sqlite") as conn:
            rows = conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        print(f"score cache: {rows} rows, {size / rows:.0f} bytes a row; the same rows in the "
              f"first layout: {first_layout_bytes(cache, scratch) / rows:.0f} bytes a row")
        formats(run_dir, scratch, n)


if __name__ == "__main__":
    main()
