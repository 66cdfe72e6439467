"""Small helpers every part of the HTML report shares: escaping, numbers, ids, labels."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from html import escape
from typing import Any


def esc(value: Any) -> str:
    """Text for element content or a quoted attribute: &, <, >, " and ' escaped."""
    return escape(str(value), quote=True)


def num(value: Any, digits: int = 3) -> str:
    """A number for a table cell: a dash when missing, significant digits otherwise."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, bool):
        return esc(value)
    if isinstance(value, float):
        magnitude = abs(value)
        if magnitude and (magnitude >= 10 ** (digits + 2) or magnitude < 10 ** -digits):
            return f"{value:.{digits}g}"
        if magnitude >= 100:
            return f"{value:.1f}"
        return f"{value:.{digits}f}"
    return esc(value)


#: a standard deviation below this share of its mean is rounding in the mean of equal scores
FLOAT_NOISE = 1e-9


def spread(std: Any, mean: Any) -> Any:
    """A standard deviation to print: 0.0 where it is float rounding (seeds that scored the
    same texts the same way give 14.694 ± 1.8e-15), else `std` as it is."""
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                  for v in (std, mean))
    return 0.0 if numbers and abs(std) <= FLOAT_NOISE * abs(mean) else std


def anchor(*parts: Any) -> str:
    """A safe, stable element id from any texts: readable prefix plus a short hash."""
    raw = "\x1f".join(str(p) for p in parts)
    slug = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")[:40] or "x"
    return f"{slug}-{hashlib.sha1(raw.encode('utf-8')).hexdigest()[:8]}"


def json_for_script(data: Any) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>', '&' or line separators
    can close the element or confuse a parser."""
    return _script_safe(_script_json(data))


def json_for_script_parts(data: Any, depth: int = 2) -> Iterator[str]:
    """`json_for_script(data)` in pieces, the same characters once joined: the outer `depth`
    levels of dicts (string keys) and lists are written member by member, so a report's
    variant data is never one string, nor a chain of escaped copies of it, in memory."""
    if depth > 0 and isinstance(data, dict) and all(isinstance(k, str) for k in data):
        yield "{"
        for i, (key, value) in enumerate(data.items()):
            yield ("," if i else "") + _script_safe(_script_json(key)) + ":"
            yield from json_for_script_parts(value, depth - 1)
        yield "}"
    elif depth > 0 and isinstance(data, list | tuple):
        yield "["
        for i, value in enumerate(data):
            if i:
                yield ","
            yield from json_for_script_parts(value, depth - 1)
        yield "]"
    else:
        yield json_for_script(data)


def _script_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=str)


def _script_safe(text: str) -> str:
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def table(headers: Sequence[Any], rows: Sequence[Sequence[Any]], *, left: int = 1,
          caption: str = "", cls: str = "", row_ids: Sequence[str | None] | None = None,
          row_headers: bool = False, table_id: str = "") -> str:
    """An HTML table; the first `left` columns are left-aligned; cells are escaped unless they
    are Raw (already-built markup). `row_ids`: an id per body row (a link target);
    `row_headers`: each row's first cell is its header (<th scope="row">); `table_id`: the
    table's own id. The table comes in its own scroll box (`scroll_box`)."""

    def cell(i: int, value: Any, tag: str, scope: str = "") -> str:
        align = ' class="l"' if i < left else ""
        scoped = f' scope="{scope}"' if scope else ""
        return (f"<{tag}{align}{scoped}>{value.html if isinstance(value, Raw) else num(value)}"
                f"</{tag}>")

    def row(index: int, values: Sequence[Any]) -> str:
        given = row_ids[index] if row_ids is not None else None
        ident = f' id="{esc(given)}"' if given else ""
        cells = "".join(cell(i, v, "th", "row") if row_headers and i == 0 else cell(i, v, "td")
                        for i, v in enumerate(values))
        return f"<tr{ident}>{cells}</tr>"

    head = "".join(cell(i, h, "th", "col" if row_headers else "") for i, h in enumerate(headers))
    body = "".join(row(index, r) for index, r in enumerate(rows))
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    klass = f' class="{esc(cls)}"' if cls else ""
    ident = f' id="{esc(table_id)}"' if table_id else ""
    return scroll_box(f"<table{ident}{klass}>{cap}<thead><tr>{head}</tr></thead>"
                      f"<tbody>{body}</tbody></table>")


def scroll_box(markup: str) -> str:
    """`markup` (a table) in a box of its own that scrolls sideways when it is wider than the
    page, so that on a phone the page itself never does (the pages' CSS styles `.scroll`)."""
    return f'<div class="scroll">{markup}</div>'


class Raw:
    """Markup that is already escaped (built by this package, never taken from data)."""

    __slots__ = ("html",)

    def __init__(self, html: str):
        self.html = html

    def __str__(self) -> str:
        return self.html


VERDICT_TEXT = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE",
                "not-applicable": "n/a"}


def verdict_badge(verdict: str | None, title: str = "") -> Raw:
    if verdict is None:
        return Raw("–")
    tip = f' title="{esc(title)}"' if title else ""
    return Raw(f'<span class="v v-{esc(verdict)}"{tip}>{esc(VERDICT_TEXT.get(verdict, verdict))}'
               "</span>")


def short_labels(results: Mapping[str, Any]) -> dict[str, str]:
    """Short display names for the evaluators of a run: the label when it is short or already
    a short label (`judge(local)`, runs since labels are made short), else, for a whole spec
    (`judge:model=...,timeout=30`, older runs), the registered name with only the parameters
    that tell same-named evaluators apart (never URLs, ports or timeouts). The full label goes
    into a tooltip."""
    evaluators = results.get("evaluators") or {}
    labels = [str(k) for k in evaluators]
    for name in _labels_in_analyses(results):
        if name not in labels:
            labels.append(name)
    base = {label: label.partition(":")[0] for label in labels}
    out: dict[str, str] = {}
    for label in labels:
        if (len(label) <= 18 and ":" not in label) or not _WHOLE_SPEC.match(label):
            out[label] = label
            continue
        twins = [other for other in labels if base[other] == base[label]]
        if len(twins) == 1:
            out[label] = base[label]
            continue
        mine = _params(label)
        differing = [f"{k}={v}" for k, v in mine.items()
                     if k not in _NOISE and any(_params(t).get(k) != v for t in twins)]
        out[label] = (f"{base[label]}({','.join(differing)})" if differing else base[label])[:28]
    groups: dict[str, list[str]] = {}
    for label in labels:
        groups.setdefault(out[label], []).append(label)
    for short, members in groups.items():  # still clashing: number them in order
        if len(members) > 1:
            for i, label in enumerate(members, 1):
                out[label] = f"{short}#{i}"
    return out


#: a label that is a whole spec, name:key=value,... (the labels of runs before short labels)
_WHOLE_SPEC = re.compile(r"[\w.-]+:\w+=")
_NOISE = {"base_url", "timeout", "port", "api_key_env", "deadline", "concurrency"}


def _params(label: str) -> dict[str, str]:
    rest = label.partition(":")[2]
    out = {}
    for part in rest.split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _labels_in_analyses(results: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for data in (results.get("analyses") or {}).values():
        if not isinstance(data, Mapping):
            continue
        for key in ("rows", "units", "items", "summaries"):
            listed = data.get(key)
            for item in listed if isinstance(listed, list) else []:  # a count is no list
                if isinstance(item, Mapping) and "evaluator" in item:
                    name = str(item["evaluator"])
                    if name not in found:
                        found.append(name)
    return found


def label_html(label: str, short: Mapping[str, str], aspect: str = "") -> Raw:
    """A short evaluator label with the full spec as its tooltip."""
    name = short.get(label, label)
    same = aspect in (name, name.rpartition(" · ")[2])  # "bleu / bleu" says nothing new
    text = f"{name} / {aspect}" if aspect and not same else name
    return Raw(f'<span class="ev" title="{esc(label)}">{esc(text)}</span>')


#: the verdicts' colours (red, green, blue): the grid's cells are tints of them, the badges'
#: text is them; dark enough that each keeps 4.5:1 against white and its own light tint
VERDICT_RGB = {"pass": (17, 99, 41), "fail": (164, 14, 38), "inc": (191, 135, 0),
               "na": (140, 149, 159)}


def verdict_css_vars() -> str:
    """The CSS custom properties (--pass, --fail, --inc, --na) of VERDICT_RGB."""
    return ";".join(f"--{name}:{r},{g},{b}" for name, (r, g, b) in VERDICT_RGB.items())


def luminance(rgb: Sequence[float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour given in 0-255."""
    def linear(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2])


def white_text_on(rgb: Sequence[float], alpha: float) -> bool:
    """Whether white text reads better than black on `rgb` laid at `alpha` over white: the
    better of the two always keeps WCAG's 4.5:1 (their contrasts multiply to 21)."""
    tint = [c * alpha + 255 * (1 - alpha) for c in rgb]
    return luminance(tint) < math.sqrt(1.05 * 0.05) - 0.05
