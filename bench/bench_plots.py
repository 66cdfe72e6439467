"""The report's plots written by `report.chart` against the matplotlib drawing they replaced,
side by side on the same finished run.

The drawing before is the package's own `report/plots.py` at commit `--before` (read from git,
so the comparison needs matplotlib installed and the repository's history). Three things are
timed, each the median of `--repeat` runs: the import of what draws the plots (matplotlib
before; report.plots with report.chart after) in a fresh interpreter; drawing every plot of
the report in a warm interpreter; and `write_report` of the whole report.html in a fresh
process, as `evalstress report RUN_DIR` does it. Each has its wall clock and the CPU time of
the process (the steadier of the two on a shared machine), before, after, and the ratio
after / before. Before and after run in turns, so a passing load falls on both alike.

Usage: python bench/bench_plots.py RUN_DIR [--repeat 3] [--before 731b940]
(RUN_DIR: a finished run, e.g. `evalstress quickstart --out RUN_DIR`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalstress.report import plots
from evalstress.report.rundir import load_results

ROOT = Path(__file__).resolve().parents[1]

#: a fresh interpreter that times one import on top of the report package (loaded first: its
#: own cost is the same before and after)
IMPORT = ("import time, evalstress.report; start = time.perf_counter(); "
          "cpu = time.process_time(); {imports}; "
          "print(time.perf_counter() - start, time.process_time() - cpu)")
#: a fresh interpreter that writes report.html with the plotters of the drawing before
#: (executed from its source) or of report.plots, and prints how long that took, its import
#: included
WRITE = """
import sys, time, types
start, cpu = time.perf_counter(), time.process_time()
from evalstress.report import html
source = {source!r}
if source:
    before = types.ModuleType("plots_before")
    exec(compile(source, "plots_before.py", "exec"), before.__dict__)
    html.curves_svg, html.discernment_svg = before.curves_svg, before.discernment_svg
html.write_report({run!r}, {out!r})
print(time.perf_counter() - start, time.process_time() - cpu)
"""


def before_source(commit: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:src/evalstress/report/plots.py"],
                          capture_output=True, text=True, check=True).stdout


def load_before(source: str) -> types.ModuleType:
    module = types.ModuleType("plots_before")
    exec(compile(source, "plots_before.py", "exec"), module.__dict__)  # the package, from git
    return module


Timing = tuple[float, float]  # seconds: wall clock, CPU of this process


def fresh(code: str) -> Timing:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def medians(runs: list[Timing]) -> Timing:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def side_by_side(measure: Callable[[bool], Timing], repeat: int) -> tuple[Timing, Timing]:
    """Before and after, `repeat` times each, taken in turns so that a load that comes and
    goes on the machine falls on both alike; the medians."""
    runs: dict[bool, list[Timing]] = {True: [], False: []}
    for _ in range(repeat):
        for before in (True, False):
            runs[before].append(measure(before))
    return medians(runs[True]), medians(runs[False])


def figures(results: Mapping[str, Any]) -> tuple[list[tuple[list[Any], str]], list[Any]]:
    """The report's curve figures (rows of one evaluator aspect, y label) and its discernment
    units per evaluator, as the report's sections group them."""
    analyses = results.get("analyses") or {}
    groups: dict[tuple[str, str], list[Any]] = {}
    for row in (analyses.get("blindspot") or {}).get("rows") or []:
        groups.setdefault((str(row["evaluator"]), str(row["aspect"])), []).append(row)
    curves = [(rows, aspect) for (_, aspect), rows in groups.items()]
    units: dict[str, list[Any]] = {}
    for unit in (analyses.get("discernment") or {}).get("units") or []:
        units.setdefault(str(unit.get("evaluator")), []).append(unit)
    return curves, list(units.items())


def draw_all(curves_svg: Callable[..., str], discernment_svg: Callable[..., str],
             results: Mapping[str, Any]) -> Timing:
    curves, units = figures(results)
    start, cpu = time.perf_counter(), time.process_time()
    for rows, ylabel in curves:
        curves_svg(rows, ylabel=ylabel)
    for evaluator, members in units:
        discernment_svg(members, evaluator=evaluator)
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default="731b940")
    args = parser.parse_args()
    results = load_results(args.run)
    source = before_source(args.before)
    before = load_before(source)
    curves, units = figures(results)
    print(f"run {args.run}: {len(curves)} curve figures, {len(units)} discernment figures")
    imports = {True: "import matplotlib.figure, matplotlib.backends.backend_svg",
               False: "import evalstress.report.plots"}
    plotters = {True: (before.curves_svg, before.discernment_svg),
                False: (plots.curves_svg, plots.discernment_svg)}
    for pair in plotters.values():  # warm both up
        draw_all(*pair, results)
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "report.html")
        rows = [("import of the plotter (fresh)",
                 side_by_side(lambda old: fresh(IMPORT.format(imports=imports[old])),
                              args.repeat)),
                ("every plot of the report (warm)",
                 side_by_side(lambda old: draw_all(*plotters[old], results), args.repeat)),
                ("write_report, report.html (fresh)",
                 side_by_side(lambda old: fresh(WRITE.format(
                     source=source if old else "", run=str(args.run), out=out)), args.repeat))]
    print(f"{'':34} {'wall: before':>12} {'after':>8} {'ratio':>6}   "
          f"{'CPU: before':>11} {'after':>8} {'ratio':>6}")
    for name, (old, new) in rows:
        print(f"{name:34} {old[0]:11.3f}s {new[0]:7.3f}s {new[0] / old[0]:6.3f}   "
              f"{old[1]:10.3f}s {new[1]:7.3f}s {new[1] / old[1]:6.3f}")


if __name__ == "__main__":
    main()
