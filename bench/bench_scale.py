"""How time, memory and disk grow with the number of examples (the streaming runner).

Runs `evalstress run` with the blindspot-full suite and BLEU, chrF and ROUGE on N WikiText
paragraphs (each paragraph is its own reference; the 2000 shared paragraphs repeat, with new
ids, when N is larger), each N in a fresh process with a fresh cache, and prints per N and per
worker count: seconds per example, the parent's share of all CPU time, peak RSS of the runner's
process and of its largest worker, the run directory and cache per example, and the load average
of the machine around the run (other work on the same cores makes wall times noisy: compare
ratios taken in the same moment). Then the ratios with their targets:

- peak RSS of the largest process at the largest N over the smallest, per worker count
  (target <= 1.2: memory does not grow with the dataset);
- wall time with 2 workers over the serial run, per N (target <= 0.52 at N=1000; 0.5 is the
  floor on two cores); the parent's CPU share says how evenly the work was shared (the run's
  own process does chunks beside its helper, so about half with 2 workers);
- the extrapolation to 100,000 examples: hours, GB on disk (run directory and cache), and the
  peak memory of the largest process (a straight line through the smallest and largest N).

Usage: python bench/bench_scale.py [--sizes 250,1000,2000] [--workers 1,2]
       [--suite blindspot-full] [--chunk-size N] [--quick]
Without --chunk-size the runner picks it as a user's run would (64 examples, or fewer so that
every worker gets about four chunks). --quick is the tests' smoke run: N = 4 and 8, the small
blindspot suite, chunks of 2, a pool of workers however small the work (its numbers say
nothing about scale).
Native thread pools are held to one thread (RAYON_NUM_THREADS=1, fastchrf), so the serial run
is serial.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wikitext_paragraphs.jsonl"
if not DATA.exists():  # a worktree beside the main checkout
    DATA = Path("/work/shared/data/wikitext_paragraphs.jsonl")
TARGET_RSS = 1.2  # peak RSS of the largest process, largest N over smallest N
TARGET_WALL = 0.52  # wall time, 2 workers over 1, at N = WALL_AT
WALL_AT = 1000
EXTRAPOLATE = 100_000


def make_data(size: int, folder: Path, source: Path = DATA) -> Path:
    """N paragraphs, repeating the source file with new ids when N is larger."""
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line]
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
    """One run in this process: prints times and peak RSS as JSON on the last line."""
    sys.path.insert(0, str(ROOT / "src"))
    from evalstress.cli import app
    from evalstress.engine import pipeline

    if args.pool_always:  # the smoke run's few examples would not start a pool otherwise
        pipeline.POOL_MIN_WORK = 0

    peaks: dict[int, float] = {}
    watching = threading.Event()
    watcher = threading.Thread(target=watch_children, args=(peaks, watching), daemon=True)
    watcher.start()
    start = time.perf_counter()
    app(["run", args.data, "-m", "hypothesis=text", "-m", "references=text", "--task",
         "open-ended", "--suite", args.suite, "-e", "bleu", "-e", "chrf", "-e", "rouge",
         "--out", args.out, "--cache-dir", args.cache, "--workers", str(args.run_workers),
         *(["--chunk-size", str(args.chunk_size)] if args.chunk_size else []), "--quiet"],
        standalone_mode=False)
    wall = time.perf_counter() - start
    import multiprocessing

    for helper in multiprocessing.active_children():  # they exit after the run returns:
        helper.join()  # reaped, their CPU time counts in RUSAGE_CHILDREN
    watching.set()
    watcher.join()
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"wall": wall, "parent_cpu": own.ru_utime + own.ru_stime,
                      "worker_cpu": workers.ru_utime + workers.ru_stime,
                      "rss_mb": own.ru_maxrss / 1024,
                      "worker_rss_mb": max(peaks.values(), default=0.0)
                      if args.run_workers > 1 else 0.0}))


def watch_children(peaks: dict[int, float], done: threading.Event) -> None:
    """Each child process's own peak RSS (VmHWM, MB), read every 0.5 s until `done`. Not
    RUSAGE_CHILDREN: a process spawned late (the report's side process) is started by vfork
    and exec, which credits it with the parent's peak at that moment, ~0.9 GB."""
    while not done.wait(0.5):
        for tasks in Path("/proc/self/task").glob("*/children"):
            for pid in tasks.read_text().split():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        megabytes = int(line.split()[1]) / 1024
                        peaks[int(pid)] = max(peaks.get(int(pid), 0.0), megabytes)


def run_one(size: int, workers: int, data: Path, folder: Path,
            args: argparse.Namespace) -> dict[str, Any]:
    """One run in a fresh process, with its sizes on disk and the load around it."""
    out, cache = folder / f"run-{size}-{workers}", folder / f"cache-{size}-{workers}"
    load_before = os.getloadavg()[0]
    proc = subprocess.run(
        [sys.executable, __file__, "--child", "--data", str(data), "--out", str(out),
         "--cache", str(cache), "--run-workers", str(workers), "--suite", args.suite,
         "--chunk-size", str(args.chunk_size), *(["--pool-always"] if args.quick else [])],
        capture_output=True, text=True, check=False, env={**os.environ, "RAYON_NUM_THREADS": "1"})
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-4000:])
        raise SystemExit(f"run N={size} workers={workers} failed")
    stats: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    cpu = stats["parent_cpu"] + stats["worker_cpu"]
    stats.update(run_mb=folder_size(out) / 1e6, cache_mb=folder_size(cache) / 1e6,
                 parent_share=stats["parent_cpu"] / cpu if cpu else 0.0,
                 largest_mb=max(stats["rss_mb"], stats["worker_rss_mb"]),
                 load=(load_before + os.getloadavg()[0]) / 2)
    return stats


HEADER = (f"{'N':>6}{'workers':>8}{'wall s':>9}{'s/example':>11}{'parent CPU':>12}"
          f"{'parent MB':>11}{'worker MB':>11}{'run MB/ex':>11}{'cache MB/ex':>13}{'load':>6}")


def row(size: int, workers: int, s: dict[str, Any]) -> str:
    return (f"{size:>6}{workers:>8}{s['wall']:>9.1f}{s['wall'] / size:>11.3f}"
            f"{s['parent_share']:>11.0%} {s['rss_mb']:>10.0f}{s['worker_rss_mb']:>11.0f}"
            f"{s['run_mb'] / size:>11.3f}{s['cache_mb'] / size:>13.3f}{s['load']:>6.1f}")


def verdict(value: float, target: float) -> str:
    return "meets" if value <= target else "MISSES"


def summarise(results: dict[tuple[int, int], dict[str, Any]], sizes: list[int],
              worker_counts: list[int]) -> list[str]:
    """The ratios against their targets and the extrapolation to `EXTRAPOLATE` examples."""
    lines = []
    small, large = min(sizes), max(sizes)
    for workers in worker_counts:
        if small == large:
            break
        ratio = results[(large, workers)]["largest_mb"] / results[(small, workers)]["largest_mb"]
        lines.append(f"peak RSS of the largest process, N={large} / N={small}, workers={workers}: "
                     f"{ratio:.2f} (target <= {TARGET_RSS}: {verdict(ratio, TARGET_RSS)})")
    if 1 in worker_counts and 2 in worker_counts:
        for size in sizes:
            ratio = results[(size, 2)]["wall"] / results[(size, 1)]["wall"]
            target = (f" (target <= {TARGET_WALL} at N={WALL_AT}: "
                      f"{verdict(ratio, TARGET_WALL)})" if size == WALL_AT else "")
            lines.append(f"wall, 2 workers / 1, N={size}: {ratio:.3f}{target}; parent CPU share "
                         f"with 2 workers {results[(size, 2)]['parent_share']:.0%}; mean load "
                         f"{results[(size, 1)]['load']:.1f} / {results[(size, 2)]['load']:.1f}")
    for workers in worker_counts:
        big = results[(large, workers)]
        hours = big["wall"] / large * EXTRAPOLATE / 3600
        disk = (big["run_mb"] + big["cache_mb"]) / large * EXTRAPOLATE / 1e3
        peak = big["largest_mb"]
        if small != large:
            slope = (peak - results[(small, workers)]["largest_mb"]) / (large - small)
            peak += max(0.0, slope) * (EXTRAPOLATE - large)
        lines.append(f"extrapolated to {EXTRAPOLATE:,} examples, workers={workers} (this machine, "
                     f"from N={large}): {hours:.1f} h, {disk:.1f} GB on disk, peak RSS of the "
                     f"largest process ~{peak:,.0f} MB")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="250,1000,2000")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--suite", default="blindspot-full")
    parser.add_argument("--chunk-size", type=int, default=0, help="0: the runner's choice")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run for tests: N=4,8, suite blindspot, chunks of 2")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--run-workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--pool-always", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.quick:
        args.sizes, args.suite, args.chunk_size = "4,8", "blindspot", 2
    sizes = [int(n) for n in args.sizes.split(",")]
    worker_counts = [int(w) for w in args.workers.split(",")]
    results: dict[tuple[int, int], dict[str, Any]] = {}
    print(f"suite {args.suite}, BLEU + chrF + ROUGE, chunk size "
          f"{args.chunk_size or 'the runner`s choice'}, {os.cpu_count()} CPUs", flush=True)
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in sizes:
            data = make_data(size, folder)
            for workers in worker_counts:
                results[(size, workers)] = run_one(size, workers, data, folder, args)
                print(row(size, workers, results[(size, workers)]), flush=True)
    for line in summarise(results, sizes, worker_counts):
        print(line)


if __name__ == "__main__":
    main()
