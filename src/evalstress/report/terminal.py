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
    table = Table(title="Blind-spot tests (paper 002): mean score over 5 seeds as noise grows",
                  header_style="bold")
    table.add_column("evaluator / aspect")
    table.add_column("perturbation")
    table.add_column("gold", justify="right")
    table.add_column("score by severity →", overflow="fold")
    table.add_column("noise", justify="right")
    table.add_column("rank", justify="center")
    table.add_column("mono", justify="center")
    table.add_column("verdict", justify="center")
    for row in result.rows:
        points = sorted(row.points, key=lambda p: p.noise_ratio)
        curve = " ".join(_fmt(p.mean) for p in points)
        noise = f"{points[0].noise_ratio:.2f}–{points[-1].noise_ratio:.2f}"
        arrow = "" if row.higher_is_better else " ↓"
        table.add_row(
            f"{row.evaluator}/{row.aspect}{arrow}", row.perturbation, _fmt(row.gold), curve, noise,
            "[green]✓[/]" if row.rank_pass else "[red]✗[/]",
            "[green]✓[/]" if row.monotonic_pass else "[red]✗[/]",
            "[green]pass[/]" if row.passed else "[bold red]FAIL[/]",
        )
    table.caption = (f"↓ lower is better. rank: every severity scores below gold; mono: no rise as "
                     f"the noise ratio grows; tolerance max({result.abs_tol}, {result.rel_tol} × "
                     "|gold|). Standard deviations are in results.json.")
    return table


def print_summary(console: Console, run: RunResult, blind: BlindspotResult | None) -> None:
    plan = run.plan
    console.print(f"[bold]{len(plan.examples)}[/] examples, [bold]{len(plan.variants)}[/] variants, "
                  f"{len(plan.skips)} skipped (perturbation not applicable), "
                  f"{plan.parses} texts parsed")
    for label, stats in run.stats.items():
        console.print(f"  {label}: {stats.requested} score requests, {stats.distinct} distinct, "
                      f"{stats.cached} from cache, {stats.scored} scored in {stats.calls} batches, "
                      f"{stats.missing} missing")
    if blind is not None:
        console.print(blindspot_table(blind))
        failed = blind.failures()
        console.print(f"{len(blind.rows) - len(failed)} of {len(blind.rows)} tests pass; "
                      f"{len(failed)} blind spots found.")
