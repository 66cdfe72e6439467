"""Terminal rendering of the generation stage: acceptance per attack, how far its variants are
verified, and why answers failed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from evalstress.report.sections import trust_caption, trust_text


def generation_table(block: Mapping[str, Any]) -> Table:
    """One row per LLM-written perturbation: planned, accepted, rate, asks and the top reasons
    answers were rejected (every rejected answer counts, also those a re-ask replaced)."""
    generator = block.get("generator") or {}
    title = "LLM-written perturbations"
    if generator:
        title += f" (generator {generator.get('model')}, temperature " \
                 f"{generator.get('temperature')})"
    table = Table(title=title, header_style="bold")
    rows = block.get("perturbations") or {}
    trusted = any(row.get("verification") for row in rows.values())
    for column in ("perturbation", "planned", "accepted", "rate", "not applicable", "asks",
                   "re-asks", *(["verification (precision)"] if trusted else []),
                   "rejected answers (top reasons)"):
        table.add_column(column, justify="left" if column[0] in "prv" and column != "rate"
                         else "right", overflow="fold")
    for name, row in rows.items():
        rate = row.get("acceptance_rate")
        reasons = ", ".join(f"{k} {v}" for k, v in list(row.get("rejections", {}).items())[:4])
        trust = [trust_text(row) or "–"] if trusted else []
        table.add_row(name, str(row["planned"]), str(row["accepted"]),
                      "–" if rate is None else f"{rate:.0%}", str(row.get("not_applicable", 0)),
                      str(row["asks"]), str(row["reasks"]), *trust, reasons or "–")
    usage = block.get("usage")
    if usage:
        table.caption = (f"{usage['requests']} answers asked, {usage['cache_hits']} from the "
                         f"cache, {usage['calls']} calls, {usage['retries']} retries, "
                         f"{usage['errors']} failed; tokens {usage['prompt_tokens']} prompt + "
                         f"{usage['completion_tokens']} completion. Rate = accepted / planned.")
    if trusted:
        table.caption = (str(table.caption or "") + " Verification: "
                         + trust_caption(block.get("precision") or {})).strip()
    return table


#: below this width the per-perturbation table (nine columns) would cut its words: each
#: perturbation then gets a line of its own and its figures an indented line below
GENERATION_TABLE_MIN = 110


def generation_lines(block: Mapping[str, Any]) -> list[str]:
    """The table's content for a narrow console: per perturbation its name on one line and its
    figures, each named, on the next; the caption last."""
    table = generation_table(block)
    columns = [str(c.header) for c in table.columns]
    cells = [list(c.cells) for c in table.columns]
    lines = [str(table.title)]
    for row in range(table.row_count):
        lines.append(f"  {cells[0][row]}")
        lines.append("    " + "; ".join(f"{columns[i]}: {cells[i][row]}"
                                        for i in range(1, len(columns))))
    if table.caption:
        lines.append(str(table.caption))
    return lines


def print_generation(console: Console, block: Mapping[str, Any] | None) -> None:
    if not block:
        return
    if block.get("perturbations"):
        if console.width >= GENERATION_TABLE_MIN:
            console.print(generation_table(block))
        else:
            for line in generation_lines(block):
                console.print(line, highlight=False)
    imported = block.get("imported")
    if imported:
        per = ", ".join(f"{k} {v}" for k, v in imported.get("perturbations", {}).items())
        console.print(f"Imported {imported['variants']} variants from {imported['file']}"
                      + (f" ({per})" if per else "")
                      + (f"; {imported['outside_run']} rows for examples outside this run"
                         if imported.get("outside_run") else "")
                      + (f"; {imported['unchanged']} equal to their original"
                         if imported.get("unchanged") else ""))
