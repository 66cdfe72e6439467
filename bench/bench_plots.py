"""The report's plots written by `report.chart` against the matplotlib drawing they replaced,
side by side on the same finished run.

The drawing before is the package's own `report/plots.py` at commit `--before` (read from git,
so the comparison needs matplotlib installed and the repository's history). Three numbers each:
the import of what draws the plots (matplotlib before; report.plots with report.chart
after) in a fresh interpreter; drawing every plot of the report in
a warm interpreter (the median of `--repeat` rounds); and `write_report` of the whole
report.html in a fresh process, as `evalstress report RUN_DIR` does it. The last column is the
ratio after / before.

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
IMPORT = ("import time, evalstress.report; start = time.perf_counter(); {imports}; "
          "print(time.perf_counter() - start)")
#: a fresh interpreter that writes report.html with the plotters of `module` (plots, or the
#: drawing before, executed from its source) and prints how long write_report took
WRITE = """
import sys, time, types
start = time.perf_counter()
from evalstress.report import html
source = {source!r}
if source:
    before = types.ModuleType("plots_before")
    exec(compile(source, "plots_before.py", "exec"), before.__dict__)
    html.curves_svg, html.discernment_svg = before.curves_svg, before.discernment_svg
html.write_report({run!r}, {out!r})
print(time.perf_counter() - start)
"""


def before_source(commit: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:src/evalstress/report/plots.py"],
                          capture_output=True, text=True, check=True).stdout


def load_before(source: str) -> types.ModuleType:
    module = types.ModuleType("plots_before")
    exec(compile(source, "plots_before.py", "exec"), module.__dict__)  # the package, from git
    return module


def fresh(code: str) -> float:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return float(done.stdout.strip().splitlines()[-1])


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
             results: Mapping[str, Any]) -> float:
    curves, units = figures(results)
    start = time.perf_counter()
    for rows, ylabel in curves:
        curves_svg(rows, ylabel=ylabel)
    for evaluator, members in units:
        discernment_svg(members, evaluator=evaluator)
    return time.perf_counter() - start


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
    rows = []
    rows.append(("import of the plotter (fresh)",
                 statistics.median(fresh(IMPORT.format(
                     imports="import matplotlib.figure, matplotlib.backends.backend_svg"))
                     for _ in range(args.repeat)),
                 statistics.median(fresh(IMPORT.format(imports="import evalstress.report.plots"))
                                   for _ in range(args.repeat))))
    draw_all(before.curves_svg, before.discernment_svg, results)  # warm both up
    draw_all(plots.curves_svg, plots.discernment_svg, results)
    rows.append(("every plot of the report (warm)",
                 statistics.median(draw_all(before.curves_svg, before.discernment_svg, results)
                                   for _ in range(args.repeat)),
                 statistics.median(draw_all(plots.curves_svg, plots.discernment_svg, results)
                                   for _ in range(args.repeat))))
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "report.html")
        timings = {name: statistics.median(
            fresh(WRITE.format(source=code, run=str(args.run), out=out))
            for _ in range(args.repeat)) for name, code in (("before", source), ("after", ""))}
    rows.append(("write_report, report.html (fresh)", timings["before"], timings["after"]))
    print(f"{'':36} {'before':>10} {'after':>10} {'after/before':>13}")
    for name, old, new in rows:
        print(f"{name:36} {old:9.3f}s {new:9.3f}s {new / old:13.3f}")


if __name__ == "__main__":
    main()
