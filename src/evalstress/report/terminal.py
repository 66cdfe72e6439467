"""Terminal rendering with rich: the table a user reads first."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from evalstress.analyses.blindspot import BlindspotResult
from evalstress.runner import RunResult


def _fmt(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.3f}"
    return f"{value:.4f}"


def blindspot_table(result: BlindspotResult) -> Table:
    table = Table(title="Blind-spot tests (paper 002): score by noise ratio, mean ± std over seeds",
                  show_lines=False, header_style="bold")
    table.add_column("evaluator / aspect")
    table.add_column("perturbation")
    table.add_column("gold", justify="right")
    table.add_column("noise ratio → score", overflow="fold")
    table.add_column("rank", justify="center")
    table.add_column("mono", justify="center")
    table.add_column("verdict", justify="center")
    for row in result.rows:
        curve = "  ".join(
            f"{p.noise_ratio:.2f}→{_fmt(p.mean)}±{_fmt(p.std)}"
            for p in sorted(row.points, key=lambda p: p.noise_ratio))
        arrow = "" if row.higher_is_better else " (↓ better)"
        table.add_row(
            f"{row.evaluator} / {row.aspect}{arrow}", row.perturbation, _fmt(row.gold), curve,
            "[green]✓[/]" if row.rank_pass else "[red]✗[/]",
            "[green]✓[/]" if row.monotonic_pass else "[red]✗[/]",
            "[green]pass[/]" if row.passed else "[bold red]FAIL[/]",
        )
    table.caption = (f"tolerance = max({result.abs_tol}, {result.rel_tol} × |gold|); rank: every "
                     "severity below gold; mono: no rise as the noise ratio grows")
    return table


def print_summary(console: Console, run: RunResult, blind: BlindspotResult | None) -> None:
    plan = run.plan
    console.print(f"[bold]{len(plan.examples)}[/] examples, [bold]{len(plan.variants)}[/] variants, "
                  f"{len(plan.skips)} skipped (perturbation not applicable), "
                  f"{plan.parses} texts parsed")
    for label, stats in run.stats.items():
        console.print(f"  {label}: {stats.requested} score requests, {stats.distinct} distinct, "
                      f"{stats.cached} from cache, {stats.scored} scored in {stats.calls} batches, "
                      f"{stats.missing} missing"
                      + (f", {stats.truncated} cut to the model window" if stats.truncated
                         else ""))
    if blind is not None:
        console.print(blindspot_table(blind))
        failed = blind.failures()
        console.print(f"{len(blind.rows) - len(failed)} of {len(blind.rows)} tests pass; "
                      f"{len(failed)} blind spots found.")
