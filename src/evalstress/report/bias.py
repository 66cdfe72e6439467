"""How a run's report and terminal show the `bias` analysis: each probe arm's effect above its
placebo, its corrected interval and its verdict (`analyses.bias`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from rich.table import Table

from evalstress.analyses.bias import BiasResult
from evalstress.report.common import esc, table
from evalstress.report.renderers import SectionContext, report_section, terminal_tables

HEAD = ["evaluator", "aspect", "probe", "arm", "effect above placebo", "interval", "level",
        "verdict"]


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3g}"


def _cells(row: Mapping[str, Any]) -> list[str]:
    low, high = row.get("low"), row.get("high")
    span = "–" if low is None or high is None else f"{low:+.3g} to {high:+.3g}"
    return [str(row["evaluator"]), str(row["aspect"]), str(row["probe"]), str(row["arm"]),
            _number(row.get("effect")), span, f"{float(row.get('level') or 0.95):.1%}",
            str(row["verdict"])]


@terminal_tables("bias")
def bias_tables(result: BiasResult) -> list[Table]:
    """One table of every probe test."""
    shown = Table(title="Bias probes: effect above placebo (positive: the probe favours the "
                        "text)", header_style="bold")
    for column in HEAD:
        shown.add_column(column)
    for row in result.rows:
        shown.add_row(*(escape(c) for c in _cells(row.to_dict())))
    shown.caption = (f"{result.correction} over {len(result.rows)} tests; intervals resample "
                     "examples")
    return [shown]


@report_section("bias")
def bias_section(data: Mapping[str, Any], context: SectionContext) -> str:
    """The report's table of the probe tests, with how the effect and interval are made."""
    note = (f"<p class='note'>Effect: {esc(data.get('effect', ''))}. Interval: "
            f"{esc(data.get('interval', ''))}, {esc(data.get('correction', ''))} over "
            f"{esc(data.get('n_tests', ''))} tests.</p>")
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in data.get("notes") or [])
    return note + table(HEAD, [_cells(r) for r in data.get("rows") or []], left=4) + notes
