"""The sections of the HTML report, one function per analysis or block of results.json.

Every function takes the plain JSON mapping and returns markup in which every text from the
data has been escaped (`esc`, `num`, `table`); markup built here is wrapped in `Raw`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from evalstress.analyses.blindspot_stats import outcome_text
from evalstress.analyses.outcomes import Outcome, tally
from evalstress.core.wording import plural
from evalstress.report.common import (
    VERDICT_RGB,
    Raw,
    anchor,
    esc,
    label_html,
    num,
    scroll_box,
    spread,
    table,
    verdict_badge,
    white_text_on,
)
from evalstress.report.renderers import SectionContext, report_section

SECTION_TITLES = {
    "overview": "Overview",
    "combination": "Which evaluators to combine",
    "blindspot": "Blind spots: score against noise",
    "discernment": "Discernment (D scores)",
    "criteria-confusion": "Criteria confusion",
    "correlation": "Correlation with human scores",
    "generation": "LLM-written perturbations",
    "adversarial": "Adversarial search",
    "style": "Response style",
    "browser": "Variant browser",
    "signature": "Run signature",
}

GLYPH = {"pass": "✓", "fail": "✗", "inconclusive": "?", "not-applicable": "n/a"}


def test_anchor(outcome: Outcome) -> str:
    """The id of the detail row a grid cell links to."""
    return "t-" + anchor(outcome.analysis, outcome.evaluator, outcome.aspect, outcome.test)


# --- overview ---------------------------------------------------------------------------------


def _effect_text(outcome: Outcome) -> str:
    if outcome.effect is None or outcome.verdict == "not-applicable":
        return ""
    if outcome.analysis == "blindspot":
        if abs(outcome.effect) >= 999.5:
            return ">+999%" if outcome.effect < 0 else "<−999%"
        return f"{-outcome.effect:+.0f}%" if abs(outcome.effect) >= 0.5 else "0%"
    if outcome.analysis == "discernment":
        return f"{outcome.effect:.1f}"
    return f"{outcome.effect:.2f}"


def _strength(outcome: Outcome, scale: float) -> float:
    """0.3-1: how saturated a cell is. A pass is darker the more strongly the damage was
    noticed; a fail is darker the less it was (a flat score is the blindest spot)."""
    if outcome.effect is None or scale <= 0:
        return 0.7
    noticed = max(0.0, min(1.0, outcome.effect / scale))
    return 0.3 + 0.7 * (noticed if outcome.verdict == "pass" else 1.0 - noticed)


EFFECT_NOTE = {
    "blindspot": "cell: change of the mean score at the strongest noise, % of gold",
    "discernment": "cell: D (≥ 1 means p ≤ 0.05)",
    "criteria-confusion": "cell: rank-biserial r (S_T: how strongly it noticed; S_F: 1 − |r|)",
}


def overview(outcomes: Sequence[Outcome], short: Mapping[str, str]) -> str:
    if not outcomes:
        return ("<p class='note'>No pass/fail tests in this run (analyses with verdicts: "
                "blindspot, discernment, criteria-confusion).</p>")
    counts = tally(outcomes)
    parts = [
        "<p class='tally'>"
        f"<span class='v v-pass'>{counts['pass']} pass</span> "
        f"<span class='v v-fail'>{plural(counts['fail'], 'blind spot')}</span> "
        f"<span class='v v-inconclusive'>{counts['inconclusive']} inconclusive</span> "
        f"<span class='v v-not-applicable'>{counts['not-applicable']} not applicable</span>"
        "<span class='note'> · click a cell for its details; hover for the numbers</span></p>"]
    by_analysis: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_analysis[o.analysis].append(o)
    parts.append("<div class='grids'>")
    for analysis, items in by_analysis.items():
        parts.append(_grid(analysis, items, short))
    parts.append("</div>")
    return "".join(parts)


def _grid(analysis: str, items: Sequence[Outcome], short: Mapping[str, str]) -> str:
    tests = list(dict.fromkeys(o.test for o in items))
    subjects = list(dict.fromkeys((o.evaluator, o.aspect) for o in items))
    cell = {(o.evaluator, o.aspect, o.test): o for o in items}
    effects = [abs(o.effect) for o in items if o.effect is not None]
    scale = {"blindspot": 20.0, "discernment": 3.0}.get(analysis, 1.0)
    if effects and analysis == "blindspot":
        scale = max(5.0, min(50.0, sorted(effects)[len(effects) * 3 // 4]))
    head = "".join(f"<th class='tn' title='{esc(t)}'><span>{esc(t)}</span></th>" for t in tests)
    body = []
    for evaluator, aspect in subjects:
        cells = []
        for t in tests:
            o = cell.get((evaluator, aspect, t))
            if o is None:
                cells.append("<td class='c c-none'></td>")
                continue
            tip = f"{o.subject} · {o.test}: {o.verdict.upper()} — {o.detail}"
            strength = _strength(o, scale)
            tone = {"pass": "pass", "fail": "fail"}.get(o.verdict)
            dark = " on-dark" if tone and white_text_on(VERDICT_RGB[tone], strength) else ""
            cells.append(
                f"<td class='c c-{esc(o.verdict)}{dark}' style='--a:{strength:.2f}'>"
                f"<a href='#{test_anchor(o)}' title='{esc(tip)}'>"
                f"<b>{GLYPH[o.verdict]}</b><i>{esc(_effect_text(o))}</i></a></td>")
        body.append(f"<tr><th class='l rl'>{label_html(evaluator, short, aspect)}</th>"
                    + "".join(cells) + "</tr>")
    title = SECTION_TITLES.get(analysis, analysis)
    return (f"<div class='gridwrap'><div class='gridtitle'><a href='#{esc(analysis)}'>"
            f"{esc(title)}</a> <span class='note'>{esc(EFFECT_NOTE.get(analysis, ''))}</span>"
            f"</div><table class='grid' data-analysis='{esc(analysis)}'><thead><tr>"
            f"<th class='l rl'><span class='sr-only'>evaluator / aspect</span></th>{head}</tr>"
            f"</thead><tbody>{''.join(body)}</tbody>"
            "</table></div>")


# --- blind spots ------------------------------------------------------------------------------


@report_section("blindspot")
def blindspot(data: Mapping[str, Any], context: SectionContext) -> str:
    """Per evaluator aspect: the curves (shared y-scale) and a row per perturbation."""
    outcomes, short, curves = context.found, context.short, context.curves
    by_key = {(o.evaluator, o.aspect, o.test): o for o in outcomes if o.analysis == "blindspot"}
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in data.get("rows") or []:
        groups[(str(row["evaluator"]), str(row["aspect"]))].append(row)
    tol = data.get("tolerance") or {}
    tests = ("Strict tests (the paper's): the rank test asks every severity to score below gold, "
             "the monotonic test no rise at all as the noise grows; the verdicts with the "
             f"tolerance ({esc(tol.get('rule', ''))}, rel_tol = {num(tol.get('rel_tol'))}, "
             f"abs_tol = {num(tol.get('abs_tol'))}) are in results.json too."
             if data.get("strict") else
             "Rank test: every severity scores below gold by more than the tolerance; monotonic "
             "test: no rise by more than the tolerance as the noise grows. Tolerance: "
             f"{esc(tol.get('rule', ''))}, rel_tol = {num(tol.get('rel_tol'))}, "
             f"abs_tol = {num(tol.get('abs_tol'))}.")
    parts = [f"<p class='note'>{tests} Plots: mean over seeds, band and bars ± one "
             "standard deviation over seeds, grey band = gold ± tolerance, red × = not below "
             "gold, red ring = rises, diamond = severities whose noise ratios nearly coincide, "
             "merged (×n: how many; their mean, bars from the lowest to the highest mean ± one "
             "standard deviation).</p>"]
    for (evaluator, aspect), rows in groups.items():
        higher = bool(rows[0].get("higher_is_better", True))
        ylabel = f"{aspect}" + ("" if higher else " (lower is better)")
        parts.append(f"<div class='block' id='bs-{anchor(evaluator, aspect)}'>"
                     f"<h3>{label_html(evaluator, short, aspect).html}</h3>")
        shown = [{**row, "verdict": by_key[(evaluator, aspect, str(row["perturbation"]))].verdict}
                 if (evaluator, aspect, str(row["perturbation"])) in by_key else row
                 for row in rows]
        parts.append(f"<div class='pair'><figure class='curves'>{curves(shown, ylabel=ylabel)}"
                     "</figure>")
        table_rows = []
        for row in rows:
            o = by_key.get((evaluator, aspect, str(row["perturbation"])))
            points = sorted(row.get("points") or [], key=lambda p: p["noise_ratio"])
            curve = " → ".join(f"{num(p['mean'])}±{num(spread(p.get('std'), p['mean']), 2)}"
                               for p in points)
            ratios = (f"{points[0]['noise_ratio']:.2f}–{points[-1]['noise_ratio']:.2f}"
                      if points else "–")
            verdict = o.verdict if o else row.get("verdict")
            table_rows.append(Raw(
                f"<tr id='{test_anchor(o) if o else ''}'><td class='l'>{esc(row['perturbation'])}"
                f"</td><td>{num(row.get('gold'))}</td><td class='l small'>{esc(curve)}</td>"
                f"<td>{esc(ratios)}</td><td>{_tick(row.get('rank_pass'))}</td>"
                f"<td>{_tick(row.get('monotonic_pass'))}</td>"
                f"<td>{verdict_badge(verdict, o.detail if o else '').html}</td>"
                f"<td class='small'>{esc(outcome_text(row) or '–')}</td>"
                f"<td>{num(row.get('n_skipped'))}</td><td>{num(row.get('n_missing'))}</td>"
                f"<td>{_texts_link(str(row['perturbation']))}</td></tr>"))
        parts.append(_rows_table(["perturbation", "gold", "mean ± sd by severity",
                                  "noise ratio", "rank", "mono", "verdict",
                                  "from intervals", "skipped",
                                  "missing", "texts"], table_rows))
        parts.append("</div></div>")
    return "".join(parts)


def _tick(value: Any) -> str:
    if value is None:
        return "–"
    return "<span class='ok'>✓</span>" if value else "<span class='bad'>✗</span>"


def _texts_link(perturbation: str) -> str:
    return (f"<a class='texts' href='#browser' data-perturbation='{esc(perturbation)}'>"
            "texts ›</a>")


def _rows_table(headers: Sequence[str], rows: Sequence[Raw], caption: str = "") -> str:
    head = "".join(f"<th class='{'l' if i == 0 else ''}'>{esc(h)}</th>"
                   for i, h in enumerate(headers))
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return scroll_box(f"<table class='rows'>{cap}<thead><tr>{head}</tr></thead><tbody>"
                      + "".join(r.html for r in rows) + "</tbody></table>")


# --- discernment ------------------------------------------------------------------------------


def _d(value: Any) -> Raw:
    if value is None:
        return Raw("–")
    cls = "ok" if value >= 1 else "bad"
    return Raw(f"<span class='{cls}'>{abs(value) if abs(value) < 0.005 else value:.2f}</span>")


@report_section("discernment")
def discernment(data: Mapping[str, Any], context: SectionContext) -> str:
    outcomes, short, bars = context.found, context.short, context.bars
    by_key = {(o.evaluator, o.test): o for o in outcomes if o.analysis == "discernment"}
    method = data.get("method") or {}
    parts = [f"<p class='note'>{esc(method.get('test', ''))}; {esc(method.get('combination', ''))}"
             f"; {esc(method.get('score', ''))}; D_avg: {esc(method.get('d_avg', ''))}.</p>"]
    summaries = data.get("summaries") or []
    parts.append(table(
        ["evaluator", "task", "severity", "D_avg", "D_min", "weakest", "D_avg (EW)",
         "D_min (EW)", "weakest (EW)", "units"],
        [[label_html(str(s["evaluator"]), short), s.get("task"), s.get("group"),
          _d(s.get("d_avg")), _d(s.get("d_min")), s.get("d_min_at"), _d(s.get("d_avg_ew")),
          _d(s.get("d_min_ew")), s.get("d_min_ew_at"), s.get("n_units")] for s in summaries],
        left=3, caption="D_avg and D_min per evaluator, without and with expert weights (EW)"))
    units = data.get("units") or []
    by_eval: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for u in units:
        by_eval[str(u["evaluator"])].append(u)
    for evaluator, members in by_eval.items():
        parts.append(f"<div class='block'><h3>{label_html(evaluator, short).html}</h3>")
        parts.append(f"<figure class='bars'>{bars(members, evaluator=evaluator)}</figure>")
        rows = []
        for u in members:
            test = f"{u['perturbation']}@{u['severity']}"
            o = by_key.get((evaluator, test))
            aspects = ", ".join(f"{t['aspect']}: p={num((t.get('wilcoxon') or {}).get('pvalue'))}"
                                f" n={t.get('n')}" for t in u.get("tests") or [])
            rows.append(Raw(
                f"<tr id='{test_anchor(o) if o else ''}'><td class='l'>{esc(u['perturbation'])}"
                f"{_unverified_mark(u)}</td><td class='l'>{esc(u['severity'])}</td><td class='l'>"
                f"{esc(u.get('level') or '?')}</td><td>{num(u.get('p'), 4)}</td>"
                f"<td>{_d(u.get('d')).html}</td><td>{num(u.get('p_ew'), 4)}</td>"
                f"<td>{_d(u.get('d_ew')).html}{_fallback(u)}</td>"
                f"<td>{verdict_badge(o.verdict if o else None, o.detail if o else '').html}</td>"
                f"<td class='l small'>{esc(aspects)}</td>"
                f"<td>{_texts_link(str(u['perturbation']))}</td></tr>"))
        parts.append(_rows_table(["perturbation", "severity", "level", "p", "D", "p (EW)",
                                  "D (EW)", "verdict", "aspects", "texts"], rows))
        if any(_fallback(u) for u in members):
            parts.append("<p class='note'>* D (EW) on default weights: no expert weights for "
                         "that perturbation.</p>")
        if any(_unverified_mark(u) for u in members):
            parts.append(f"<p class='note'>{UNVERIFIED_NOTE}</p>")
        parts.append("</div>")
    return "".join(parts)


#: what the mark on a verdict resting on unverified LLM-written variants means
UNVERIFIED_NOTE = ("† rests on unverified LLM-written variants, kept by --include-unverified: "
                   "their attack's acceptance measured below the precision floor and no "
                   "verifier checked them, so some may not be the damage the attack promises.")


def _unverified_mark(entry: Mapping[str, Any]) -> str:
    """'†' (with its count) when a verdict rests on unverified LLM-written variants."""
    count = int(entry.get("n_unverified") or 0)
    return (f" <span class='bad' title='{count} pair(s) on unverified variants'>†</span>"
            if count else "")


def _fallback(unit: Mapping[str, Any]) -> str:
    """'*' when a unit's expert weights fell back to the defaults."""
    return "*" if str(unit.get("weight_source", "")).startswith("default") else ""


# --- criteria confusion -----------------------------------------------------------------------


@report_section("criteria-confusion")
def confusion(data: Mapping[str, Any], context: SectionContext) -> str:
    outcomes, short = context.found, context.short
    by_key = {(o.evaluator, o.aspect, o.test): o for o in outcomes
              if o.analysis == "criteria-confusion"}
    th = data.get("thresholds") or {}
    parts = [f"<p class='note'>Cells: mean score change (original − perturbed; orange: scored "
             f"worse, blue: scored better). <b>▲</b> S_T: the perturbation should move this "
             f"aspect "
             f"({esc(th.get('directional', ''))}); <b>=</b> S_F: it should not "
             f"({esc(th.get('invariance', ''))}). Red outline: failed; dashed: inconclusive.</p>"]
    parts.append(table(
        ["evaluator", "S_T tests", "passed", "miss rate", "S_F tests", "moved", "confusion rate"],
        [[label_html(str(s["evaluator"]), short), s.get("directional_tests"),
          s.get("directional_passed"), s.get("miss_rate"), s.get("invariance_tests"),
          s.get("invariance_failed"), s.get("confusion_rate")]
         for s in data.get("summaries") or []]))
    items = data.get("items") or []
    by_eval: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for item in items:
        by_eval[str(item["evaluator"])].append(item)
    for evaluator, members in by_eval.items():
        aspects = list(dict.fromkeys(str(i["aspect"]) for i in members))
        quality = {str(i["aspect"]): str(i.get("quality_aspect", "")) for i in members}
        rows = list(dict.fromkeys(f"{i['perturbation']}@{i['severity']}" for i in members))
        cell = {(f"{i['perturbation']}@{i['severity']}", str(i["aspect"])): i for i in members}
        scale = max((abs(i["change"]) for i in members if i.get("change") is not None),
                    default=0.0) or 1.0
        head = "".join(f"<th title='{esc(a)} → {esc(quality[a])}'>{esc(a)}<br>"
                       f"<span class='note'>{esc(quality[a])}</span></th>" for a in aspects)
        body = []
        for r in rows:
            cells = []
            for a in aspects:
                item = cell.get((r, a))
                if item is None:
                    cells.append("<td></td>")
                    continue
                o = by_key.get((evaluator, a, r))
                change = item.get("change")
                kind = item.get("test")
                mark = {"directional": "▲", "invariance": "="}.get(str(kind), "")
                classes = ["hm", f"k-{kind}"]
                if o is not None:
                    classes.append(f"c-{o.verdict}")
                value = 0.0 if change is None else change / scale
                tip = (f"{a} on {r}: change {num(change)} [{num(item.get('ci_low'))}, "
                       f"{num(item.get('ci_high'))}], p = {num(item.get('pvalue'))}, "
                       f"r = {num(item.get('rank_biserial'))}, n = {item.get('n')}"
                       + (f" — {o.verdict.upper()}: {o.detail}" if o else ""))
                ident = f" id='{test_anchor(o)}'" if o else ""
                cells.append(f"<td{ident} class='{' '.join(classes)}' style='--h:{value:.3f}' "
                             f"title='{esc(tip)}'><b>{mark}</b> {num(change, 2)}"
                             f"{_unverified_mark(item)}</td>")
            body.append(f"<tr><th class='l'>{esc(r)}</th>{''.join(cells)}</tr>")
        parts.append(f"<div class='block'><h3>{label_html(evaluator, short).html}</h3>"
                     + scroll_box(f"<table class='heat'><thead><tr><th class='l'>"
                                  f"perturbation</th>{head}</tr></thead><tbody>"
                                  f"{''.join(body)}</tbody></table>")
                     + (f"<p class='note'>{UNVERIFIED_NOTE}</p>"
                        if any(_unverified_mark(i) for i in members) else "") + "</div>")
    matrices = data.get("matrices") or []
    if matrices:
        parts.append("<h3>Inter-aspect correlation</h3><p class='note'>How the evaluator's "
                     "aspects move together over all texts it scored, beside the humans' "
                     "matrix: an evaluator whose aspects all correlate near 1 cannot tell the "
                     "criteria apart.</p><div class='side'>")
        parts.extend(matrix(m, short) for m in matrices)
        parts.append("</div>")
    return "".join(parts)


def _shorten(label: str, short: Mapping[str, str]) -> str:
    if label in short:
        return short[label]
    for full, name in short.items():
        if label.startswith(full + "/"):
            aspect = label[len(full) + 1:]
            return name if aspect == name else f"{name}/{aspect}"
    return label


def matrix(m: Mapping[str, Any], short: Mapping[str, str] | None = None) -> str:
    short = short or {}
    labels = [str(x) for x in m.get("labels") or []]
    names = [_shorten(label, short) for label in labels]
    head = "".join(f"<th title='{esc(label)}'>{esc(name[:16])}</th>"
                   for label, name in zip(labels, names, strict=True))
    body = []
    for label, name, row in zip(labels, names, m.get("values") or [], strict=False):
        cells = "".join(
            f"<td class='hm' style='--h:{(v or 0):.3f}'>{num(v, 2)}</td>" for v in row)
        body.append(f"<tr><th class='l' title='{esc(label)}'>{esc(name[:26])}</th>{cells}</tr>")
    title = _shorten(str(m.get("name", "")), short)
    # a wide matrix scrolls in its own box, never the page
    return (f"<div class='matrixwrap'><table class='heat matrix'><caption>{esc(title)} "
            f"({esc(m.get('method', ''))}, n = {num(m.get('n'))})</caption><thead><tr>"
            "<th><span class='sr-only'>aspect</span></th>"
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


# --- correlation with humans ------------------------------------------------------------------


def _ci_bar(value: Any, low: Any, high: Any) -> str:
    """A tiny interval on [-1, 1]: the CI as a bar, the value as a tick."""
    if value is None:
        return ""

    def x(v: float) -> float:
        return 2 + 76 * (max(-1.0, min(1.0, v)) + 1) / 2

    bar = (f"<rect x='{x(low):.1f}' y='3' width='{max(1.0, x(high) - x(low)):.1f}' height='6' "
           "fill='#9ec5fe'/>" if low is not None and high is not None else "")
    return (f"<svg class='ci' width='80' height='12' aria-hidden='true'><line x1='40' y1='0' "
            f"x2='40' y2='12' stroke='#aaa'/>{bar}<rect x='{x(value) - 1:.1f}' y='1' width='2' "
            "height='10' fill='#0969da'/></svg>")


@report_section("correlation")
def correlation(data: Mapping[str, Any], context: SectionContext) -> str:
    short = context.short
    rows = data.get("rows") or []
    parts = []
    method = data.get("method") or {}
    if method:
        parts.append(f"<p class='note'>{esc(method.get('ci', ''))}; Kendall: "
                     f"{esc(method.get('kendall', ''))}.</p>")
    levels = list(dict.fromkeys(str(r["level"]) for r in rows))
    for level in levels:
        chosen = [r for r in rows if r["level"] == level]
        humans = list(dict.fromkeys(str(r["human"]) for r in chosen))
        keys = list(dict.fromkeys((str(r["evaluator"]), str(r["aspect"]), str(r["method"]))
                                  for r in chosen))
        cell = {(str(r["evaluator"]), str(r["aspect"]), str(r["method"]), str(r["human"])): r
                for r in chosen}
        body = []
        for evaluator, aspect, meth in keys:
            cells = []
            for h in humans:
                r = cell.get((evaluator, aspect, meth, h))
                if r is None:
                    cells.append("<td></td>")
                    continue
                cells.append(f"<td title='n = {esc(r.get('n'))}, missing = "
                             f"{esc(r.get('n_missing'))}'>{num(r.get('value'))} "
                             f"<span class='note'>[{num(r.get('ci_low'))}, "
                             f"{num(r.get('ci_high'))}]</span> "
                             f"{_ci_bar(r.get('value'), r.get('ci_low'), r.get('ci_high'))}</td>")
            body.append(f"<tr><th class='l'>{label_html(evaluator, short, aspect).html}</th>"
                        f"<td class='l'>{esc(meth)}</td>{''.join(cells)}</tr>")
        head = "".join(f"<th>{esc(h)}</th>" for h in humans)
        desc = ((method.get("levels") or {}).get(level, "") if isinstance(method, Mapping)
                else "")
        parts.append(f"<h3>{esc(level)}</h3><p class='note'>{esc(desc)}</p>"
                     + scroll_box(f"<table class='rows'><thead><tr><th class='l'>evaluator"
                                  f" / aspect</th><th class='l'>method</th>{head}</tr></thead>"
                                  f"<tbody>{''.join(body)}</tbody></table>"))
    if data.get("matrix"):
        parts.append(matrix(data["matrix"], short))
    if not rows:
        parts.append("<p class='note'>No correlation could be computed.</p>")
    return "".join(parts)


# --- LLM-written perturbations (results.json `generation`: docs/results.schema.json) ----------


def trust_caption(head: Mapping[str, Any]) -> str:
    """What the verification column means, with the floor and when it was measured."""
    floor = head.get("floor", 0.95)
    return (f"checks = the attack's acceptance measured at precision >= {floor} on held-out "
            f"replies; verifier = checked by the verifier model; unverified = neither (left out "
            f"of discernment and criteria confusion unless --include-unverified). Precision "
            f"measured {head.get('measured') or '?'} with evalstress "
            f"{head.get('evalstress') or '?'}.")


def trust_text(p: Mapping[str, Any]) -> str:
    """One attack's verification with the precision it rests on, e.g. 'unverified: 3 (checks
    0.60)'; '' when the block has none (imported or older runs)."""
    kind = p.get("verification")
    if not kind:
        return ""
    checks = p.get("check_precision")
    said = f"checks {'unmeasured' if checks is None else f'{checks:.2f}'}"
    if kind == "verifier":
        verified = p.get("verifier_precision")
        said += (", verifier unmeasured" if not p.get("verifier_measured")
                 else f", verifier {'–' if verified is None else f'{verified:.2f}'}")
    count = f" {p.get('unverified')}" if kind == "unverified" else ""
    return f"{kind}{count} ({said})"


def _trust_cell(p: Mapping[str, Any]) -> str:
    text = trust_text(p)
    cls = "bad" if p.get("verification") == "unverified" else "ok"
    return f"<span class='{cls}'>{esc(text)}</span>" if text else "–"


def _rate_bar(rate: Any) -> str:
    if rate is None:
        return ""
    width = 100 * max(0.0, min(1.0, float(rate)))
    return (f"<span class='bar'><span style='width:{width:.0f}%'></span></span>")


def generation(data: Mapping[str, Any]) -> str:
    parts = []
    generator = data.get("generator") or {}
    usage = data.get("usage") or {}
    if generator:
        parts.append("<p><b>Generator</b> " + " · ".join(
            f"{esc(k)} = {esc(v)}" for k, v in generator.items()) + "</p>")
    if usage:
        parts.append("<p class='note'>usage: " + " · ".join(
            f"{esc(k)} {num(v)}" for k, v in usage.items()) + "</p>")
    rows = []
    reasons_all: dict[str, int] = defaultdict(int)
    for name, p in (data.get("perturbations") or {}).items():
        rejections = p.get("rejections") or {}
        for reason, count in rejections.items():
            reasons_all[str(reason)] += int(count)
        reasons = ", ".join(f"{r}: {c}" for r, c in sorted(rejections.items(),
                                                             key=lambda kv: -int(kv[1])))
        rate = p.get("acceptance_rate")
        rows.append([Raw(f"{esc(name)} {_texts_link(str(name))}"), p.get("planned"),
                     p.get("accepted"), p.get("skipped"), p.get("asks"), p.get("reasks"),
                     Raw(f"{num(rate, 2)} {_rate_bar(rate)}"), Raw(_trust_cell(p)),
                     Raw(f"<span class='small'>{esc(reasons) or '–'}</span>")])
    head = data.get("precision") or {}
    parts.append(table(["perturbation", "planned", "accepted", "skipped", "asks", "re-asks",
                        "acceptance rate", "verification (measured precision)",
                        "rejection reasons"], rows,
                       caption="acceptance rate = accepted / planned; every rejected answer is "
                               "counted, also those a re-ask replaced. Verification: "
                               + trust_caption(head)))
    if reasons_all:
        parts.append("<p class='note'>rejections over all attacks: " + ", ".join(
            f"{esc(r)} {c}" for r, c in sorted(reasons_all.items(), key=lambda kv: -kv[1]))
            + "</p>")
    imported = data.get("imported")
    if imported:
        parts.append(f"<p>Imported variants: {num(imported.get('variants'))} from "
                     f"<code>{esc(imported.get('file', ''))}</code></p>")
    return "".join(parts)


# --- signature --------------------------------------------------------------------------------


def signature(results: Mapping[str, Any], short: Mapping[str, str]) -> str:
    config = results.get("config") or {}
    suite = results.get("suite") or {}
    counts = results.get("counts") or {}
    parts = ["<dl class='kv'>"]
    for key, value in (("evalstress", results.get("evalstress")),
                       ("schema", results.get("schema_version")),
                       ("created", results.get("created")),
                       ("suite", suite.get("name")),
                       ("seeds", ", ".join(map(str, suite.get("seeds") or [])))):
        if value not in (None, ""):
            parts.append(f"<dt>{esc(key)}</dt><dd>{esc(value)}</dd>")
    if config:
        command = config.get("command", "")
        parts.append(f"<dt>command</dt><dd><code>{esc(_command_line(config))}</code></dd>"
                     if command else "")
    parts.append("</dl>")
    parts.append(table(["what", *counts.keys()], [["counts", *counts.values()]]))
    evaluators = results.get("evaluators") or {}
    if evaluators:
        rows = []
        for label, info in evaluators.items():
            info = info or {}
            stats = info.get("stats") or {}
            sig = info.get("signature") or {}
            versions = sig.get("versions") or {}
            rows.append([label_html(str(label), short), Raw(f"<code class='small'>{esc(label)}"
                                                            "</code>"),
                         Raw("<span class='small'>" + esc(", ".join(
                             f"{k} {v}" for k, v in versions.items())) + "</span>"),
                         ", ".join(info.get("meant_for") or []) or "all tests",
                         stats.get("requested"), stats.get("distinct"), stats.get("cached"),
                         stats.get("scored"), stats.get("missing")])
        parts.append(table(["evaluator", "spec", "versions / models", "meant for", "requested",
                            "distinct", "cached", "scored", "missing"], rows, left=4))
    skips = results.get("skip_reasons") or []
    if skips:
        parts.append(table(["perturbation", "reason", "skips"],
                           [[s.get("perturbation"), s.get("reason"), s.get("count")]
                            for s in skips], left=2, caption="Skipped variants"))
    missing = results.get("missing_reasons") or []
    if missing:
        parts.append(table(["evaluator", "aspect", "reason", "missing"],
                           [[label_html(str(m.get("evaluator")), short), m.get("aspect"),
                             m.get("reason"), m.get("count")] for m in missing], left=3,
                           caption="Missing scores"))
    dump = json.dumps({"config": config, "evaluators": evaluators}, indent=1, default=str)
    parts.append("<details><summary>configuration and evaluator signatures (JSON)</summary>"
                 f"<pre>{esc(dump)}</pre></details>")
    return "".join(parts)


def _command_line(config: Mapping[str, Any]) -> str:
    words = ["evalstress", str(config.get("command", ""))]
    if config.get("data"):
        words.append(str(config["data"]))
    for key in ("suite", "limit", "shard"):
        if config.get(key) not in (None, ""):
            words.append(f"--{key} {config[key]}")
    for spec in config.get("evaluators") or []:
        words.append(f"-e '{spec}'")
    mapping = config.get("map")
    if isinstance(mapping, list):
        words.extend(f"-m {m}" for m in mapping)
    return " ".join(words)


# --- response style and anything unknown ------------------------------------------------------


@report_section("style")
def style(data: Mapping[str, Any], context: SectionContext) -> str:
    short = context.short
    rows = []
    for r in data.get("rows") or []:
        for name in ("original", "perturbed"):
            d = r.get(name) or {}
            rows.append([label_html(str(r["evaluator"]), short, str(r["aspect"])), name,
                         d.get("n"), d.get("n_missing"), d.get("mean"),
                         spread(d.get("std"), d.get("mean")),
                         d.get("minimum"), d.get("median"), d.get("maximum")])
    return table(["evaluator / aspect", "set", "n", "missing", "mean", "std", "min", "median",
                  "max"], rows, left=2)


def raw_json(data: Any) -> str:
    return f"<pre>{esc(json.dumps(data, indent=1, default=str))}</pre>"


# --- which evaluators to combine --------------------------------------------------------------


def combination(outcomes: Sequence[Outcome], short: Mapping[str, str]) -> str:
    from evalstress.analyses.combination import combine

    subjects = {o.subject for o in outcomes if o.analysis != "discernment"}
    if len(subjects) < 2:
        return ""
    result = combine(outcomes)
    total = len(result.tests)

    parts_of = {o.subject: (o.evaluator, o.aspect) for o in outcomes}

    def name(candidate: str) -> str:
        evaluator, aspect = parts_of.get(candidate, (candidate, ""))
        return label_html(evaluator, short, aspect).html

    parts = [f"<p>Smallest set passing the most tests: <b>{' + '.join(map(name, result.best)) or '–'}"
             f"</b> — passes {result.covered} of {plural(total, 'test')}"
             + ("" if result.exact else " (greedy: too many candidates for an exact search)")
             + ".</p>"]
    if result.alternatives:
        parts.append("<p class='note'>Equally good: " + "; ".join(
            " + ".join(map(name, alt)) for alt in result.alternatives) + "</p>")
    if len(result.coverage_by_size) > 1:
        parts.append("<p class='note'>Best with " + ", ".join(
            f"{s['size']}: {s['covered']}" for s in result.coverage_by_size) + " tests.</p>")
    if result.uncovered:
        parts.append("<p>No evaluator passes: " + ", ".join(
            f"<code>{esc(t)}</code>" for t in result.uncovered) + "</p>")
    rows = sorted(result.passes.items(), key=lambda kv: -len(kv[1]))
    parts.append("<details><summary>passes per evaluator</summary>" + table(
        ["evaluator / aspect", "passes", "tests passed"],
        [[Raw(name(c)), len(p), Raw(f"<span class='small'>{esc(', '.join(p))}</span>")]
         for c, p in rows], left=1) + "</details>")
    return "".join(parts)
