"""Terminal rendering with rich: the table a user reads first.

Every text that comes from the user or a plugin (evaluator labels, aspects, perturbation and
task names, file names) goes through `rich.markup.escape`: a label such as `[/]x` is text,
never markup that breaks the summary after the run's files are written. The tables of each
analysis are registered with `@terminal_tables(name)` (`report.renderers`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from evalstress.analyses.adversarial import AdversarialResult
from evalstress.analyses.blindspot import BlindspotResult, BlindspotRow
from evalstress.core.wording import plural
from evalstress.engine.result import RunResult
from evalstress.report import meant_for
from evalstress.report.common import spread
from evalstress.report.renderers import TERMINAL, terminal_tables


def _t(value: Any) -> str:
    """A user's or a plugin's text as a table cell: shown as written, never read as markup."""
    return escape(str(value))


def _fmt(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.3f}"
    return f"{value:.4f}"


VERDICT_CELL = {"pass": "[green]pass[/]", "fail": "[bold red]FAIL[/]",
                "inconclusive": "[yellow]INCONCLUSIVE[/]", "not-applicable": "[dim]n/a[/]"}


#: the narrowest console that gets the blind-spot tests as one table: eight columns with the
#: built-in names whole and each row in at most two lines (the lexical quickstart's table is
#: 125 wide; at 100 its rows ran to three lines). A narrower console (an 80-column terminal,
#: output piped at the default 100) gets a table per evaluator aspect.
WIDE_TABLE_MIN = 120


def _blindspot_title(result: BlindspotResult) -> str:
    seeds = max((p.n_seeds for row in result.rows for p in row.points), default=0)
    over = f" over {plural(seeds, 'seed')}" if seeds else ""
    return f"Blind-spot tests (paper 002): mean score{over} as noise grows"


def _blindspot_caption(result: BlindspotResult) -> str:
    lower = "↓ lower is better. " if any(not r.higher_is_better for r in result.rows) else ""
    tolerance = ("strict tests, no tolerance (the paper's)" if result.strict else
                 f"tolerance max({result.abs_tol}, {result.rel_tol} × |gold|)")
    return (f"{lower}rank: every severity scores below gold; mono: no rise as "
            f"the noise ratio grows; {tolerance}. n/a: the evaluator is not meant for this "
            "test; INCONCLUSIVE: most scores missing. Standard deviations are in results.json "
            "and report.html.")


def _blindspot_cells(row: BlindspotRow,
                     applies: Callable[[str, str], bool] | None) -> dict[str, str]:
    """One test's cells, as both layouts show them."""
    points = sorted(row.points, key=lambda p: p.noise_ratio)
    verdict = row.verdict
    if applies is not None and not applies(row.evaluator, row.perturbation):
        verdict = "not-applicable"
    return {
        "label": _t(f"{row.evaluator}/{row.aspect}") + ("" if row.higher_is_better else " ↓"),
        "perturbation": _t(row.perturbation),
        "gold": _fmt(row.gold) if math.isfinite(row.gold) else "–",
        "curve": " ".join(_fmt(p.mean) for p in points) or "no scores",
        "noise": f"{points[0].noise_ratio:.2f}–{points[-1].noise_ratio:.2f}" if points else "–",
        "rank": "[green]✓[/]" if row.rank_pass else "[red]✗[/]",
        "mono": "[green]✓[/]" if row.monotonic_pass else "[red]✗[/]",
        "verdict": VERDICT_CELL[verdict],
    }


def blindspot_table(result: BlindspotResult,
                    applies: Callable[[str, str], bool] | None = None) -> Table:
    """Every test in one table, a row each: the layout of a console WIDE_TABLE_MIN wide."""
    table = Table(title=_blindspot_title(result), header_style="bold")
    table.add_column("evaluator / aspect", no_wrap=True)  # a name is never cut: the scores wrap
    table.add_column("perturbation", no_wrap=True)
    table.add_column("gold", justify="right", no_wrap=True)
    table.add_column("score by severity →", overflow="fold")
    table.add_column("noise", justify="right", no_wrap=True)
    table.add_column("rank", justify="center", no_wrap=True)
    table.add_column("mono", justify="center", no_wrap=True)
    table.add_column("verdict", justify="center", no_wrap=True)
    for row in result.rows:
        cells = _blindspot_cells(row, applies)
        table.add_row(cells["label"], cells["perturbation"], cells["gold"], cells["curve"],
                      cells["noise"], cells["rank"], cells["mono"], cells["verdict"])
    table.caption = _blindspot_caption(result)
    return table


def blindspot_by_evaluator(result: BlindspotResult,
                           applies: Callable[[str, str], bool] | None = None
                           ) -> list[RenderableType]:
    """The narrow layout: the title, then per evaluator aspect its name on a line of its own and
    a table of its tests, a test in two lines (perturbation over its gold score; the scores
    by severity, wrapped between numbers, over their noise range; rank, mono, verdict), then
    the legend as a paragraph."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for row in result.rows:
        cells = _blindspot_cells(row, applies)
        grouped.setdefault(cells["label"], []).append(cells)
    widest = max((len(row.perturbation) for row in result.rows), default=0)
    out: list[RenderableType] = [Text(_blindspot_title(result), style="bold")]
    for label, rows in grouped.items():
        table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False,
                      collapse_padding=True)
        table.add_column("perturbation", no_wrap=True, min_width=widest)
        table.add_column("score by severity →", overflow="fold")
        table.add_column("rank", justify="center", no_wrap=True)
        table.add_column("mono", justify="center", no_wrap=True)
        table.add_column("verdict", justify="center", no_wrap=True)
        for cells in rows:
            table.add_row(f"{cells['perturbation']}\ngold {cells['gold']}",
                          f"{cells['curve']}\n[dim]noise {cells['noise']}[/]", cells["rank"],
                          cells["mono"], cells["verdict"])
        out += [Text.from_markup(f"\n[bold]{label}[/]"), table]
    out.append(Text(_blindspot_caption(result), style="dim"))
    return out


def fits_whole(table: Table, console: Console) -> bool:
    """Whether `table` fits `console` with its no-wrap columns whole and every other column as
    wide as its longest word (rich would otherwise cut names to make it fit)."""
    need = 3 * len(table.columns) + 1  # a border and two spaces of padding per column, one more
    for column in table.columns:
        sizes = [Measurement.get(console, console.options, cell)
                 for cell in (column.header, *column.cells)]
        need += max(m.maximum if column.no_wrap else m.minimum for m in sizes)
    return need <= console.width


def blindspot_view(result: BlindspotResult, applies: Callable[[str, str], bool] | None,
                   console: Console) -> list[RenderableType]:
    """The blind-spot tests laid out for `console`: one table from WIDE_TABLE_MIN columns on
    (when its names fit whole), else a table per evaluator aspect."""
    wide = blindspot_table(result, applies)
    if console.width >= WIDE_TABLE_MIN and fits_whole(wide, console):
        return [wide]
    return blindspot_by_evaluator(result, applies)


def print_summary(console: Console, run: RunResult, blind: BlindspotResult | None, *,
                  untrusted: Sequence[str] = ()) -> None:
    """Counts, the blind-spot table and its verdict line; `untrusted` names evaluators whose
    scores are mostly missing, so the line does not read as a clean bill of health for them."""
    plan = run.plan
    console.print(f"[bold]{plural(len(plan.examples), 'example')}[/], "
                  f"[bold]{plural(len(plan.variants), 'variant')}[/], "
                  f"{len(plan.skips):,} skipped (perturbation not applicable), "
                  f"{plural(plan.parses, 'text')} parsed")
    for label, stats in run.stats.items():
        console.print(f"  {_t(label)}: {stats.requested} score requests, {stats.distinct} distinct, "
                      f"{stats.cached} from cache, {stats.scored} scored in {stats.calls} batches, "
                      f"{stats.missing} missing"
                      + (f", {stats.truncated} cut to the model window" if stats.truncated
                         else ""))
    if blind is not None:
        applies = _applicability(run)
        for part in blindspot_view(blind, applies, console):
            console.print(part)
        verdicts = [r.verdict if applies(r.evaluator, r.perturbation) else "not-applicable"
                    for r in blind.rows]
        counts = {v: verdicts.count(v) for v in ("pass", "fail", "inconclusive",
                                                 "not-applicable")}
        console.print(f"{counts['pass']} of {plural(len(verdicts), 'test passes', 'tests pass')}; "
                      f"{plural(counts['fail'], 'blind spot')} found"
                      + (f", {counts['inconclusive']} inconclusive"
                                        if counts["inconclusive"] else "")
                      + (f", {counts['not-applicable']} not applicable (the evaluator is not "
                         "meant for them)" if counts["not-applicable"] else "") + ".")
        if untrusted:
            names = escape(", ".join(untrusted))  # a label such as "judge[x]" is text
            console.print(f"[bold red]Most scores of {names} are missing: "
                          "their verdicts above say nothing (see the error below).[/]")


def _applicability(run: RunResult) -> Callable[[str, str], bool]:
    """Which tests each evaluator of the run is meant for (`Evaluator.meant_for`)."""

    meant = {label: meant_for(signature) for label, signature in run.signatures.items()}
    family = {p.name: str(p.perturbation.info().get("family", ""))
              for p in run.plan.suite.perturbations}

    def applies(evaluator: str, perturbation: str) -> bool:
        declared = meant.get(evaluator)
        return declared is None or perturbation in declared or family.get(
            perturbation, "\0") in declared

    return applies


# --- tables of the other analyses (discernment, confusion, correlation, style) ---------------


def _opt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _d_cell(value: float | None) -> str:
    """A D score, red below the significance threshold D = 1."""
    if value is None:
        return "–"
    text = f"{value + 0.0:.2f}".replace("-0.00", "0.00")  # log_0.05(1) is -0.0
    return f"[green]{text}[/]" if value >= 1 else f"[red]{text}[/]"


@terminal_tables("discernment")
def discernment_tables(result: Any) -> list[Table]:
    summary = Table(title="Discernment (paper 003): D = log_0.05(p); D ≥ 1 ⇔ p ≤ 0.05",
                    header_style="bold")
    for column in ("evaluator", "task", "severity", "D_avg", "D_min", "D_avg^EW", "D_min^EW",
                   "weakest", "units (c/w/s)"):
        summary.add_column(column, justify="right" if column.startswith("D") else "left")
    for s in result.summaries:
        per = s.units_per_level
        summary.add_row(_t(s.evaluator), _t(s.task), _t(s.group), _d_cell(s.d_avg),
                        _d_cell(s.d_min), _d_cell(s.d_avg_ew), _d_cell(s.d_min_ew),
                        _t(s.d_min_at or "–"),
                        f"{per.get('char', 0)}/{per.get('word', 0)}/{per.get('sentence', 0)}")
    summary.caption = "D_avg: each level (char, word, sentence) weighs equally; red: D < 1"
    units = Table(title="Discernment per perturbation", header_style="bold")
    for column in ("evaluator", "task", "perturbation", "severity", "level", "p", "D", "p^EW",
                   "D^EW", "aspect p-values (n)"):
        units.add_column(column)
    for u in result.units:
        tests = ", ".join(f"{_t(t.aspect)} {_opt(t.wilcoxon.pvalue, 3)} ({t.n})"
                          for t in u.tests)
        fallback = "*" if u.weight_source.startswith("default") else ""
        units.add_row(_t(u.evaluator), _t(u.task), _t(u.perturbation), _t(u.severity),
                      _t(u.level or "?"), _opt(u.p, 4),
                      _d_cell(u.d), _opt(u.p_ew, 4), _d_cell(u.d_ew) + fallback, tests)
    if any(u.weight_source.startswith("default") for u in result.units):
        units.caption = "* D^EW on default weights: no expert weights for that perturbation"
    return [summary, units]


@terminal_tables("criteria-confusion")
def confusion_tables(result: Any) -> list[Table]:
    summary = Table(title="Criteria confusion (paper 000): directional (S_T) and invariance (S_F)",
                    header_style="bold")
    for column in ("evaluator", "S_T tests", "missed", "S_F tests", "moved (confusion)"):
        summary.add_column(column)
    for s in result.summaries:
        summary.add_row(_t(s.evaluator), str(s.directional_tests),
                        f"{s.directional_tests - s.directional_passed} ({_opt(s.miss_rate, 2)})",
                        str(s.invariance_tests),
                        f"{s.invariance_failed} ({_opt(s.confusion_rate, 2)})")
    summary.caption = (f"α = {result.alpha}, min |rank-biserial| = {result.min_effect}; "
                       "missed: S_T item not significantly worse; moved: S_F item changed")
    items = Table(title="Criteria confusion: failed items", header_style="bold")
    for column in ("evaluator / aspect", "→ aspect", "perturbation", "test", "change [95% CI]",
                   "p", "r"):
        items.add_column(column)
    for i in result.items:
        if i.passed is False:
            items.add_row(_t(f"{i.evaluator} / {i.aspect}"), _t(i.quality_aspect),
                          _t(f"{i.perturbation}@{i.severity}"), _t(i.test),
                          f"{_opt(i.change)} [{_opt(i.ci_low)}, {_opt(i.ci_high)}]",
                          _opt(i.pvalue, 4), _opt(i.rank_biserial, 2))
    return [summary, items, *(matrix_table(m) for m in result.matrices)]


def matrix_table(matrix: Any) -> Table:
    table = Table(title=f"Inter-aspect {matrix.method} correlation: {_t(matrix.name)}",
                  header_style="bold")
    table.add_column("")
    for label in matrix.labels:
        table.add_column(_t(label), justify="right")
    for label, row in zip(matrix.labels, matrix.values, strict=True):
        table.add_row(_t(label), *(_opt(v, 2) for v in row))
    return table


@terminal_tables("correlation")
def correlation_tables(result: Any) -> list[Table]:
    out = []
    frame_levels = sorted({r.level for r in result.rows}, key=lambda x: ("segment-doc",
                          "segment-global", "system").index(x))
    for level in frame_levels:
        table = Table(title=f"Correlation with human scores: {level}", header_style="bold")
        table.add_column("evaluator / aspect")
        table.add_column("human")
        for method in ("pearson", "spearman", "kendall"):
            table.add_column(f"{method} [95% CI]", justify="right")
        table.add_column("n")
        keyed: dict[tuple[str, str, str], dict[str, Any]] = {}
        for r in result.rows:
            if r.level == level:
                keyed.setdefault((r.evaluator, r.aspect, r.human), {})[r.method] = r
        for (evaluator, aspect, human), by_method in keyed.items():
            cells = []
            n = ""
            for method in ("pearson", "spearman", "kendall"):
                r = by_method.get(method)
                cells.append("–" if r is None else
                             f"{_opt(r.value)} [{_opt(r.ci_low)}, {_opt(r.ci_high)}]")
                n = str(r.n) if r is not None else n
            table.add_row(_t(f"{evaluator} / {aspect}"), _t(human), *cells, n)
        out.append(table)
    if result.matrix is not None:
        out.append(matrix_table(result.matrix))
    return out


@terminal_tables("style")
def style_tables(result: Any) -> list[Table]:
    return [style_table(result)]


def style_table(result: Any) -> Table:
    table = Table(title="Response style: score distributions (originals vs perturbed)",
                  header_style="bold")
    for column in ("evaluator / aspect", "set", "n", "missing", "mean", "std", "min", "q25",
                   "median", "q75", "max"):
        table.add_column(column, justify="left" if column in ("evaluator / aspect", "set")
                         else "right")
    for row in result.rows:
        for name, d in (("original", row.original), ("perturbed", row.perturbed)):
            table.add_row(_t(f"{row.evaluator} / {row.aspect}"), name, str(d.n),
                          str(d.n_missing),
                          *(_opt(v) for v in (d.mean, spread(d.std, d.mean), d.minimum, d.q25,
                                              d.median, d.q75, d.maximum)))
    return table


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


@terminal_tables("adversarial")
def asr_tables(result: AdversarialResult) -> list[Table]:
    return [asr_terminal_table(result)]


def asr_terminal_table(result: AdversarialResult) -> Table:
    """The attack success rates (paper 004, eq. 3) with their Wilson intervals."""
    table = Table(title="Attack success rate (paper 004, eq. 3; Wilson 95% CI)")
    for column in ("victim", "direction", "method", "attempts", "successes", "ASR %",
                   "95% CI", "ASR % of all", "queries/success", "mean queries"):
        table.add_column(column, justify="left" if column in ("victim", "direction", "method")
                         else "right")
    for r in result.asr:
        ci = "–" if r.ci_low is None else f"{_pct(r.ci_low)}-{_pct(r.ci_high)}"
        table.add_row(_t(r.victim), _t(r.direction), _t(r.method),
                      str(r.attempts) + (f" (+{r.not_run} n/a)" if r.not_run else ""),
                      str(r.successes), _pct(r.asr), ci,
                      _pct(r.asr_all) if r.not_run else "=",
                      "–" if r.queries_per_success is None else f"{r.queries_per_success:.1f}",
                      "–" if r.mean_queries is None else f"{r.mean_queries:.1f}")
    return table


def print_analyses(console: Console, analyses: dict[str, Any]) -> None:
    """Print the tables and notes of every analysis except blindspot (print_summary shows that
    one), each through its registered renderer."""
    renderers = TERMINAL.all()
    for name, result in analyses.items():
        if name == "blindspot":
            continue
        render = renderers.get(name)
        for table in render(result) if render is not None else []:
            console.print(table)
        for note in getattr(result, "notes", None) or []:
            console.print(f"[dim]note: {_t(note)}[/]")
