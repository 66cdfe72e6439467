"""Plots of the report as inline SVG: real axes, ticks, axis labels and titles, no script.

Drawn by `report.chart` (SVG written directly, a few milliseconds a figure): text stays text,
the same results give the same bytes, and no figure has an id of its own, so several figures
live in one page. Curve points whose noise ratios nearly coincide (sentence-switching moves a
share of the text that hardly depends on its severity) are merged into one marker that shows
their mean and their range, not drawn on top of each other.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalstress.report.chart import (
    MUTED,
    TITLE,
    Chart,
    Panel,
    nice_ticks,
    padded,
    text_width,
    tick_labels,
    ylabel_room,
)
from evalstress.report.common import esc

PASS, FAIL, GREY, BLUE, ORANGE = "#1a7f37", "#cf222e", "#8c959f", "#0969da", "#bc4c00"
#: curve points closer in noise ratio than this share of their panel's x range are drawn as one
#: (their markers and whiskers would overlap), as long as the merged ones span no more than WIDEST
CLOSE, WIDEST = 0.1, 0.2
#: the narrowest a figure is drawn, in CSS pixels: below it the axis labels stop being legible
READABLE_PX = 300


def inline_svg(svg: str, label: str = "") -> str:
    """A chart's SVG text (`report.chart.Chart.svg`, with or without a file's prolog) as an
    <svg> element for inline use: the prolog dropped, width and height replaced by a style
    that scales it down to its container, never up past its own size; `label`, the figure's
    finding in words, becomes its aria-label (what a screen reader says for the picture).
    A chart has no element ids, so several share a page as they are."""
    svg = svg[svg.index("<svg"):]
    width = re.search(r'<svg[^>]*\bwidth="([0-9.]+)px"', svg)
    svg = re.sub(r'(<svg[^>]*?)\s(width|height)="[^"]*"', r"\1", svg, count=2)
    own = float(width.group(1)) if width else None
    # scaled down to its box, yet never below a readable width (or its own, if smaller): a
    # figure wider than a phone scrolls in its <figure> instead of shrinking to a thumbnail
    max_width = (f"max-width:{own:.0f}px;min-width:{min(own, READABLE_PX):.0f}px;" if own
                 else f"min-width:{READABLE_PX}px;")
    alternative = f' aria-label="{esc(label)}"' if label else ""
    return svg.replace(
        "<svg", f'<svg role="img"{alternative} style="width:100%;{max_width}height:auto"', 1)


def curves_alt(rows: Sequence[Mapping[str, Any]], ylabel: str) -> str:
    """The curves' finding in words: for each perturbation, how far the mean score moved from
    gold at the strongest noise, and the verdict."""
    said = []
    for row in rows:
        points = sorted(row.get("points") or [], key=lambda p: p["noise_ratio"])
        if not points:
            continue
        gold, last = float(row["gold"]), points[-1]
        mean = float(last["mean"])
        where = f"at noise ratio {float(last['noise_ratio']):.2f}"
        if gold:
            change = 100 * (mean - gold) / abs(gold)
            moved = ("score stays level" if abs(change) < 0.5 else
                     f"score {'drops' if change < 0 else 'rises'} {abs(change):.0f}%")
        else:
            moved = f"score goes from 0 to {mean:.3g}"
        verdict = verdict_of(row)
        said.append(f"{row['perturbation']}: {moved} {where} ({verdict})")
    return (f"{ylabel} against noise ratio, one panel per perturbation: " + "; ".join(said)
            if said else "")


def discernment_alt(units: Sequence[Mapping[str, Any]], evaluator: str) -> str:
    """The discernment bars' finding in words: how many perturbations reach D >= 1
    (p <= 0.05), and each one's D."""
    if not units:
        return ""
    seen = [u for u in units if (u.get("d") or 0.0) >= 1.0]
    each = "; ".join(f"{u['perturbation']}@{u['severity']}: D {float(u.get('d') or 0.0):.2f}"
                     for u in units)
    return (f"Discernment of {evaluator}: {len(seen)} of {len(units)} perturbations reach "
            f"D of 1 or more (p at most 0.05). {each}")


def _rank_fails(points: Sequence[Mapping[str, Any]], sign: float, tol: float) -> list[bool]:
    return [sign * float(p["delta"]) >= -tol for p in points]


def _mono_fails(points: Sequence[Mapping[str, Any]], sign: float, tol: float) -> list[bool]:
    deltas = [0.0] + [sign * float(p["delta"]) for p in points]
    return [b > a + tol for a, b in itertools.pairwise(deltas)]


@dataclass(frozen=True)
class Spot:
    """One drawn point of a curve: one severity, or several whose noise ratios nearly coincide
    (then the mean of their means, and low..high spans every one's mean +/- sd)."""

    x: float
    y: float
    low: float
    high: float
    severities: tuple[str, ...]
    not_below: bool  # a severity here fails the rank test
    rises: bool  # a severity here rises by more than the tolerance

    @property
    def merged(self) -> bool:
        return len(self.severities) > 1


def curve_spots(row: Mapping[str, Any]) -> list[Spot]:
    """The points of a blind-spot row as drawn, by noise ratio: neighbours closer than CLOSE
    of the x range (0 to the largest ratio) join one spot while it spans at most WIDEST."""
    points = sorted(row["points"], key=lambda p: p["noise_ratio"])
    gold, tol = float(row["gold"]), float(row.get("tolerance") or 0.0)
    sign = 1.0 if row.get("higher_is_better", True) else -1.0
    rank_bad, mono_bad = _rank_fails(points, sign, tol), _mono_fails(points, sign, tol)
    extent = max([float(p["noise_ratio"]) for p in points] + [0.0]) or 1.0
    groups: list[list[int]] = []
    for index, point in enumerate(points):
        x = float(point["noise_ratio"])
        if (groups and x - float(points[groups[-1][-1]]["noise_ratio"]) < CLOSE * extent
                and x - float(points[groups[-1][0]]["noise_ratio"]) <= WIDEST * extent):
            groups[-1].append(index)
        else:
            groups.append([index])
    spots = [Spot(0.0, gold, gold, gold, ("gold",), False, False)]
    for group in groups:
        members = [points[i] for i in group]
        means = [float(p["mean"]) for p in members]
        sds = [float(p.get("std") or 0.0) for p in members]
        spots.append(Spot(
            sum(float(p["noise_ratio"]) for p in members) / len(members),
            sum(means) / len(means), min(m - s for m, s in zip(means, sds, strict=True)),
            max(m + s for m, s in zip(means, sds, strict=True)),
            tuple(str(p.get("severity", f"{float(p['noise_ratio']):.2f}")) for p in members),
            any(rank_bad[i] for i in group), any(mono_bad[i] for i in group)))
    return spots


def fit(text: str, width: float, size: float) -> str:
    """`text` cut with an ellipsis to about `width` pixels at font size `size`."""
    most = max(4, int(width / (0.6 * size)))
    return text if len(text) <= most else text[:most - 1] + "…"


def verdict_of(row: Mapping[str, Any]) -> str:
    return str(row.get("verdict") or ("pass" if row.get("passed") else "fail"))


#: a curve panel's plotting box, the gap between columns, the room above (title) and below
#: (tick labels and the axis label)
PANEL_W, PANEL_H, GAP, ABOVE, BELOW = 150.0, 96.0, 26.0, 22.0, 40.0


def curves_svg(rows: Sequence[Mapping[str, Any]], *, ylabel: str, columns: int = 6) -> str:
    """Score against noise ratio, one panel per perturbation, all on one y-scale.

    Each panel: the gold score at ratio 0, the mean over seeds per severity with the seed band
    (+/- one standard deviation) and error bars, the tolerance band around gold (where a score
    counts as "not below gold"), and red markers on the points that break the rank test (x) or
    rise by more than the tolerance (ring); a diamond stands for severities merged (`Spot`)."""
    rows = [r for r in rows if r.get("points")]
    if not rows:
        return ""
    drawn = [curve_spots(row) for row in rows]
    # one shared y-range: every spot's band and every gold's tolerance band
    bounds = [value for row, spots in zip(rows, drawn, strict=True)
              for value in (float(row["gold"]) - float(row.get("tolerance") or 0.0),
                            float(row["gold"]) + float(row.get("tolerance") or 0.0),
                            *(s.low for s in spots), *(s.high for s in spots))]
    low, high = padded(min(bounds), max(bounds))
    yticks = nice_ticks(low, high, 5)
    ylabels = tick_labels(yticks)
    cols = min(columns, len(rows))
    lines = math.ceil(len(rows) / cols)
    left = ylabel_room(ylabels) + 4
    pitch = ABOVE + PANEL_H + BELOW
    chart = Chart(left + cols * PANEL_W + (cols - 1) * GAP + 12, lines * pitch + 6)
    for index, (row, spots) in enumerate(zip(rows, drawn, strict=True)):
        line, col = divmod(index, cols)
        extent = max(s.x for s in spots) or 1.0
        panel = Panel.at(chart, (left + col * (PANEL_W + GAP), line * pitch + ABOVE + 2,
                                 PANEL_W, PANEL_H), padded(0.0, extent, 0.06), (low, high))
        _panel(panel, row, spots, yticks)
        panel.yaxis(yticks, ylabels if col == 0 else [], ylabel if col == 0 else None)
        xticks = nice_ticks(0.0, extent, 4)
        panel.xaxis(xticks, tick_labels(xticks), "noise ratio")
    return inline_svg(chart.svg(), curves_alt(rows, ylabel))


def _panel(panel: Panel, row: Mapping[str, Any], spots: Sequence[Spot],
           yticks: Sequence[float]) -> None:
    gold, tol = float(row["gold"]), float(row.get("tolerance") or 0.0)
    verdict = verdict_of(row)
    colour = {"pass": BLUE, "fail": FAIL}.get(verdict, GREY)
    panel.grid(yticks)
    panel.rect(panel.x.low, panel.x.high, gold - tol, gold + tol, "#d0d7de", opacity=0.55)
    panel.hline(gold, "#57606a", dash="4 2.5")
    xs = [s.x for s in spots]
    panel.band(xs, [s.low for s in spots], [s.high for s in spots], colour, 0.15)
    panel.line(xs, [s.y for s in spots], colour)
    spread = [s for s in spots if s.high > s.low]
    panel.errorbars([s.x for s in spread], [s.low for s in spread], [s.high for s in spread],
                    colour)
    single = [s for s in spots if not s.merged]
    panel.markers([s.x for s in single], [s.y for s in single], colour)
    merged = [s for s in spots if s.merged]
    panel.markers([s.x for s in merged], [s.y for s in merged], colour, shape="diamond",
                  size=3.4, titles=[f"severities {', '.join(s.severities)} merged: their noise "
                                    f"ratios nearly coincide; mean {s.y:.4g}, range "
                                    f"{s.low:.4g} to {s.high:.4g}" for s in merged])
    for spot in merged:
        panel.chart.text(panel.x(spot.x) - 6, panel.y(spot.y) - 6, f"×{len(spot.severities)}",
                         anchor="end", fill=MUTED)
    bad = [s for s in spots if s.not_below]
    panel.markers([s.x for s in bad], [s.y for s in bad], FAIL, shape="cross", size=4.0)
    ring = [s for s in spots if s.rises]
    panel.markers([s.x for s in ring], [s.y for s in ring], FAIL, shape="ring", size=5.5)
    mark = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE",
            "not-applicable": "n/a"}.get(verdict, verdict)
    room = PANEL_W + GAP - 8 - text_width(f" · {mark}", TITLE)
    panel.title(f"{fit(str(row['perturbation']), room, TITLE)} · {mark}",
                {"fail": FAIL, "pass": PASS}.get(verdict, MUTED))


#: a discernment panel's plotting width, each bar pair's height
BARS_W, BAR_ROW = 240.0, 23.0


def discernment_svg(units: Sequence[Mapping[str, Any]], *, evaluator: str) -> str:
    """D per perturbation as horizontal bars, one panel per severity group (minor, major, or
    all), D and D with expert weights side by side, the line D = 1 (p = 0.05)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for unit in units:
        groups.setdefault(str(unit["severity"]), []).append(unit)
    if not groups:
        return ""
    labelled = [g for g in ("minor", "major") if g in groups]
    others = [u for u in units if str(u["severity"]) not in ("minor", "major")]
    groups = {g: groups[g] for g in labelled}
    if others:  # graded severities share one panel, each bar named perturbation@severity
        groups["other severities"] = others
    tallest = max(len(members) for members in groups.values())
    names = {group: [(str(u["perturbation"]) if group in ("minor", "major")
                      else f"{u['perturbation']}@{u['severity']}")[:34] for u in members]
             for group, members in groups.items()}
    values = [float(u.get(k) or 0.0) for u in units for k in ("d", "d_ew")]
    span = (min(0.0, *values), max(1.0, *values) * 1.05)
    xticks = nice_ticks(span[0], span[1], 5)
    rooms = [ylabel_room(names[g]) + 4 for g in groups]
    top, height = 46.0, max(BAR_ROW * tallest, 80.0)  # tall enough for the upright y label
    chart = Chart(sum(rooms) + len(groups) * (BARS_W + 14), top + height + 44)
    chart.swatch_legend(chart.width - 8, 14, [(BLUE, "D"), (ORANGE, "D with expert weights")])
    left = 0.0
    for room, (group, members) in zip(rooms, groups.items(), strict=True):
        left += room
        rows = max(len(members), height / BAR_ROW)
        panel = Panel.at(chart, (left, top, BARS_W, height), span, (rows - 0.5, -0.5))
        panel.grid(xticks, axis="x")
        for position, unit in enumerate(members):
            panel.rect(0.0, float(unit.get("d") or 0.0), position - 0.39, position - 0.01, BLUE)
            panel.rect(0.0, float(unit.get("d_ew") or 0.0), position + 0.01, position + 0.39,
                       ORANGE)
        panel.vline(1.0, FAIL, width=0.9, dash="4 2.5")
        panel.yaxis(list(range(len(members))), names[group], "perturbation")
        panel.xaxis(xticks, tick_labels(xticks), "D = log_0.05(p)  (dashed: D = 1, p = 0.05)")
        panel.title(group)
        left += BARS_W + 14
    return inline_svg(chart.svg(), discernment_alt(units, evaluator))
