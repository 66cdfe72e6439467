"""How time, memory and disk grow with the number of examples (the streaming runner).

Runs `evalstress run` with the blindspot-full suite and BLEU, chrF and ROUGE on N WikiText
paragraphs (each paragraph is its own reference; the 2000 shared paragraphs repeat, with new
ids, when N is larger), each N in a fresh process with a fresh cache, and prints per N and per
worker count: wall time, wall time per example, CPU time (all processes), peak RSS (the
runner's process, and the largest worker process), the run directory and cache sizes. Then the
ratios the issue asks for: peak RSS at the largest N over the smallest (target <= 1.5), and wall
time per example with 2 workers over the serial run (target <= 0.6), side by side on the same N.

Usage: python bench/bench_scale.py [--sizes 250,500,1000,2000] [--workers 1,2]
       [--suite blindspot-full] [--chunk-size N]
Without --chunk-size the runner picks it as a user's run would (64 examples, or fewer so that
every worker gets about four chunks).
Native thread pools are held to one thread (RAYON_NUM_THREADS=1, fastchrf), so the serial run
is serial. A quick check: python bench/bench_scale.py --sizes 8,16 --workers 1,2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wikitext_paragraphs.jsonl"


def make_data(size: int, folder: Path) -> Path:
    """N paragraphs, repeating the shared file with new ids when N is larger."""
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    out = folder / f"wikitext-{size}.jsonl"
    with out.open("w", encoding="utf-8") as handle:
        for i in range(size):
            row = rows[i % len(rows)]
            handle.write(json.dumps({"id": f"{row['id']}-r{i // len(rows)}", "text": row["text"]},
                                    ensure_ascii=False) + "\n")
    return out


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def child(args: argparse.Namespace) -> None:
    """One run in this process: prints wall time and peak RSS as JSON on the last line."""
    sys.path.insert(0, str(ROOT / "src"))
    from evalstress.cli import app

    start = time.perf_counter()
    app(["run", args.data, "-m", "hypothesis=text", "-m", "references=text", "--task",
         "open-ended", "--suite", args.suite, "-e", "bleu", "-e", "chrf", "-e", "rouge",
         "--out", args.out, "--cache-dir", args.cache, "--workers", str(args.run_workers),
         *(["--chunk-size", str(args.chunk_size)] if args.chunk_size else []), "--quiet"],
        standalone_mode=False)
    wall = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime
    print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": own.ru_maxrss / 1024,
                      "worker_rss_mb": workers.ru_maxrss / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="250,500,1000,2000")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--suite", default="blindspot-full")
    parser.add_argument("--chunk-size", type=int, default=0, help="0: the runner's choice")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--run-workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sizes = [int(n) for n in args.sizes.split(",")]
    worker_counts = [int(w) for w in args.workers.split(",")]
    results: dict[tuple[int, int], dict[str, float]] = {}
    print(f"{'N':>6}{'workers':>8}{'wall s':>10}{'s/example':>11}{'CPU s':>9}{'peak RSS MB':>13}"
          f"{'worker RSS MB':>15}{'run dir MB':>12}{'cache MB':>10}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in sizes:
            data = make_data(size, folder)
            for workers in worker_counts:
                out, cache = folder / f"run-{size}-{workers}", folder / f"cache-{size}-{workers}"
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", "--data", str(data), "--out", str(out),
                     "--cache", str(cache), "--run-workers", str(workers), "--suite", args.suite,
                     "--chunk-size", str(args.chunk_size)],
                    capture_output=True, text=True, check=False,
                    env={**os.environ, "RAYON_NUM_THREADS": "1"})
                if proc.returncode != 0:
                    print(proc.stdout[-2000:], proc.stderr[-4000:])
                    raise SystemExit(f"run N={size} workers={workers} failed")
                stats = json.loads(proc.stdout.strip().splitlines()[-1])
                stats.update(run_mb=folder_size(out) / 1e6, cache_mb=folder_size(cache) / 1e6)
                results[(size, workers)] = stats
                print(f"{size:>6}{workers:>8}{stats['wall']:>10.1f}{stats['wall'] / size:>11.3f}"
                      f"{stats['cpu']:>9.1f}{stats['rss_mb']:>13.0f}{stats['worker_rss_mb']:>15.0f}"
                      f"{stats['run_mb']:>12.1f}{stats['cache_mb']:>10.1f}", flush=True)
    small, large = min(sizes), max(sizes)
    for workers in worker_counts:
        ratio = results[(large, workers)]["rss_mb"] / results[(small, workers)]["rss_mb"]
        print(f"peak RSS N={large} / N={small}, workers={workers}: {ratio:.2f} (target <= 1.5)")
    if 1 in worker_counts and 2 in worker_counts:
        for size in sizes:
            ratio = results[(size, 2)]["wall"] / results[(size, 1)]["wall"]
            print(f"wall per example, 2 workers / serial, N={size}: {ratio:.2f} (target <= 0.6)")
    per_example = results[(large, max(worker_counts))]["wall"] / large
    disk = (results[(large, max(worker_counts))]["run_mb"]
            + results[(large, max(worker_counts))]["cache_mb"]) / large
    print(f"extrapolated to 100k examples ({max(worker_counts)} workers, this machine): "
          f"{per_example * 1e5 / 3600:.1f} h, {disk * 1e5 / 1e3:.1f} GB on disk, peak RSS "
          f"~{results[(large, max(worker_counts))]['rss_mb']:.0f} MB + the score-table columns "
          "one analysis group reads")


if __name__ == "__main__":
    main()
