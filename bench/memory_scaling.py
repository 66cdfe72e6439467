"""Peak memory of a run as it grows: 100, 1,000 and 2,000 WikiText paragraphs in one go.

Each size is `evalstress run` in a fresh process, as a user starts it: perturbations truncation
and token-drop, evaluators BLEU and ROUGE, `--workers 1`, a fresh (cold) score cache. The
peak is the process's maximum resident set size as the kernel reports it for that child
(`wait4`, what `/usr/bin/time -v` prints); the ratio is each size's peak over the first size's.
The target (issue 46): 1,000 / 100 <= 1.2. Memory numbers hold under load; the times printed
beside them do not (a shared machine), so compare them only as ratios within one run.

`--phases` runs each size once more in-process with a watcher on the run's phases
(`core.phases.watching`): RSS as each phase starts and ends and the process's peak so far,
so a step in the peak shows which phase makes it.

Usage: python bench/memory_scaling.py [--sizes 100,1000,2000] [--phases] [--data FILE]
       [-p truncation -p token-drop] [-e bleu -e rouge] [--workers 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DATA = Path("/work/shared/data/wikitext_paragraphs.jsonl")


def data_file(source: Path, size: int, folder: Path) -> Path:
    """The first `size` paragraphs as examples, each its own reference (BLEU and ROUGE need
    one)."""
    rows = []
    with source.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                rows.append({"id": row["id"], "task": "open-ended", "source": "",
                             "hypothesis": row["text"], "references": [row["text"]]})
            if len(rows) == size:
                break
    if len(rows) < size:
        raise SystemExit(f"{source}: {len(rows)} paragraphs, fewer than {size}")
    path = folder / f"wikitext-{size}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run_flags(args: argparse.Namespace, data: Path, folder: Path) -> list[str]:
    return [str(data), *(f"-p{p}" for p in args.perturbation),
            *(f"-e{e}" for e in args.evaluator), "--workers", str(args.workers),
            "--cache-dir", str(folder / "cache"), "--out", str(folder / "run"), "--quiet"]


def peak_of_run(args: argparse.Namespace, size: int) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of `evalstress run` on `size` paragraphs, cold cache."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        data = data_file(args.data, size, folder)
        command = [sys.executable, "-m", "evalstress.cli", "run", *run_flags(args, data, folder)]
        began = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 env={**os.environ, "PYTHONPATH": str(SRC)})
        assert child.stderr is not None
        errors = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise SystemExit(f"the run of {size} examples failed ({child.returncode}):\n"
                             f"{errors.decode(errors='replace')[-2000:]}")
    return usage.ru_maxrss / 1024, wall


# --- --phases: RSS at each phase's start and end, in a process of its own ----------------

def status_mb() -> dict[str, float]:
    """VmRSS (now) and VmHWM (the peak so far) of this process, in MB."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    return found


def child(args: argparse.Namespace) -> None:
    """One run of `args.child` paragraphs; prints its phases' memory as JSON lines."""
    from evalstress.core.phases import watching
    from evalstress.job import RunSettings, build_job, run_job

    events: list[dict[str, Any]] = []

    def watch(event: str, name: str) -> None:
        events.append({"event": event, "phase": name, **status_mb()})

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        data = data_file(args.data, args.child, folder)
        flags: dict[str, Any] = {
            "data": data, "evaluators": args.evaluator, "perturbations": args.perturbation,
            "workers": args.workers, "cache_dir": folder / "cache", "out": folder / "run",
            "quiet": True}
        with watching(watch):
            run_job(build_job(RunSettings.resolve(flags, None, face="run")))
    print(json.dumps({"events": events, "end": status_mb()}))


def phases_table(args: argparse.Namespace, size: int) -> None:
    command = [sys.executable, __file__, "--child", str(size), "--data", str(args.data),
               "--workers", str(args.workers), *(f"-e{e}" for e in args.evaluator),
               *(f"-p{p}" for p in args.perturbation)]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)})
    if done.returncode != 0:
        raise SystemExit(f"the phased run of {size} examples failed:\n{done.stderr[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\nPhases at {size} examples (MB: RSS at the event, the process's peak so far)")
    print(f"  {'':6}{'phase':<50}{'RSS':>8}{'peak':>8}")
    for entry in found["events"]:
        print(f"  {entry['event']:<6}{entry['phase'][:49]:<50}{entry['VmRSS']:8.0f}"
              f"{entry['VmHWM']:8.0f}")
    end = found["end"]
    print(f"  {'':6}{'(after the run)':<50}{end['VmRSS']:8.0f}{end['VmHWM']:8.0f}")


#: the issue's target: a 1,000-example run's peak at most this times a 100-example run's
TARGET = (100, 1000, 1.2)


def verdict(peaks: dict[int, float]) -> str | None:
    """The target line, where both of its sizes were measured."""
    small, large, most = TARGET
    if small not in peaks or large not in peaks:
        return None
    ratio = peaks[large] / peaks[small]
    return (f"peak {large:,} / {small:,}: {ratio:.2f} (target <= {most}: "
            f"{'meets' if ratio <= most else 'MISSES'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,2000")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("-p", "--perturbation", action="append", default=[])
    parser.add_argument("-e", "--evaluator", action="append", default=[])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--phases", action="store_true",
                        help="also each size's RSS per phase, in a run of its own")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.perturbation = args.perturbation or ["truncation", "token-drop"]
    args.evaluator = args.evaluator or ["bleu", "rouge"]
    if args.child is not None:
        child(args)
        return
    if not args.data.exists():
        raise SystemExit(f"{args.data}: not found (--data names the WikiText paragraphs)")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{', '.join(args.perturbation)} x {', '.join(args.evaluator)}, "
          f"--workers {args.workers}, cold cache")
    print(f"  {'examples':>9}{'peak RSS (MB)':>15}{'ratio':>8}{'wall (s)':>10}")
    peaks: dict[int, float] = {}
    for size in sizes:
        peak, wall = peak_of_run(args, size)
        peaks[size] = peak
        print(f"  {size:>9,}{peak:15.0f}{peak / peaks[sizes[0]]:8.2f}{wall:10.1f}", flush=True)
    line = verdict(peaks)
    if line:
        print(line)
    if args.phases:
        for size in sizes:
            phases_table(args, size)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
