"""A single self-contained HTML report: inline CSS and inline SVG, no scripts, no links out.

It opens offline and can be mailed as one file. Sections follow the analyses in the run: a
blind-spot section with one small score-vs-noise-ratio plot per evaluator aspect and
perturbation, then tables for discernment, criteria confusion, correlation and response style.
Analyses this module does not know are shown as their JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:1400px}
h1{font-size:1.6rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.6rem 0 1.2rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
.note{color:#666;font-size:.85rem}.plots{display:flex;flex-wrap:wrap;gap:.8rem}
figure{margin:0;border:1px solid #eee;padding:.3rem}figcaption{font-size:.75rem;max-width:260px}
pre{background:#f7f7f7;padding:.6rem;overflow:auto;font-size:.75rem}
"""


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return escape(str(value))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
           left: int = 1, caption: str = "") -> str:
    """An HTML table; the first `left` columns are left-aligned; cells are escaped unless they
    are ("raw", html) tuples."""
    def cell(i: int, value: Any, tag: str) -> str:
        cls = ' class="l"' if i < left else ""
        if isinstance(value, tuple) and value and value[0] == "raw":
            return f"<{tag}{cls}>{value[1]}</{tag}>"
        return f"<{tag}{cls}>{_num(value)}</{tag}>"

    head = "".join(cell(i, h, "th") for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell(i, v, "td") for i, v in enumerate(r)) + "</tr>"
                   for r in rows)
    cap = f"<caption class='note'>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _verdict(passed: bool | None) -> tuple[str, str]:
    if passed is None:
        return ("raw", "–")
    return ("raw", "<span class='pass'>pass</span>" if passed
            else "<span class='fail'>FAIL</span>")


def _d(value: float | None) -> tuple[str, str]:
    if value is None:
        return ("raw", "–")
    cls = "pass" if value >= 1 else "fail"
    return ("raw", f"<span class='{cls}'>{value:.2f}</span>")


def svg_curve(points: Sequence[tuple[float, float]], gold: float, *, width: int = 260,
              height: int = 150) -> str:
    """Score against noise ratio, starting from the gold score at ratio 0; dashed gold line."""
    pts = [(0.0, gold), *sorted(points)]
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    x_hi = max(xs) or 1.0
    y_lo, y_hi = min(ys), max(ys)
    if y_hi == y_lo:
        y_lo, y_hi = y_lo - 0.5, y_hi + 0.5
    pad = 28

    def sx(x: float) -> float:
        return pad + (width - pad - 8) * x / x_hi

    def sy(y: float) -> float:
        return height - pad + (pad + 8 - height) * (y - y_lo) / (y_hi - y_lo)

    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    dots = "".join(f"<circle cx='{sx(x):.1f}' cy='{sy(y):.1f}' r='2.5' fill='#0969da'/>"
                   for x, y in pts)
    return (f"<svg width='{width}' height='{height}' "
            f"role='img'><rect width='100%' height='100%' fill='white'/>"
            f"<line x1='{pad}' y1='{height - pad}' x2='{width - 8}' y2='{height - pad}' "
            f"stroke='#999'/><line x1='{pad}' y1='8' x2='{pad}' y2='{height - pad}' "
            f"stroke='#999'/><line x1='{pad}' y1='{sy(gold):.1f}' x2='{width - 8}' "
            f"y2='{sy(gold):.1f}' stroke='#999' stroke-dasharray='4 3'/>"
            f"<polyline points='{line}' fill='none' stroke='#0969da' stroke-width='1.5'/>{dots}"
            f"<text x='{pad}' y='{height - 8}' font-size='10'>0</text>"
            f"<text x='{width - 30}' y='{height - 8}' font-size='10'>{x_hi:.2f}</text>"
            f"<text x='2' y='14' font-size='10'>{y_hi:.3g}</text>"
            f"<text x='2' y='{height - pad}' font-size='10'>{y_lo:.3g}</text></svg>")


def _blindspot(data: Mapping[str, Any]) -> str:
    rows, plots = [], []
    for r in data["rows"]:
        curve = "  ".join(f"{p['noise_ratio']:.2f}→{p['mean']:.3g}" for p in
                          sorted(r["points"], key=lambda p: p["noise_ratio"]))
        rows.append([f"{r['evaluator']} / {r['aspect']}", r["perturbation"], r["gold"], curve,
                     _verdict(r["rank_pass"]), _verdict(r["monotonic_pass"]),
                     _verdict(r["passed"])])
        svg = svg_curve([(p["noise_ratio"], p["mean"]) for p in r["points"]], r["gold"])
        plots.append(f"<figure>{svg}<figcaption>{escape(r['evaluator'])} / "
                     f"{escape(r['aspect'])} — {escape(r['perturbation'])}</figcaption></figure>")
    table = _table(["evaluator / aspect", "perturbation", "gold", "noise ratio → score", "rank",
                    "monotonic", "verdict"], rows, left=2,
                   caption=str(data.get("tolerance", {}).get("rule", "")))
    return table + "<h3>Score against noise ratio (dashed: gold)</h3><div class='plots'>" \
        + "".join(plots) + "</div>"


def _discernment(data: Mapping[str, Any]) -> str:
    summary = _table(
        ["evaluator", "task", "severity", "D_avg", "D_min", "D_avg^EW", "D_min^EW", "weakest"],
        [[s["evaluator"], s["task"], s["group"], _d(s["d_avg"]), _d(s["d_min"]),
          _d(s["d_avg_ew"]), _d(s["d_min_ew"]), s["d_min_at"]] for s in data["summaries"]],
        left=3, caption="D = log_0.05(p); D ≥ 1 means significant at 0.05; each level weighs "
                        "equally in D_avg")
    units = _table(
        ["evaluator", "perturbation", "severity", "level", "p", "D", "p^EW", "D^EW", "aspects"],
        [[u["evaluator"], u["perturbation"], u["severity"], u["level"], u["p"], _d(u["d"]),
          u["p_ew"], _d(u["d_ew"]),
          ", ".join(f"{t['aspect']}: p={_num(t['wilcoxon']['pvalue'])} n={t['n']}"
                    for t in u["tests"])] for u in data["units"]], left=4)
    return summary + units


def _matrix(m: Mapping[str, Any]) -> str:
    return f"<h3>{escape(m['name'])} ({escape(m['method'])})</h3>" + _table(
        ["", *m["labels"]], [[label, *row] for label, row in zip(m["labels"], m["values"],
                                                                 strict=True)])


def _confusion(data: Mapping[str, Any]) -> str:
    summary = _table(
        ["evaluator", "S_T tests", "passed", "miss rate", "S_F tests", "moved", "confusion rate"],
        [[s["evaluator"], s["directional_tests"], s["directional_passed"], s["miss_rate"],
          s["invariance_tests"], s["invariance_failed"], s["confusion_rate"]]
         for s in data["summaries"]])
    items = _table(
        ["evaluator / aspect", "quality aspect", "perturbation", "test", "change", "95% CI", "p",
         "rank-biserial", "n", "missing", "verdict"],
        [[f"{i['evaluator']} / {i['aspect']}", i["quality_aspect"],
          f"{i['perturbation']}@{i['severity']}", i["test"], i["change"],
          f"[{_num(i['ci_low'])}, {_num(i['ci_high'])}]", i["pvalue"], i["rank_biserial"], i["n"],
          i["n_missing"], _verdict(i["passed"])] for i in data["items"]], left=4,
        caption=f"{data['thresholds']['directional']}; {data['thresholds']['invariance']}")
    return summary + items + "".join(_matrix(m) for m in data["matrices"])


def _correlation(data: Mapping[str, Any]) -> str:
    out = []
    for level in ("segment-doc", "segment-global", "system"):
        rows = [r for r in data["rows"] if r["level"] == level]
        if rows:
            out.append(f"<h3>{level}</h3>" + _table(
                ["evaluator / aspect", "human", "method", "value", "95% CI", "n", "missing"],
                [[f"{r['evaluator']} / {r['aspect']}", r["human"], r["method"], r["value"],
                  f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]", r["n"], r["n_missing"]]
                 for r in rows], left=3))
    if data.get("matrix"):
        out.append(_matrix(data["matrix"]))
    return "".join(out)


def _style(data: Mapping[str, Any]) -> str:
    rows = []
    for r in data["rows"]:
        for name in ("original", "perturbed"):
            d = r[name]
            rows.append([f"{r['evaluator']} / {r['aspect']}", name, d["n"], d["n_missing"],
                         d["mean"], d["std"], d["minimum"], d["median"], d["maximum"],
                         " ".join(str(c) for c in d["counts"])])
    return _table(["evaluator / aspect", "set", "n", "missing", "mean", "std", "min", "median",
                   "max", "histogram counts"], rows, left=2)


RENDERERS = {"blindspot": _blindspot, "discernment": _discernment,
             "criteria-confusion": _confusion, "correlation": _correlation, "style": _style}


def render_html(results: Mapping[str, Any], *, title: str = "evalstress report") -> str:
    """The report for a results.json-shaped mapping (analyses already as dicts)."""
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
             f"<h1>{escape(title)}</h1>"]
    counts = results.get("counts") or {}
    if counts:
        parts.append("<p>" + ", ".join(f"{escape(str(k))}: {escape(str(v))}"
                                       for k, v in counts.items()) + "</p>")
    for name, data in (results.get("analyses") or {}).items():
        parts.append(f"<section id='{escape(name)}'><h2>{escape(name)}</h2>")
        renderer = RENDERERS.get(name)
        try:
            parts.append(renderer(data) if renderer else "")
        except (KeyError, TypeError, ValueError) as exc:  # a malformed section must not sink
            parts.append(f"<p class='note'>could not render this section ({escape(str(exc))})"
                         "</p>")
            renderer = None
        if renderer is None:
            parts.append(f"<pre>{escape(json.dumps(data, indent=1, default=str))}</pre>")
        for note in data.get("notes", []) if isinstance(data, Mapping) else []:
            parts.append(f"<p class='note'>note: {escape(str(note))}</p>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "".join(parts)


def write_html(results: Mapping[str, Any], path: str | Path, *,
               title: str = "evalstress report") -> Path:
    out = Path(path)
    out.write_text(render_html(results, title=title), encoding="utf-8")
    return out
