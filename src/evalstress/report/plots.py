"""Plots of the report as inline SVG drawn by matplotlib: real axes, titles and ticks, no script.

Text stays text (svg.fonttype = none), mathtext is off (a '$' in a name is just a dollar), and
each figure's internal ids get a unique prefix so several figures can live in one page.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evalstress.report.common import anchor, esc

PASS, FAIL, GREY, BLUE, ORANGE = "#1a7f37", "#cf222e", "#8c959f", "#0969da", "#bc4c00"
#: grey for text (a title, a label): 4.5:1 or more on white, where GREY is for lines
MUTED = "#59636e"
RC: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "evalstress", "text.parse_math": False,
      "font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "xtick.labelsize": 7,
      "ytick.labelsize": 7, "axes.spines.top": False, "axes.spines.right": False,
      "font.family": "DejaVu Sans"}


def svg_text(fig: Any) -> str:
    """The figure as a whole SVG file's text (XML prolog included), the same bytes for the same
    figure: no date, no creator, ids salted by RC's `svg.hashsalt`."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


def to_svg(fig: Any, prefix: str, label: str = "") -> str:
    """The figure as an <svg> element for inline use: no XML prolog, unique ids, scalable,
    `label` its text alternative."""
    return inline_svg(svg_text(fig), prefix, label)


def inline_svg(svg: str, prefix: str, label: str = "") -> str:
    """An SVG file's text as an <svg> element for inline use (`to_svg`): the prolog dropped,
    each id prefixed with `prefix` so several figures can share a page, width and height
    replaced by a style that scales it down to its container, never up past its own size;
    `label`, the figure's finding in words, becomes its aria-label (what a screen reader says
    for the picture)."""
    svg = svg[svg.index("<svg"):]
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    if ids:
        pattern = re.compile(r'(\bid="|url\(#|href="#)(' + "|".join(map(re.escape, ids)) + r')\b')
        svg = pattern.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)
    width = re.search(r'<svg[^>]*\bwidth="([0-9.]+)pt"', svg)
    svg = re.sub(r'(<svg[^>]*?)\s(width|height)="[^"]*"', r"\1", svg, count=2)
    max_width = f"max-width:{float(width.group(1)) * 4 / 3:.0f}px;" if width else ""
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
        verdict = row.get("verdict") or ("pass" if row.get("passed") else "fail")
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


def _figure(width: float, height: float, layout: Any = "constrained") -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout=layout)


def _rank_fails(points: Sequence[Mapping[str, Any]], sign: float, tol: float) -> list[bool]:
    return [sign * float(p["delta"]) >= -tol for p in points]


def _mono_fails(points: Sequence[Mapping[str, Any]], sign: float, tol: float) -> list[bool]:
    deltas = [0.0] + [sign * float(p["delta"]) for p in points]
    return [b > a + tol for a, b in itertools.pairwise(deltas)]


def curves_svg(rows: Sequence[Mapping[str, Any]], *, ylabel: str, columns: int = 6) -> str:
    """Score against noise ratio, one panel per perturbation, all on one y-scale.

    Each panel: the gold score at ratio 0, the mean over seeds per severity with the seed band
    (+/- one standard deviation) and error bars, the tolerance band around gold (where a score
    counts as "not below gold"), and red markers on the points that break the rank test (x) or
    rise by more than the tolerance (ring)."""
    import matplotlib

    rows = [r for r in rows if r.get("points")]
    if not rows:
        return ""
    cols = min(columns, len(rows))
    lines = math.ceil(len(rows) / cols)
    width, height = 1.9 * cols + 0.65, 1.75 * lines + 0.2
    with matplotlib.rc_context(RC):
        fig = _figure(width, height, layout=None)
        # fixed margins in inches: constrained layout would double the drawing time
        fig.subplots_adjust(left=0.62 / width, right=1 - 0.08 / width, bottom=0.42 / height,
                            top=1 - 0.22 / height, wspace=0.14, hspace=0.62 / 1.75 * 1.9)
        axes = fig.subplots(lines, cols, sharey=True, squeeze=False)
        for ax in axes.flat[len(rows):]:
            fig.delaxes(ax)
        for ax, row in zip(axes.flat, rows, strict=False):
            _panel(ax, row)
        for ax in axes[:, 0]:
            ax.set_ylabel(ylabel)
        for index, ax in enumerate(axes.flat[:len(rows)]):
            if index + cols >= len(rows):
                ax.set_xlabel("noise ratio")
                ax.xaxis.set_tick_params(labelbottom=True)
        axes[0, 0].yaxis.get_major_formatter().set_useOffset(False)
        svg = to_svg(fig, anchor("curves", ylabel, *(r["perturbation"] for r in rows)),
                     curves_alt(rows, ylabel))
    return svg


def _panel(ax: Any, row: Mapping[str, Any]) -> None:
    from matplotlib.ticker import MaxNLocator

    points = sorted(row["points"], key=lambda p: p["noise_ratio"])
    gold = float(row["gold"])
    tol = float(row.get("tolerance") or 0.0)
    sign = 1.0 if row.get("higher_is_better", True) else -1.0
    xs = [0.0] + [float(p["noise_ratio"]) for p in points]
    ys = [gold] + [float(p["mean"]) for p in points]
    sd = [0.0] + [float(p.get("std") or 0.0) for p in points]
    verdict = row.get("verdict") or ("pass" if row.get("passed") else "fail")
    color = {"pass": BLUE, "fail": FAIL}.get(verdict, GREY)
    if verdict == "not-applicable":
        verdict = "n/a"
    ax.axhspan(gold - tol, gold + tol, color="#d0d7de", alpha=0.55, lw=0, zorder=0)
    ax.axhline(gold, color="#57606a", lw=0.8, ls="--", zorder=1)
    ax.fill_between(xs, [y - s for y, s in zip(ys, sd, strict=True)],
                    [y + s for y, s in zip(ys, sd, strict=True)], color=color, alpha=0.15, lw=0,
                    zorder=2)
    ax.errorbar(xs, ys, yerr=sd, color=color, lw=1.4, marker="o", ms=3, capsize=2, elinewidth=0.8,
                zorder=3)
    rank_bad = _rank_fails(points, sign, tol)
    mono_bad = _mono_fails(points, sign, tol)
    bad_x = [x for x, bad in zip(xs[1:], rank_bad, strict=True) if bad]
    bad_y = [y for y, bad in zip(ys[1:], rank_bad, strict=True) if bad]
    if bad_x:
        ax.scatter(bad_x, bad_y, marker="x", s=36, color=FAIL, lw=1.6, zorder=4,
                   label="not below gold")
    ring_x = [x for x, bad in zip(xs[1:], mono_bad, strict=True) if bad]
    ring_y = [y for y, bad in zip(ys[1:], mono_bad, strict=True) if bad]
    if ring_x:
        ax.scatter(ring_x, ring_y, marker="o", s=70, facecolors="none", edgecolors=FAIL, lw=1.3,
                   zorder=4, label="rises")
    title = str(row["perturbation"])
    mark = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}.get(verdict, verdict)
    ax.set_title(f"{title[:30]} · {mark}", color={"fail": FAIL, "pass": PASS}.get(verdict, MUTED),
                 loc="left")
    ax.margins(x=0.06)
    ax.grid(True, axis="y", color="#eaeef2", lw=0.6)
    # few ticks: a tick is the costliest thing matplotlib draws, and four say enough here
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_locator(MaxNLocator(5))
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")


def discernment_svg(units: Sequence[Mapping[str, Any]], *, evaluator: str) -> str:
    """D per perturbation as horizontal bars, one panel per severity group (minor, major, or
    all), D and D with expert weights side by side, the line D = 1 (p = 0.05)."""
    import matplotlib

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
    order = list(groups)
    tallest = max(len(groups[g]) for g in order)
    with matplotlib.rc_context(RC):
        fig = _figure(3.3 * len(order) + 0.6, 0.24 * tallest + 0.9)
        axes = fig.subplots(1, len(order), squeeze=False, sharex=True)[0]
        for ax, group in zip(axes, order, strict=True):
            members = groups[group]
            labels = [str(u["perturbation"]) if group in ("minor", "major")
                      else f"{u['perturbation']}@{u['severity']}" for u in members]
            pos = list(range(len(members)))
            d = [u.get("d") or 0.0 for u in members]
            d_ew = [u.get("d_ew") or 0.0 for u in members]
            ax.barh([p + 0.2 for p in pos], d, height=0.38, color=BLUE, label="D")
            ax.barh([p - 0.2 for p in pos], d_ew, height=0.38, color=ORANGE, alpha=0.8,
                    label="D with expert weights")
            ax.axvline(1.0, color=FAIL, lw=0.9, ls="--")
            ax.set_yticks(pos, [label[:34] for label in labels])
            ax.invert_yaxis()
            ax.set_title(f"{group}", loc="left")
            ax.set_xlabel("D = log_0.05(p)  (dashed: D = 1, p = 0.05)")
            ax.grid(True, axis="x", color="#eaeef2", lw=0.6)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper right", ncol=2, fontsize=7, frameon=False)
        svg = to_svg(fig, anchor("discernment", evaluator), discernment_alt(units, evaluator))
    return svg
