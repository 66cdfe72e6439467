"""The card's figures, drawn from card.json's data alone: the blind spots (the drop of the score
at each severity of each perturbation, with its 95% interval), discernment (D of every DHP
unit per error level and severity, the line D = 1), and the criteria response (the sensitivity
profile over the quality aspects, or, for an evaluator that rates several aspects, the matrix
of intended against affected aspects).

Each figure is planned first (`figure_plans`: its file name and a text alternative that says
what it shows and what it finds) so card.md can link it without drawing anything, then drawn
into SVG by `report.chart` (`draw_figure`), the same bytes for the same card. card.html draws the
same SVG inline (`report.plots.inline_svg`); an untrusted card's figures are drawn in grey.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

from evalstress.card.findings import MIN_PAIRS
from evalstress.report.chart import (
    INK,
    LABEL,
    MUTED,
    TICK,
    Chart,
    Panel,
    nice_ticks,
    padded,
    ramp,
    readable,
    text_on,
    text_width,
    tick_labels,
    ylabel_room,
)
from evalstress.report.common import esc
from evalstress.report.plots import BLUE, FAIL, ORANGE, PASS

#: the folder of a card's figures, beside card.md
FIGURES = "figures"
#: a colour per evaluator aspect (lines and markers), then the grey of an untrusted card
ASPECT_COLOURS = (BLUE, ORANGE, "#8250df", "#116329", "#953800")
UNTRUSTED = "#6e7781"
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
        return MUTED
    return FAIL if failed else PASS


def shared_range(values: Sequence[float]) -> tuple[float, float]:
    """The y range of panels that share a scale: the values padded; a range under two points
    (a score that hardly moves) becomes two points around its middle, not 1e-17."""
    low, high = padded(min(values), max(values))
    if high - low < 2:
        middle = (high + low) / 2
        return middle - 1, middle + 1
    return low, high


#: a blind-spot panel's plotting box, the gap between columns, the room above (a two-line
#: title) and below (tick labels and the axis label)
PANEL_W, PANEL_H, GAP, ABOVE, BELOW = 142.0, 44.0, 22.0, 26.0, 32.0


def draw_blindspot(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    """Small multiples, one panel per perturbation: the relative drop at each severity with its
    interval, one line per aspect, the line of no change; the panel's title says its verdict."""
    rows = [r for r in results.get("rows") or [] if r.get("severities")]
    names = list(dict.fromkeys(r["perturbation"] for r in rows))
    aspects = list(dict.fromkeys(r["aspect"] for r in rows))
    drawn = {id(r): [s for s in r["severities"] if s.get("relative_change") is not None]
             for r in rows}
    bounds = [0.0]
    for points in drawn.values():
        for s in points:
            change = s["relative_change"]
            bounds += [100 * change, 100 * _or(s.get("relative_ci_low"), change),
                       100 * _or(s.get("relative_ci_high"), change)]
    low, high = shared_range([tidy(b) for b in bounds])
    yticks = nice_ticks(low, high, 4)
    ylabels = tick_labels(yticks)
    cols = min(4, len(names))
    lines = -(-len(names) // cols)
    left = ylabel_room(ylabels) + 4
    pitch = ABOVE + PANEL_H + BELOW
    top = 18.0 if len(aspects) > 1 else 0.0
    chart = Chart(left + cols * PANEL_W + (cols - 1) * GAP + 10, top + lines * pitch)
    palette = colours(card)
    for number, name in enumerate(names):
        line, col = divmod(number, cols)
        mine = [r for r in rows if r["perturbation"] == name]
        labels = max(([str(s["severity"]) for s in drawn[id(r)]] for r in mine), key=len)
        panel = Panel.at(chart, (left + col * (PANEL_W + GAP), top + line * pitch + ABOVE,
                                 PANEL_W, PANEL_H), (-0.5, max(len(labels), 1) - 0.5),
                         (low, high))
        panel.grid(yticks)
        panel.hline(0, MUTED, width=0.7, dash="4 2.5")
        for index, row in enumerate(mine):
            points = drawn[id(row)]
            xs = [i + (index - (len(mine) - 1) / 2) * 0.12 for i in range(len(points))]
            ys = [tidy(100 * s["relative_change"]) for s in points]
            colour = palette[index % len(palette)]
            panel.errorbars(xs, [100 * _or(s.get("relative_ci_low"), s["relative_change"])
                                 for s in points],
                            [100 * _or(s.get("relative_ci_high"), s["relative_change"])
                             for s in points], colour, cap=1.8)
            panel.line(xs, ys, colour, width=1.2)
            panel.markers(xs, ys, colour, size=2.2)
        failed = any(r.get("rank_pass") is False for r in mine)
        rising = any(r.get("monotonic_pass") is False for r in mine)
        mark = "FAIL rank" if failed else ("FAIL monotonic" if rising else "pass")
        panel.chart.text(panel.left, panel.top - 17, f"{name}\n{mark}", size=9.5,
                         fill=verdict_colour(card, failed or rising), bold=True)
        panel.yaxis(yticks, ylabels if col == 0 else [], "drop, % of score" if col == 0 else None)
        panel.xaxis(list(range(len(labels))), labels, "severity")
    if len(aspects) > 1:
        chart.swatch_legend(chart.width - 8, 13, [(palette[i % len(palette)], aspect)
                                                  for i, aspect in enumerate(aspects)])
    return chart.svg()


def _or(value: float | None, default: float) -> float:
    return default if value is None else float(value)


def draw_discernment(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    """Every unit's D as a dot (hollow: fewer than MIN_PAIRS examples, too few to reach
    D = 1), the mean of each (level, severity) as a bar, the line D = threshold."""
    units = [u for u in results.get("units") or [] if u.get("d") is not None]
    threshold = float(results.get("threshold") or 1.0)
    groups = level_groups(units)
    palette = colours(card)
    high = padded(0.0, max([float(u["d"]) for u in units] + [threshold]))[1]
    yticks = nice_ticks(0.0, high, 4)
    ylabels = tick_labels(yticks)
    left = ylabel_room(ylabels) + 4
    chart = Chart(331, 150)
    panel = Panel.at(chart, (left, 12, 331 - left - 8, 92), (-0.5, len(groups) - 0.5),
                     (0.0, high))
    panel.grid(yticks)
    for position, (level, severity, values) in enumerate(groups):
        colour = palette[0] if severity == "minor" else palette[1]
        panel.rect(position - 0.31, position + 0.31, 0.0, mean(values), colour, opacity=0.28)
        mine = sorted((u for u in units if str(u.get("level") or "?") == level
                       and str(u["severity"]) == severity), key=lambda u: u["d"])
        for powered in (True, False):
            dots = [(position + ((index % 7) - 3) * 0.06, float(unit["d"]))
                    for index, unit in enumerate(mine)
                    if ((unit.get("n") or 0) >= MIN_PAIRS) is powered]
            panel.markers([x for x, _ in dots], [y for _, y in dots], colour, size=2.4,
                          hollow=not powered)
    panel.hline(threshold, MUTED if not card["gate"]["trusted"] else FAIL, width=0.9,
                dash="4 2.5")
    panel.yaxis(yticks, ylabels, "D")
    panel.xaxis(list(range(len(groups))), [f"{level}\n{severity}" for level, severity, _ in groups],
                "error level and severity")
    return chart.svg()


def draw_sensitivity(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    """One bar per (evaluator aspect, probed quality aspect): the relative drop under the
    attacks aimed at it, with its interval; a line at no change."""
    probed = probed_aspects(results)
    several = len({a["aspect"] for a in probed}) > 1
    labels = [f"{a['quality_aspect']} ({a['aspect']})" if several else a["quality_aspect"]
              for a in probed]
    palette = colours(card)
    order = list(dict.fromkeys(a["aspect"] for a in probed))
    ends = [0.0] + [100 * _or(a.get(k), a["relative_change"]) for a in probed
                    for k in ("relative_change", "relative_ci_low", "relative_ci_high")]
    span = padded(min(ends), max(ends))
    xticks = nice_ticks(*span, 5)
    left = ylabel_room(labels) + 4
    height = max(17.0 * len(probed), 70.0)  # tall enough for the upright y label
    chart = Chart(331, height + 46)
    panel = Panel.at(chart, (left, 8, 331 - left - 10, height), span,
                     (height / 17.0 - 0.5, -0.5))
    panel.grid(xticks, axis="x")
    for position, aspect in enumerate(probed):
        colour = palette[order.index(aspect["aspect"]) % len(palette)]
        panel.rect(0.0, 100 * aspect["relative_change"], position - 0.3, position + 0.3,
                   colour, opacity=0.85)
        low, high = aspect.get("relative_ci_low"), aspect.get("relative_ci_high")
        if low is not None and high is not None:
            panel.errorbars([position], [100 * low], [100 * high], INK, cap=2,
                            horizontal=True)
    panel.vline(0, MUTED, width=0.7)
    panel.yaxis(list(range(len(probed))), labels, "quality aspect")
    panel.xaxis(xticks, tick_labels(xticks), "drop of the score, % (heaviest severity)")
    return chart.svg()


#: ColorBrewer's RdBu (red: the score drops, blue: it rises) and Greys, -1 to 1
RED_BLUE = ("#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0",
            "#92c5de", "#4393c3", "#2166ac", "#053061")
GREYS = ("#ffffff", "#f0f0f0", "#d9d9d9", "#bdbdbd", "#969696", "#737373", "#525252",
         "#252525", "#000000")


def draw_confusion(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    """Attacks (rows) against the aspects the evaluator rates (columns), each cell coloured by
    the rank-biserial effect of the drop and marked pass or FAIL; a cell whose aspect should
    move is framed."""
    matrix = (results.get("confusion") or {}).get("matrix") or {}
    attacks, affected = list(matrix.get("attacks") or []), list(matrix.get("affected") or [])
    cells = {(c["perturbation"], c["affected"]): c for c in matrix.get("cells") or []}
    anchors = RED_BLUE if card["gate"]["trusted"] else GREYS
    left = ylabel_room(attacks) + 4
    below = max((text_width(a, TICK) for a in affected), default=0.0) * 0.5 + 40
    height = max(23.0 * len(attacks), 70.0)
    width = max(195.0, 56.0 * len(affected))
    xlabel = "affected aspect (framed: the one the attack aims at)"
    chart = Chart(max(left + width + 10, left + width / 2 + text_width(xlabel, LABEL) / 2 + 8),
                  8 + height + below)
    panel = Panel.at(chart, (left, 8, width, height), (-0.5, len(affected) - 0.5),
                     (len(attacks) - 0.5, -0.5))
    for i, attack in enumerate(attacks):
        for j, aspect in enumerate(affected):
            cell = cells.get((attack, aspect))
            effect = (cell or {}).get("rank_biserial")
            fill = readable(ramp(anchors, ((effect if effect is not None else 0.0) + 1) / 2))
            panel.rect(j - 0.5, j + 0.5, i - 0.5, i + 0.5, fill)
            if cell is None:
                continue
            verdict = {True: "pass", False: "FAIL"}.get(cell.get("passed"), "–")
            text = f"{effect:+.2f}\n{verdict}" if effect is not None else verdict
            chart.text(panel.x(j), panel.y(i), text, size=8, anchor="middle",
                       fill=text_on(fill), middle=True)
    for i, attack in enumerate(attacks):
        for j, aspect in enumerate(affected):
            if (cells.get((attack, aspect)) or {}).get("expected") == "move":
                panel.rect(j - 0.47, j + 0.47, i - 0.47, i + 0.47, INK, outline=INK)
    panel.yaxis(list(range(len(attacks))), attacks, "attack", line=False)
    panel.xaxis(list(range(len(affected))), affected, xlabel, rotate=-30, line=False)
    return chart.svg()


def draw_criteria(card: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    if results.get("mode") == "confusion":
        return draw_confusion(card, results)
    return draw_sensitivity(card, results)


DRAW: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], str]] = {
    "blindspot": draw_blindspot, "discernment": draw_discernment, "criteria": draw_criteria}


def draw_figure(card: Mapping[str, Any], plan: FigurePlan) -> str:
    """The planned figure as an SVG file's text, with its text alternative as its <title>."""
    svg = DRAW[plan.key](card, card["methods"][plan.key].get("results") or {})
    start = svg.index(">") + 1
    return (f'<?xml version="1.0" encoding="utf-8"?>\n{svg[:start]}\n <title>{esc(plan.alt)}'
            f"</title>{svg[start:]}\n")


def card_figures(card: Mapping[str, Any]) -> list[tuple[FigurePlan, str]]:
    """Every figure of the card, planned and drawn."""
    return [(plan, draw_figure(card, plan)) for plan in figure_plans(card)]
