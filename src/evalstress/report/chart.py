"""A small SVG chart writer for the report's and the card's figures.

Drawing a few dozen lines and labels as SVG by hand costs well under a millisecond each, where
matplotlib took seconds for a report (its import alone is a third of a second). The figures need
little: panels with linear or categorical axes, ticks, axis labels and titles, lines, bands,
bars, markers, error bars and a legend. Text stays <text> (searchable, read by screen readers,
sized in CSS pixels), every coordinate is written with one decimal, and nothing depends on the
clock or on a font being installed: the same data give the same bytes. No element has an id, so
any number of figures can share a page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalstress.report.common import esc, luminance

#: text, and the grey for secondary text: both 4.5:1 or more on white
INK, MUTED = "#1f2328", "#59636e"
#: grid lines and the axis lines
GRID, AXIS = "#eaeef2", "#57606a"
FONT = "'DejaVu Sans', Verdana, Arial, sans-serif"
#: font sizes in CSS pixels: tick labels, axis labels and legends, panel titles
TICK, LABEL, TITLE = 9.5, 10.5, 11.0


def num(value: float) -> str:
    """A coordinate as written into the SVG: one decimal, no '-0', no trailing '.0'."""
    text = f"{value:.1f}"
    text = text[:-2] if text.endswith(".0") else text
    return "0" if text == "-0" else text


def text_width(text: str, size: float) -> float:
    """About how wide a line of text is drawn, in pixels (an average glyph is 0.6 em): enough
    to leave room for tick labels without measuring a font."""
    return 0.6 * size * max((len(line) for line in text.split("\n")), default=0)


def nice_ticks(low: float, high: float, most: int = 5) -> list[float]:
    """Round values (1, 2, 2.5 or 5 times a power of ten apart, at most `most` steps) within
    [low, high]; a span of zero gets the one value."""
    if not high > low:
        return [low]
    raw = (high - low) / max(1, most)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    first = math.ceil(low / step - 1e-9)
    ticks = []
    for k in range(first, first + most + 2):
        value = k * step
        if value > high + step * 1e-9:
            break
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
    return ticks


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """The ticks written with as many decimals as their step needs, minus as '−'."""
    if len(ticks) < 2:
        decimals = 0 if not ticks or float(ticks[0]).is_integer() else 3
    else:
        step = abs(ticks[1] - ticks[0])
        decimals = max(0, -math.floor(math.log10(step) + 1e-9))
        if round(step * 10 ** decimals, 6) % 1:  # a step of 2.5 or 0.25 needs one more
            decimals += 1
    return [f"{t:.{decimals}f}".replace("-", "−") for t in ticks]


def padded(low: float, high: float, share: float = 0.05) -> tuple[float, float]:
    """[low, high] widened by `share` of the span on each side; a span of zero becomes a
    span of one around the value (or of 5% of it, for a large value)."""
    if high - low <= 1e-12 * max(1.0, abs(high)):
        half = max(0.5, abs(high) * 0.05)
        return low - half, high + half
    margin = (high - low) * share
    return low - margin, high + margin


@dataclass(frozen=True)
class Scale:
    """Data values [low, high] onto pixels [start, end] (end < start for a y axis)."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)


@dataclass
class Chart:
    """One figure: a canvas `width` x `height` pixels that its panels and labels draw on."""

    width: float
    height: float
    parts: list[str] = field(default_factory=list)

    def text(self, x: float, y: float, content: str, *, size: float = TICK,
             anchor: str = "start", fill: str = INK, bold: bool = False, rotate: float = 0.0,
             middle: bool = False) -> None:
        """A label at (x, y): its baseline at y (its middle with `middle`), lines split on
        '\\n', turned by `rotate` degrees about (x, y)."""
        lines = content.split("\n")
        shift = size * 0.35 - (len(lines) - 1) * size * 0.6 if middle else 0.0
        attrs = [f'x="{num(x)}"', f'y="{num(y + shift)}"', f'font-size="{size:g}"']
        if anchor != "start":
            attrs.append(f'text-anchor="{anchor}"')
        if fill != INK:
            attrs.append(f'fill="{fill}"')
        if bold:
            attrs.append('font-weight="bold"')
        if rotate:
            attrs.append(f'transform="rotate({rotate:g} {num(x)} {num(y)})"')
        if len(lines) == 1:
            body = esc(content)
        else:
            body = "".join(f'<tspan x="{num(x)}" dy="{0 if i == 0 else num(size * 1.2)}">'
                           f"{esc(line)}</tspan>" for i, line in enumerate(lines))
        self.parts.append(f"<text {' '.join(attrs)}>{body}</text>")

    def swatch_legend(self, right: float, y: float, items: Sequence[tuple[str, str]]) -> None:
        """A one-line legend ending at `right`: a square of each colour, then its name."""
        widths = [14 + text_width(name, LABEL) + 12 for _, name in items]
        x = right - sum(widths)
        for (colour, name), width in zip(items, widths, strict=True):
            self.parts.append(f'<rect x="{num(x)}" y="{num(y - 8)}" width="9" height="9" '
                              f'fill="{colour}"/>')
            self.text(x + 13, y, name, size=LABEL)
            x += width

    def svg(self) -> str:
        """The figure as an SVG file's text (no prolog): scalable by its viewBox."""
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(self.width)}px" '
                f'height="{num(self.height)}px" viewBox="0 0 {num(self.width)} '
                f'{num(self.height)}" font-family="{FONT}" fill="{INK}">'
                f'<rect width="100%" height="100%" fill="#ffffff"/>'
                + "".join(self.parts) + "</svg>")


def _stroke(colour: str, width: float, dash: str | None, opacity: float = 1.0) -> str:
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    extra += f' stroke-opacity="{opacity:g}"' if opacity < 1 else ""
    return f'fill="none" stroke="{colour}" stroke-width="{width:g}"{extra}'


@dataclass
class Panel:
    """One plotting area of a chart: a box in pixels and its two scales."""

    chart: Chart
    x: Scale
    y: Scale

    @classmethod
    def at(cls, chart: Chart, box: tuple[float, float, float, float],
           xs: tuple[float, float], ys: tuple[float, float]) -> Panel:
        """A panel whose plotting box is (left, top, width, height) and whose data ranges
        are `xs` and `ys`."""
        left, top, width, height = box
        return cls(chart, Scale(xs[0], xs[1], left, left + width),
                   Scale(ys[0], ys[1], top + height, top))

    @property
    def left(self) -> float:
        return self.x.start

    @property
    def right(self) -> float:
        return self.x.end

    @property
    def top(self) -> float:
        return self.y.end

    @property
    def bottom(self) -> float:
        return self.y.start

    def add(self, element: str) -> None:
        self.chart.parts.append(element)

    def line(self, xs: Sequence[float], ys: Sequence[float], colour: str, *,
             width: float = 1.4, dash: str | None = None) -> None:
        points = " ".join(f"{num(self.x(a))},{num(self.y(b))}"
                          for a, b in zip(xs, ys, strict=True))
        self.add(f'<polyline points="{points}" {_stroke(colour, width, dash)}/>')

    def band(self, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float],
             colour: str, opacity: float) -> None:
        """The area between two curves over the same xs."""
        upper = [f"{num(self.x(a))},{num(self.y(b))}" for a, b in zip(xs, highs, strict=True)]
        lower = [f"{num(self.x(a))},{num(self.y(b))}" for a, b in zip(xs, lows, strict=True)]
        self.add(f'<polygon points="{" ".join(upper + lower[::-1])}" fill="{colour}" '
                 f'fill-opacity="{opacity:g}"/>')

    def rect(self, x0: float, x1: float, y0: float, y1: float, colour: str, *,
             opacity: float = 1.0, outline: str | None = None) -> None:
        """A rectangle between data coordinates (a bar, a span, a heat-map cell)."""
        left, right = sorted((self.x(x0), self.x(x1)))
        top, bottom = sorted((self.y(y0), self.y(y1)))
        paint = f'fill="{colour}"' + (f' fill-opacity="{opacity:g}"' if opacity < 1 else "")
        if outline:
            paint = f'fill="none" stroke="{outline}" stroke-width="1.6"'
        self.add(f'<rect x="{num(left)}" y="{num(top)}" width="{num(right - left)}" '
                 f'height="{num(bottom - top)}" {paint}/>')

    def hline(self, y: float, colour: str, *, width: float = 0.8,
              dash: str | None = None) -> None:
        self.add(f'<line x1="{num(self.left)}" x2="{num(self.right)}" y1="{num(self.y(y))}" '
                 f'y2="{num(self.y(y))}" {_stroke(colour, width, dash)}/>')

    def vline(self, x: float, colour: str, *, width: float = 0.8,
              dash: str | None = None) -> None:
        self.add(f'<line x1="{num(self.x(x))}" x2="{num(self.x(x))}" y1="{num(self.top)}" '
                 f'y2="{num(self.bottom)}" {_stroke(colour, width, dash)}/>')

    def errorbars(self, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float],
                  colour: str, *, cap: float = 2.5, width: float = 0.9,
                  horizontal: bool = False) -> None:
        """A whisker from low to high at each x (at each y, `horizontal`), with caps."""
        path = []
        for at, low, high in zip(xs, lows, highs, strict=True):
            if horizontal:
                y, a, b = self.y(at), self.x(low), self.x(high)
                path.append(f"M{num(a)} {num(y)}H{num(b)}M{num(a)} {num(y - cap)}V"
                            f"{num(y + cap)}M{num(b)} {num(y - cap)}V{num(y + cap)}")
            else:
                x, a, b = self.x(at), self.y(low), self.y(high)
                path.append(f"M{num(x)} {num(a)}V{num(b)}M{num(x - cap)} {num(a)}H"
                            f"{num(x + cap)}M{num(x - cap)} {num(b)}H{num(x + cap)}")
        if path:
            self.add(f'<path d="{"".join(path)}" {_stroke(colour, width, None)}/>')

    def markers(self, xs: Sequence[float], ys: Sequence[float], colour: str, *,
                shape: str = "dot", size: float = 3.0, hollow: bool = False,
                titles: Sequence[str] = ()) -> None:
        """A marker at each point: dot, ring (a wide hollow circle), cross or diamond;
        `titles` become each marker's tooltip."""
        for index, (a, b) in enumerate(zip(xs, ys, strict=True)):
            x, y = num(self.x(a)), num(self.y(b))
            fill = "#ffffff" if hollow else colour
            if shape == "cross":
                d = size
                mark = (f'<path d="M{num(self.x(a) - d)} {num(self.y(b) - d)}l{num(2 * d)} '
                        f'{num(2 * d)}M{num(self.x(a) - d)} {num(self.y(b) + d)}l{num(2 * d)} '
                        f'{num(-2 * d)}" {_stroke(colour, 1.6, None)}'
                        )
            elif shape == "ring":
                mark = f'<circle cx="{x}" cy="{y}" r="{size:g}" {_stroke(colour, 1.3, None)}'
            elif shape == "diamond":
                d = size * 1.35
                mark = (f'<path d="M{x} {num(self.y(b) - d)}L{num(self.x(a) + d)} {y}L{x} '
                        f'{num(self.y(b) + d)}L{num(self.x(a) - d)} {y}Z" fill="{fill}" '
                        f'stroke="{colour}" stroke-width="1"')
            else:
                mark = (f'<circle cx="{x}" cy="{y}" r="{size:g}" fill="{fill}" '
                        f'stroke="{colour}" stroke-width="1"')
            title = titles[index] if index < len(titles) else ""
            self.add(f"{mark}><title>{esc(title)}</title></{mark[1:mark.index(' ')]}>"
                     if title else f"{mark}/>")

    def grid(self, ticks: Sequence[float], *, axis: str = "y") -> None:
        for tick in ticks:
            if axis == "y":
                self.hline(tick, GRID, width=0.7)
            else:
                self.vline(tick, GRID, width=0.7)

    def xaxis(self, ticks: Sequence[float], labels: Sequence[str], label: str, *,
              rotate: float = 0.0, line: bool = True) -> float:
        """The bottom axis: its line, ticks, tick labels and the axis label under them;
        returns the y of the axis label's baseline."""
        if line:
            self.add(f'<line x1="{num(self.left)}" x2="{num(self.right)}" '
                     f'y1="{num(self.bottom)}" y2="{num(self.bottom)}" '
                     f'{_stroke(AXIS, 0.8, None)}/>')
        deepest = 0.0
        for tick, text in zip(ticks, labels, strict=True):
            x = self.x(tick)
            if line:
                self.add(f'<line x1="{num(x)}" x2="{num(x)}" y1="{num(self.bottom)}" '
                         f'y2="{num(self.bottom + 3.5)}" {_stroke(AXIS, 0.8, None)}/>')
            if rotate:
                self.chart.text(x + 3, self.bottom + 6 + TICK * 0.7, text, anchor="end",
                                rotate=rotate)
                deepest = max(deepest, text_width(text, TICK) * math.sin(math.radians(-rotate)))
            else:
                self.chart.text(x, self.bottom + 5 + TICK, text, anchor="middle")
                deepest = max(deepest, (text.count("\n")) * TICK * 1.2)
        baseline = self.bottom + 5 + TICK + deepest + LABEL + 4
        self.chart.text((self.left + self.right) / 2, baseline, label, size=LABEL,
                        anchor="middle")
        return baseline

    def yaxis(self, ticks: Sequence[float], labels: Sequence[str], label: str | None, *,
              line: bool = True) -> None:
        """The left axis: its line, ticks, tick labels (none where `labels` is empty) and,
        unless `label` is None, the axis label turned upright beside them."""
        if line:
            self.add(f'<line x1="{num(self.left)}" x2="{num(self.left)}" y1="{num(self.top)}" '
                     f'y2="{num(self.bottom)}" {_stroke(AXIS, 0.8, None)}/>')
        widest = 0.0
        for index, tick in enumerate(ticks):
            y = self.y(tick)
            if line:
                self.add(f'<line x1="{num(self.left - 3.5)}" x2="{num(self.left)}" '
                         f'y1="{num(y)}" y2="{num(y)}" {_stroke(AXIS, 0.8, None)}/>')
            if index < len(labels):
                self.chart.text(self.left - 6, y, labels[index], anchor="end", middle=True)
                widest = max(widest, text_width(labels[index], TICK))
        if label is not None:
            x = self.left - 6 - widest - 6
            self.chart.text(x, (self.top + self.bottom) / 2, label, size=LABEL,
                            anchor="middle", rotate=-90)

    def title(self, content: str, colour: str = INK) -> None:
        self.chart.text(self.left, self.top - 6, content, size=TITLE, fill=colour, bold=True)


def ylabel_room(labels: Sequence[str]) -> float:
    """How far left of a panel its y tick labels and y axis label reach, in pixels."""
    widest = max((text_width(label, TICK) for label in labels), default=0.0)
    return 6 + widest + 6 + LABEL + 4


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def ramp(anchors: Sequence[str], share: float) -> str:
    """The colour at `share` (0 to 1) of the way along evenly spaced `anchors`, mixed
    linearly between the two around it."""
    share = min(1.0, max(0.0, share)) * (len(anchors) - 1)
    index = min(int(share), len(anchors) - 2)
    a, b, t = _rgb(anchors[index]), _rgb(anchors[index + 1]), share - index
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b, strict=True))


def text_on(colour: str) -> str:
    """INK or white, whichever contrasts more with a background of `colour`."""
    return INK if contrast(colour, INK) >= contrast(colour, "#ffffff") else "#ffffff"


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two colours '#rrggbb' (1 to 21)."""
    light, dark = sorted((luminance(_rgb(a)), luminance(_rgb(b))), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def readable(colour: str) -> str:
    """`colour` as a background that INK or white text reads on at 4.5:1 (WCAG AA): a
    mid-tone where neither does is mixed with white, 5% at a time, until INK does."""
    mixed = colour
    for step in range(21):
        mixed = ramp((colour, "#ffffff"), step / 20)
        if max(contrast(mixed, INK), contrast(mixed, "#ffffff")) >= 4.5:
            break
    return mixed
