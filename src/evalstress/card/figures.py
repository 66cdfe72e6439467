"""The card's figures, drawn from card.json's data alone: the blind spots (the drop of the score
at each severity of each perturbation, with its 95% interval), discernment (D of every DHP
unit per error level and severity, the line D = 1), and the criteria response (the sensitivity
profile over the quality aspects, or, for an evaluator that rates several aspects, the matrix
of intended against affected aspects).

Each figure is planned first (`figure_plans`: its file name and a text alternative that says
what it shows and what it finds) so card.md can link it without drawing anything, then drawn
by matplotlib into SVG (`draw_figure`), the same bytes for the same card. card.html draws the
same SVG inline (`report.plots.inline_svg`); an untrusted card's figures are drawn in grey.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

from evalstress.card.findings import MIN_PAIRS
from evalstress.report.common import esc
from evalstress.report.plots import BLUE, FAIL, ORANGE, PASS, RC, svg_text

#: the folder of a card's figures, beside card.md
FIGURES = "figures"
#: a colour per evaluator aspect (lines and markers), then the grey of an untrusted card
ASPECT_COLOURS = (BLUE, ORANGE, "#8250df", "#116329", "#953800")
INK, MUTED_INK, UNTRUSTED = "#1f2328", "#59636e", "#6e7781"
#: the order of DHP's error levels, finest first
LEVELS = ("char", "word", "phrase", "sentence", "paragraph")


@dataclass(frozen=True)
class FigurePlan:
    """One figure of a card: its method, its file (relative to the card's folder), a title,
    and the text alternative that carries what the figure finds."""

    key: str
    path: str
    title: str
    alt: str
    legend: str = ""  # how to read it, for its caption


def tidy(value: float) -> float:
    """Float noise (|x| < 1e-9) as 0: an axis of a constant score shows 0, not 1e-17."""
    return 0.0 if abs(value) < 1e-9 else value


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def listing(items: Sequence[str], shown: int = 4) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def gate_failures(gate: Mapping[str, Any]) -> str:
    """What failed the sanity gate, in a few words: 'degenerate, ranking fail'."""
    return ", ".join(str(r).split(":")[0] for r in gate.get("reasons") or [])


def untrusted_prefix(card: Mapping[str, Any]) -> str:
    gate = card["gate"]
    return "" if gate["trusted"] else f"Untrusted (the sanity gate failed: {gate_failures(gate)}). "


def blindspot_alt(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    rows = results.get("rows") or []
    perturbations = list(dict.fromkeys(r["perturbation"] for r in rows))
    failed = list(dict.fromkeys(r["perturbation"] for r in rows if r.get("rank_pass") is False))
    rising = list(dict.fromkeys(r["perturbation"] for r in rows
                                if r.get("monotonic_pass") is False and r.get("rank_pass")))
    said = (f"Blind spots of {card['evaluator']['label']}: the drop of the score, as a share of "
            f"the original's, at each severity of {len(perturbations)} perturbations, with 95% "
            "intervals. ")
    said += (f"The rank test fails for {listing(failed)}: the damage does not lower the score "
             "at every severity." if failed else "Every perturbation lowers the score.")
    if rising:
        said += f" The score rises again at heavier damage under {listing(rising)}."
    return untrusted_prefix(card) + said


def discernment_alt(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    units = [u for u in results.get("units") or [] if u.get("d") is not None]
    threshold = float(results.get("threshold") or 1.0)
    parts = [f"{severity} {level}-level errors average D = {mean(values):.2f} "
             f"({len(values)} units)" for level, severity, values in level_groups(units)]
    said = "; ".join(parts)
    below = sum(1 for u in units if u["d"] < threshold)
    return (untrusted_prefix(card)
            + f"Discernment of {card['evaluator']['label']}: D of each DHP unit by error level "
            f"and severity; D = {threshold:g} is p = 0.05. " + said[:1].upper() + said[1:]
            + f". {below} of {len(units)} units fall below D = {threshold:g}.")


def criteria_alt(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    label = card["evaluator"]["label"]
    if results.get("mode") == "confusion":
        cells = ((results.get("confusion") or {}).get("matrix") or {}).get("cells") or []
        moved = [f"{c['affected']} under {c['perturbation']}" for c in cells
                 if c.get("expected") == "stay" and c.get("passed") is False]
        missed = [f"{c['affected']} under {c['perturbation']}" for c in cells
                  if c.get("expected") == "move" and c.get("passed") is False]
        return (untrusted_prefix(card)
                + f"Criteria response of {label}: each attack at its heaviest severity against "
                "each aspect it rates, coloured by the rank-biserial effect of the drop. "
                + (f"Moved though it should stay: {listing(moved)}. " if moved else
                   "No aspect moved that should stay. ")
                + (f"Missed damage: {listing(missed)}." if missed else "No damage was missed."))
    probed = probed_aspects(results)
    ranked = sorted(probed, key=lambda a: a["relative_change"])
    said = "; ".join(f"{a['quality_aspect']} {pct(a['relative_change'])}" for a in ranked)
    return (untrusted_prefix(card)
            + f"Sensitivity profile of {label}: the drop of the score, as a share of the "
            "original's, when the attacks aimed at each quality aspect damage the text "
            f"(heaviest severity, 95% intervals). Least to most: {said}.")


def probed_aspects(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [a for a in (results.get("sensitivity") or {}).get("aspects") or []
            if a.get("probed") and a.get("relative_change") is not None]


def level_groups(units: Sequence[Mapping[str, Any]]
                 ) -> list[tuple[str, str, list[float]]]:
    """(level, severity, D values) in the order of the hierarchy, minor before major."""
    found: dict[tuple[str, str], list[float]] = {}
    for unit in units:
        if unit.get("d") is not None:
            found.setdefault((str(unit.get("level") or "?"), str(unit["severity"])),
                             []).append(float(unit["d"]))
    order = {level: i for i, level in enumerate(LEVELS)}
    return [(level, severity, found[(level, severity)]) for level, severity in sorted(
        found, key=lambda k: (order.get(k[0], len(LEVELS)), k[0], k[1] != "minor", k[1]))]


def criteria_drawable(results: Mapping[str, Any]) -> bool:
    """Whether the criteria section has something to draw: matrix cells, or probed aspects."""
    if results.get("mode") == "confusion":
        matrix = (results.get("confusion") or {}).get("matrix") or {}
        return bool(matrix.get("cells"))
    return bool(probed_aspects(results))


def figure_plans(card: Mapping[str, Any]) -> list[FigurePlan]:
    """The figures a card has: one per method that ran and has something to draw."""
    plans = []
    for key, section in card["methods"].items():
        results = section.get("results") or {}
        if section.get("status") != "run":
            continue
        if key == "blindspot" and any(r.get("severities") for r in results.get("rows") or []):
            plans.append(FigurePlan(key, f"{FIGURES}/blindspot.svg",
                                    "Drop of the score per severity", blindspot_alt(card, results),
                                    "one panel per perturbation; points: mean drop as a share of "
                                    "the original score, bars: 95% interval, dashed: no change"))
        elif key == "discernment" and any(u.get("d") is not None
                                          for u in results.get("units") or []):
            plans.append(FigurePlan(key, f"{FIGURES}/discernment.svg", "D per error level",
                                    discernment_alt(card, results),
                                    f"dots: DHP units (hollow: fewer than {MIN_PAIRS} examples, "
                                    "too few to reach D = 1); bars: mean; dashed: D = 1"))
        elif key == "criteria" and criteria_drawable(results):
            title = ("Intended against affected aspects" if results.get("mode") == "confusion"
                     else "Sensitivity profile")
            legend = ("cells: rank-biserial effect of the drop and the verdict; framed: the aspect "
                      "the attack aims at" if results.get("mode") == "confusion" else
                      "bars: drop as a share of the original score under the attacks aimed at "
                      "each aspect, heaviest severity; whiskers: 95% interval")
            plans.append(FigurePlan(key, f"{FIGURES}/criteria.svg", title,
                                    criteria_alt(card, results), legend))
    return plans


def colours(card: Mapping[str, Any]) -> tuple[str, ...]:
    return ASPECT_COLOURS if card["gate"]["trusted"] else (UNTRUSTED,) * len(ASPECT_COLOURS)


def verdict_colour(card: Mapping[str, Any], failed: bool) -> str:
    if not card["gate"]["trusted"]:
        return MUTED_INK
    return FAIL if failed else PASS


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def draw_blindspot(card: Mapping[str, Any], results: Mapping[str, Any]) -> Any:
    """Small multiples, one panel per perturbation: the relative drop at each severity with its
    interval, one line per aspect, the line of no change; the panel's title says its verdict."""
    rows = [r for r in results.get("rows") or [] if r.get("severities")]
    names = list(dict.fromkeys(r["perturbation"] for r in rows))
    aspects = list(dict.fromkeys(r["aspect"] for r in rows))
    cols = min(4, len(names))
    lines = -(-len(names) // cols)
    fig = _figure(7.2, 0.92 * lines + 0.3)
    axes = fig.subplots(lines, cols, sharey=True, squeeze=False)
    for ax in axes.flat[len(names):]:
        fig.delaxes(ax)
    palette = colours(card)
    for ax, name in zip(axes.flat, names, strict=False):
        mine = [r for r in rows if r["perturbation"] == name]
        labels: list[str] = []
        for index, row in enumerate(mine):
            points = [s for s in row["severities"] if s.get("relative_change") is not None]
            labels = labels if len(labels) >= len(points) else [str(s["severity"])
                                                               for s in points]
            xs = [i + (index - (len(mine) - 1) / 2) * 0.12 for i in range(len(points))]
            ys = [tidy(100 * s["relative_change"]) for s in points]
            low = [100 * (s["relative_change"] - (s.get("relative_ci_low")
                                                  if s.get("relative_ci_low") is not None
                                                  else s["relative_change"])) for s in points]
            high = [100 * ((s.get("relative_ci_high") if s.get("relative_ci_high") is not None
                            else s["relative_change"]) - s["relative_change"]) for s in points]
            ax.errorbar(xs, ys, yerr=[low, high], color=palette[index % len(palette)], lw=1.2,
                        marker="o", ms=2.8, capsize=1.8, elinewidth=0.8,
                        label=row["aspect"] if len(aspects) > 1 else None)
        ax.axhline(0, color=MUTED_INK, lw=0.7, ls="--")
        ax.set_xticks(range(len(labels)), labels)
        failed = any(r.get("rank_pass") is False for r in mine)
        rising = any(r.get("monotonic_pass") is False for r in mine)
        mark = "FAIL rank" if failed else ("FAIL monotonic" if rising else "pass")
        ax.set_title(f"{name}\n{mark}", loc="left", fontsize=7.5,
                     color=verdict_colour(card, failed or rising))
        ax.grid(True, axis="y", color="#eaeef2", lw=0.6)
        ax.tick_params(axis="x", labelsize=6.5)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    low, high = axes[0, 0].get_ylim()
    if high - low < 2:  # a score that hardly moves: two points of scale around it, not 1e-17
        middle = (high + low) / 2
        axes[0, 0].set_ylim(middle - 1, middle + 1)
    for ax in axes[:, 0]:
        ax.set_ylabel("drop, % of score")
    if len(aspects) > 1:
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper right", ncol=len(aspects), fontsize=7,
                   frameon=False)
    return fig


def draw_discernment(card: Mapping[str, Any], results: Mapping[str, Any]) -> Any:
    """Every unit's D as a dot (hollow: fewer than MIN_PAIRS examples, too few to reach
    D = 1), the mean of each (level, severity) as a bar, the line D = threshold."""
    units = [u for u in results.get("units") or [] if u.get("d") is not None]
    threshold = float(results.get("threshold") or 1.0)
    groups = level_groups(units)
    palette = colours(card)
    fig = _figure(3.45, 1.6)
    ax = fig.subplots()
    for position, (level, severity, values) in enumerate(groups):
        colour = palette[0] if severity == "minor" else palette[1]
        ax.bar(position, mean(values), width=0.62, color=colour, alpha=0.28, lw=0)
        mine = [u for u in units if str(u.get("level") or "?") == level
                and str(u["severity"]) == severity]
        for index, unit in enumerate(sorted(mine, key=lambda u: u["d"])):
            offset = ((index % 7) - 3) * 0.06
            powered = (unit.get("n") or 0) >= MIN_PAIRS
            ax.plot(position + offset, unit["d"], marker="o", ms=3.2, ls="none",
                    color=colour, mfc=colour if powered else "white", mew=0.9)
    ax.axhline(threshold, color=MUTED_INK if not card["gate"]["trusted"] else FAIL, lw=0.9,
               ls="--")
    ax.set_xticks(range(len(groups)), [f"{level}\n{severity}" for level, severity, _ in groups])
    ax.set_ylabel("D")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", color="#eaeef2", lw=0.6)
    ax.tick_params(axis="x", labelsize=6.5)
    return fig


def draw_sensitivity(card: Mapping[str, Any], results: Mapping[str, Any]) -> Any:
    """One bar per (evaluator aspect, probed quality aspect): the relative drop under the
    attacks aimed at it, with its interval; a line at no change."""
    probed = probed_aspects(results)
    several = len({a["aspect"] for a in probed}) > 1
    labels = [f"{a['quality_aspect']} ({a['aspect']})" if several else a["quality_aspect"]
              for a in probed]
    palette = colours(card)
    order = list(dict.fromkeys(a["aspect"] for a in probed))
    fig = _figure(3.45, 0.18 * len(probed) + 0.66)
    ax = fig.subplots()
    for position, aspect in enumerate(probed):
        value = 100 * aspect["relative_change"]
        low = aspect.get("relative_ci_low")
        high = aspect.get("relative_ci_high")
        err = None if low is None or high is None else [[value - 100 * low],
                                                          [100 * high - value]]
        ax.barh(position, value, height=0.6,
                color=palette[order.index(aspect["aspect"]) % len(palette)], alpha=0.85,
                xerr=err, error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": INK})
    ax.axvline(0, color=MUTED_INK, lw=0.7)
    ax.set_yticks(range(len(probed)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("drop of the score, % (heaviest severity)")
    ax.grid(True, axis="x", color="#eaeef2", lw=0.6)
    ax.set_axisbelow(True)
    return fig


def draw_confusion(card: Mapping[str, Any], results: Mapping[str, Any]) -> Any:
    """Attacks (rows) against the aspects the evaluator rates (columns), each cell coloured by
    the rank-biserial effect of the drop and marked pass or FAIL; a cell whose aspect should
    move is framed."""
    from matplotlib.patches import Rectangle

    matrix = (results.get("confusion") or {}).get("matrix") or {}
    attacks, affected = list(matrix.get("attacks") or []), list(matrix.get("affected") or [])
    cells = {(c["perturbation"], c["affected"]): c for c in matrix.get("cells") or []}
    fig = _figure(3.45, 0.24 * len(attacks) + 0.9)
    ax = fig.subplots()
    grid = [[(cells.get((a, b)) or {}).get("rank_biserial") for b in affected] for a in attacks]
    shown = [[v if v is not None else 0.0 for v in row] for row in grid]
    cmap = "RdBu" if card["gate"]["trusted"] else "Greys"
    ax.imshow(shown, cmap=cmap, vmin=-1, vmax=1, aspect="auto")
    for i, attack in enumerate(attacks):
        for j, aspect in enumerate(affected):
            cell = cells.get((attack, aspect))
            if cell is None:
                continue
            verdict = {True: "pass", False: "FAIL"}.get(cell.get("passed"), "–")
            effect = cell.get("rank_biserial")
            text = f"{effect:+.2f}\n{verdict}" if effect is not None else verdict
            ax.text(j, i, text, ha="center", va="center", fontsize=6,
                    color="white" if effect is not None and abs(effect) > 0.55 else INK)
            if cell.get("expected") == "move":
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=1.4,
                                       ec=INK))
    ax.set_xticks(range(len(affected)), affected, rotation=30, ha="right")
    ax.set_yticks(range(len(attacks)), attacks)
    ax.set_xlabel("affected aspect (framed: the one the attack aims at)")
    return fig


def draw_criteria(card: Mapping[str, Any], results: Mapping[str, Any]) -> Any:
    if results.get("mode") == "confusion":
        return draw_confusion(card, results)
    return draw_sensitivity(card, results)


DRAW: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]] = {
    "blindspot": draw_blindspot, "discernment": draw_discernment, "criteria": draw_criteria}


def draw_figure(card: Mapping[str, Any], plan: FigurePlan) -> str:
    """The planned figure as an SVG file's text, with its text alternative as its <title>."""
    import matplotlib


    with matplotlib.rc_context({**RC, "text.color": INK, "axes.labelcolor": INK,
                                "xtick.color": INK, "ytick.color": INK}):
        fig = DRAW[plan.key](card, card["methods"][plan.key].get("results") or {})
        svg = svg_text(fig)
    start = svg.index(">", svg.index("<svg")) + 1
    return f"{svg[:start]}\n <title>{esc(plan.alt)}</title>{svg[start:]}"


def card_figures(card: Mapping[str, Any]) -> list[tuple[FigurePlan, str]]:
    """Every figure of the card, planned and drawn."""
    return [(plan, draw_figure(card, plan)) for plan in figure_plans(card)]
