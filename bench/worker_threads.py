"""torch's threads under `--workers 2`: a model run with the main process's share of the cores
(cores // 2 while a helper works beside it) against the same run with torch's own count (one
thread per core on top of the helper), side by side in one run.

A model evaluator scores in the run's own process while a helper perturbs; the helper is
started for this small run by lowering the pool's threshold (`POOL_MIN_WORK`), which a long
run passes on its own. Each run is a fresh process with a cold score cache; the two sides
alternate. The score files of the two sides are compared byte for byte. Times hold only as
ratios within one run on a shared machine.

Usage: python bench/worker_threads.py [--examples 24] [-e bertscore] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

CHILD = """
import sys
from pathlib import Path
from evalstress.core import models
from evalstress.engine import pipeline
from evalstress.job import RunSettings, build_job, run_job

examples, evaluator, side, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
pipeline.POOL_MIN_WORK = 0  # a helper even for this small run
if side == "torch's own":
    models.share_cores = lambda processes: None  # as before: no share of the cores
flags = {"evaluators": [evaluator], "perturbations": ["truncation", "token-drop"], "seeds": 1,
         "limit": examples, "workers": 2, "cache_dir": folder / "cache", "out": folder / "run",
         "quiet": True}
run_job(build_job(RunSettings.resolve(flags, None, face="run")))
"""


def one_run(side: str, args: argparse.Namespace, folder: Path) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD, str(args.examples), args.evaluator, side,
                    str(folder)], check=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=24)
    parser.add_argument("-e", "--evaluator", default="bertscore")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sides = ("share of the cores", "torch's own")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{args.evaluator} on {args.examples} built-in examples, truncation + token-drop, "
          f"1 seed, --workers 2")
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as name:
        files: dict[str, bytes] = {}
        for repeat in range(args.repeats):
            for side in sides if repeat % 2 == 0 else sides[::-1]:
                folder = Path(name) / f"{side.replace(' ', '-')}-{repeat}"
                seconds[side].append(one_run(side, args, folder))
                scores = (folder / "run" / "scores.parquet").read_bytes()
                if files.setdefault(side, scores) != scores:
                    raise SystemExit(f"{side}: the score file changed between repeats")
                print(f"  {side:<20} {seconds[side][-1]:7.1f} s", flush=True)
        same = files[sides[0]] == files[sides[1]]
    for side in sides:
        print(f"{side:<20} min {min(seconds[side]):7.1f} s  median "
              f"{statistics.median(seconds[side]):7.1f} s")
    print(f"share / torch's own: min {min(seconds[sides[0]]) / min(seconds[sides[1]]):.2f}, "
          f"median {statistics.median(seconds[sides[0]]) / statistics.median(seconds[sides[1]]):.2f}"
          f"; score files {'identical' if same else 'DIFFER'}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
