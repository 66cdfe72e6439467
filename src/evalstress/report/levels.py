"""Rendering of the description-type comparison: terminal table, markdown, SVG chart, HTML page.

The chart puts paper 000's two views side by side: boxes of the item score changes on S_T
(should move) and S_F (should stay) per criteria level (its figure 4a), and the level x level
correlation matrix (its figure 8). Self-contained: inline SVG, no scripts, no links out.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from rich.table import Table

from evalstress.analyses.description_types import DescriptionTypesResult, Spread

ST_COLOUR, SF_COLOUR = "#0969da", "#d4a72c"


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _box(s: Spread) -> str:
    if not s.n:
        return "–"
    return f"{_f(s.median)} [{_f(s.q1)}, {_f(s.q3)}]"


HEADERS = ("level", "S_T items", "S_T pass", "S_T change median [q1, q3]", "S_F items",
           "S_F confused", "S_F change median [q1, q3]", "aspect similarity", "missing")


def _cells(result: DescriptionTypesResult) -> list[list[str]]:
    return [[r.level, str(r.directional.n), _pct(r.directional_pass_rate), _box(r.directional),
             str(r.invariance.n), _pct(r.confusion_rate), _box(r.invariance),
             _f(r.aspect_similarity), f"{r.missing}/{r.scored + r.missing}"]
            for r in result.rows]


def levels_tables(result: DescriptionTypesResult) -> list[Table]:
    """The comparison table and the level correlation matrix, for the terminal."""
    main = Table(title="One judge, criteria at each level of detail (paper 000, fig. 4a/8)")
    for header in HEADERS:
        main.add_column(header, justify="left" if header == "level" else "right")
    for row in _cells(result):
        main.add_row(*row)
    matrix = Table(title="Pearson correlation between levels over (text, aspect) scores")
    matrix.add_column("level")
    for level in result.levels:
        matrix.add_column(level, justify="right")
    for level, line in zip(result.levels, result.correlation, strict=True):
        matrix.add_row(level, *(_f(v) for v in line))
    return [main, matrix]


def levels_markdown(result: DescriptionTypesResult) -> str:
    """Both tables as markdown (for papers and docs)."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + " --- |" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in _cells(result)]
    lines += ["", "| level | " + " | ".join(result.levels) + " |",
              "|" + " --- |" * (len(result.levels) + 1)]
    lines += [f"| {level} | " + " | ".join(_f(v) for v in line) + " |"
              for level, line in zip(result.levels, result.correlation, strict=True)]
    return "\n".join(lines) + "\n"


def _boxes_svg(result: DescriptionTypesResult, width: int, height: int) -> str:
    spreads = [s for r in result.rows for s in (r.directional, r.invariance) if s.n]
    lo = min([0.0, *(s.minimum for s in spreads if s.minimum is not None)])
    hi = max([0.0, *(s.maximum for s in spreads if s.maximum is not None)])
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    left, top, bottom = 44, 24, 56
    slot = (width - left - 10) / max(1, len(result.rows))

    def y(v: float) -> float:
        return top + (height - top - bottom) * (hi - v) / (hi - lo)

    parts = [f"<text x='{left}' y='14' font-size='11'>score change (original - perturbed) "
             "per item</text>",
             f"<line x1='{left}' y1='{y(0):.1f}' x2='{width - 10}' y2='{y(0):.1f}' "
             "stroke='#999' stroke-dasharray='4 3'/>",
             f"<text x='4' y='{y(hi) + 4:.1f}' font-size='10'>{hi:.2g}</text>",
             f"<text x='4' y='{y(lo) + 4:.1f}' font-size='10'>{lo:.2g}</text>",
             f"<text x='4' y='{y(0) + 4:.1f}' font-size='10'>0</text>"]
    for k, row in enumerate(result.rows):
        x0 = left + k * slot
        for offset, spread, colour in ((0.2, row.directional, ST_COLOUR),
                                       (0.55, row.invariance, SF_COLOUR)):
            if not spread.n:
                continue
            cx, w = x0 + offset * slot, 0.25 * slot
            q1, q3 = y(spread.q1 or 0.0), y(spread.q3 or 0.0)
            parts.append(f"<line x1='{cx + w / 2:.1f}' y1='{y(spread.minimum or 0):.1f}' "
                         f"x2='{cx + w / 2:.1f}' y2='{y(spread.maximum or 0):.1f}' "
                         f"stroke='{colour}'/>")
            parts.append(f"<rect x='{cx:.1f}' y='{min(q1, q3):.1f}' width='{w:.1f}' "
                         f"height='{max(1.0, abs(q1 - q3)):.1f}' fill='{colour}' "
                         "fill-opacity='0.35' stroke='" + colour + "'/>")
            parts.append(f"<line x1='{cx:.1f}' y1='{y(spread.median or 0):.1f}' "
                         f"x2='{cx + w:.1f}' y2='{y(spread.median or 0):.1f}' "
                         f"stroke='{colour}' stroke-width='2'/>")
        parts.append(f"<text x='{x0 + slot / 2:.1f}' y='{height - bottom + 16}' font-size='10' "
                     f"text-anchor='middle'>{escape(row.level)}</text>")
    legend_y = height - 12
    parts.append(f"<rect x='{left}' y='{legend_y - 9}' width='10' height='10' "
                 f"fill='{ST_COLOUR}'/><text x='{left + 14}' y='{legend_y}' font-size='10'>"
                 "S_T (should move)</text>")
    parts.append(f"<rect x='{left + 130}' y='{legend_y - 9}' width='10' height='10' "
                 f"fill='{SF_COLOUR}'/><text x='{left + 144}' y='{legend_y}' font-size='10'>"
                 "S_F (should stay)</text>")
    return "".join(parts)


def _heat_colour(value: float | None) -> str:
    if value is None:
        return "#eeeeee"
    v = max(-1.0, min(1.0, value))
    if v >= 0:  # white -> blue
        r, g, b = (int(255 - (255 - c) * v) for c in (9, 105, 218))
    else:  # white -> red
        r, g, b = (int(255 - (255 - c) * -v) for c in (207, 34, 46))
    return f"#{r:02x}{g:02x}{b:02x}"


def _matrix_svg(levels: Sequence[str], values: Sequence[Sequence[float | None]], x0: float,
                size: int) -> str:
    n = max(1, len(levels))
    label = 70
    cell = (size - label - 10) / n
    parts = [f"<text x='{x0}' y='14' font-size='11'>Pearson between levels</text>"]
    for i, name in enumerate(levels):
        parts.append(f"<text x='{x0 + label - 4}' y='{24 + label + (i + 0.6) * cell:.1f}' "
                     f"font-size='10' text-anchor='end'>{escape(name)}</text>")
        cx = x0 + label + (i + 0.5) * cell
        parts.append(f"<text x='{cx:.1f}' y='{24 + label - 4}' font-size='10' "
                     f"transform='rotate(-45 {cx:.1f} {24 + label - 4})'>{escape(name)}</text>")
        for j, value in enumerate(values[i]):
            x, yy = x0 + label + j * cell, 24 + label + i * cell
            parts.append(f"<rect x='{x:.1f}' y='{yy:.1f}' width='{cell:.1f}' "
                         f"height='{cell:.1f}' fill='{_heat_colour(value)}' stroke='white'/>")
            parts.append(f"<text x='{x + cell / 2:.1f}' y='{yy + cell / 2 + 3:.1f}' "
                         f"font-size='9' text-anchor='middle'>{_f(value)}</text>")
    return "".join(parts)


def levels_svg(result: DescriptionTypesResult, *, width: int = 860, height: int = 360) -> str:
    """One chart: S_T / S_F change boxes per level (left), level correlations (right)."""
    left_width = width - height
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"role='img' font-family='sans-serif'><rect width='100%' height='100%' "
            f"fill='white'/>{_boxes_svg(result, left_width, height)}"
            f"{_matrix_svg(result.levels, result.correlation, left_width, height)}</svg>")


def levels_html(result: DescriptionTypesResult, title: str) -> str:
    """A self-contained page with the chart, both tables and the notes."""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                   for row in _cells(result))
    corr_head = "<th>level</th>" + "".join(f"<th>{escape(lv)}</th>" for lv in result.levels)
    corr_body = "".join(
        f"<tr><td>{escape(lv)}</td>" + "".join(f"<td>{_f(v)}</td>" for v in line) + "</tr>"
        for lv, line in zip(result.levels, result.correlation, strict=True))
    notes = "".join(f"<p class='note'>note: {escape(n)}</p>" for n in result.notes)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + escape(title)
            + "</title><style>body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
            "table{border-collapse:collapse;margin:.8rem 0;font-size:.85rem}"
            "th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}"
            "th{background:#f4f4f4}.note{color:#666;font-size:.85rem}</style></head><body>"
            f"<h1>{escape(title)}</h1>{levels_svg(result)}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            f"<table><thead><tr>{corr_head}</tr></thead><tbody>{corr_body}</tbody></table>"
            f"<p class='note'>Items are evaluator aspect x perturbation x severity; S_T passes "
            f"when one-sided Wilcoxon p &lt; {result.alpha} and rank-biserial r &ge; "
            f"{result.min_effect}; S_F is confused when two-sided p &lt; {result.alpha} and "
            f"|r| &ge; {result.min_effect}.</p>{notes}</body></html>")
