"""card.html: the card as one self-contained page, drawn from card.json's data and its figures.

Nothing is fetched (a content-security policy like the run report's forbids it: inline styles,
no script at all), so the page opens offline and can be mailed as it is. It reads at 1400 px
and prints on two A4 pages (`card.style`). Order: the evaluator (signature, data and hash,
budget, cost), the sanity gate (a failed one: a banner, and every statistic below greyed with
the reason), the headline findings (each linked to the table row or figure it rests on, with
its before/after example and both scores), then one compact section per method with its
figure (inline SVG with a text alternative) beside its table. No composite score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalstress.analyses.blindspot_stats import outcome_text
from evalstress.card import agreement
from evalstress.card import consistency_view as view
from evalstress.card.figures import FigurePlan, gate_failures
from evalstress.card.findings import can_reach, ceiling
from evalstress.card.markdown import (
    BIAS_HEAD,
    POSITION_HEAD,
    bias_cells,
    ci,
    gate_checks,
    interval_text,
    level_text,
    pct,
    position_cells,
)
from evalstress.card.model import cost_text, count_text
from evalstress.card.plan import JudgeMethodsNote, judge_methods_note
from evalstress.card.sequential import design_line
from evalstress.card.style import CARD_CSS
from evalstress.report.common import Raw, anchor, esc
from evalstress.report.common import num as report_num
from evalstress.report.common import table as report_table
from evalstress.report.plots import inline_svg

#: characters of each text an example shows around its first change (card.json has them whole)
EXCERPT_CHARS = 260
#: the page's policy: inline styles and data: images only; no script, no connection
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'"
#: from this many findings on, the methods start a printed page of their own
NEWPAGE_FINDINGS = 3
#: verdict words the page shows, and the badge each gets
BADGES = {"pass": "pass", "fail": "FAIL", "warn": "warn", "inconclusive": "inconclusive",
          "unclear": "unclear", "not-applicable": "n/a"}


def num(value: Any) -> str:
    """A number as the report writes it, float noise (|x| < 1e-9) shown as 0."""
    if isinstance(value, float) and abs(value) < 1e-9:
        value = 0.0
    return report_num(value)


def table(headers: Sequence[Any], rows: Sequence[Sequence[Any]], **options: Any) -> str:
    """The report's table, float noise in its cells shown as 0."""
    return report_table(headers, [[0.0 if isinstance(v, float) and abs(v) < 1e-9 else v
                                   for v in row] for row in rows], **options)


def badge(verdict: Any) -> Raw:
    if verdict is None:
        return Raw("–")
    key = str(verdict)
    return Raw(f'<span class="badge badge-{esc(key)}">{esc(BADGES.get(key, key))}</span>')


def yes_no(value: Any) -> Raw:
    return badge({True: "pass", False: "fail"}.get(value)) if value is not None else Raw("–")


def row_anchor(method: str, *parts: Any) -> str:
    """The id of a table row a finding can point at."""
    return anchor(method, *parts)


def excerpt_pair(original: str, variant: str, limit: int = EXCERPT_CHARS
                 ) -> tuple[Raw, Raw]:
    """Both texts cut to about `limit` characters from a little before their first difference,
    the differing middle marked (<del> in the original, <ins> in the variant)."""
    start = 0
    while start < min(len(original), len(variant)) and original[start] == variant[start]:
        start += 1
    end = 0
    while (end < min(len(original), len(variant)) - start
           and original[-1 - end] == variant[-1 - end]):
        end += 1
    while start > 0 and not original[start - 1].isspace():  # whole words marked
        start -= 1
    while end > 0 and not original[len(original) - end].isspace():
        end -= 1
    begin = max(0, original.rfind(" ", 0, max(0, start - 60)) + 1) if start > 60 else 0

    def shown(text: str, tag: str) -> Raw:
        middle_end = len(text) - end
        head, middle, tail = text[begin:start], text[start:middle_end], text[middle_end:]
        budget = limit - len(head)
        cut = middle[:max(budget, 40)]
        rest = max(0, limit - len(head) - len(cut))
        out = ("…" if begin else "") + esc(head)
        if cut:
            out += f"<{tag}>{esc(cut)}{'…' if len(cut) < len(middle) else ''}</{tag}>"
        if len(cut) == len(middle):
            out += esc(tail[:rest]) + ("…" if len(tail) > rest else "")
        return Raw(out)

    return shown(original, "del"), shown(variant, "ins")


def example_html(example: Mapping[str, Any] | None, ident: str) -> str:
    if not example:
        return ""
    where = ", ".join(str(v) for v in (example.get("perturbation"), example.get("severity"))
                      if v not in (None, ""))
    before, after = excerpt_pair(str(example.get("original") or ""),
                                 str(example.get("variant") or ""))
    gold = ""
    if example.get("gold_original") is not None:
        gold = (f" · gold {num(example.get('gold_original'))} → "
                f"{num(example.get('gold_variant'))}")
    label = (f"<p class='head'>{esc(example['label'])}</p>" if example.get("label")
             else "")
    return (f"{label}<div class='example' id='{esc(ident)}'>"
            f"<div class='pane'><p class='head'>Original {esc(example.get('example_id'))}: "
            f"score {num(example.get('original_score'))}</p><p>{before}</p></div>"
            f"<div class='pane'><p class='head'>Variant ({esc(where)}): score "
            f"{num(example.get('variant_score'))}{gold}</p><p>{after}</p></div></div>")


def evidence_target(finding: Mapping[str, Any], rendered: set[str]) -> tuple[str, str]:
    """(id, words) of the element a finding rests on: its table row when the page shows it,
    else its method's figure, else its method's section."""
    method = finding["method"]
    row: Mapping[str, Any] = (finding.get("rows") or [{}])[0]
    wanted = {"blindspot": (row.get("perturbation"),),
              "discernment": (row.get("task"),),
              "criteria": ((row.get("aspect"), row.get("quality_aspect"))
                           if "quality_aspect" in row and "test" not in row
                           else (row.get("perturbation"),)),
              "adversarial": (row.get("victim"), row.get("direction"), row.get("method")),
              "correlation": (row.get("aspect"), row.get("human"), row.get("level"),
                              row.get("method"))}.get(method, ())
    ident = row_anchor(method, *wanted)
    if ident in rendered:
        return ident, f"{method} table, row {' / '.join(str(w) for w in wanted if w)}"
    if f"fig-{method}" in rendered:
        return f"fig-{method}", f"{method} figure"
    return f"m-{method}", f"{method} section"


def findings_html(card: Mapping[str, Any], rendered: set[str]) -> str:
    findings = card["findings"]
    if not findings:
        said = ("No findings: the sanity gate does not trust this evaluator's scores, so "
                "nothing on this card is stated as a property of the evaluator."
                if not card["gate"]["trusted"] else
                "No finding stood out in the methods that ran.")
        return f"<p>{esc(said)}</p>"
    items = []
    for number, finding in enumerate(findings, 1):
        target, words = evidence_target(finding, rendered)
        interval = finding["interval"]
        example = finding.get("example")
        extreme = finding.get("extreme")
        example_link = (f" · <a href='#example-{number}'>before/after example</a>"
                        if example else " · no single example (it rests on every text)")
        items.append(
            f"<li class='finding' id='finding-{number}'><p class='text'>{esc(finding['text'])}"
            f"</p><p class='meta'>{esc(finding['kind'])} · {esc(interval['what'])}: "
            f"{esc(level_text(interval))} "
            f"{esc(interval_text(interval))} · evidence: <a href='#{esc(target)}'>"
            f"{esc(words)}</a>{example_link}</p>"
            f"{example_html(example, f'example-{number}')}"
            + (f"<details><summary>{esc(extreme.get('label') or 'most extreme example')}"
               f"</summary>{example_html(extreme, f'example-{number}-extreme')}</details>"
               if extreme else "") + "</li>")
    head = ""
    if card.get("preliminary"):
        head += (f"<p class='preliminary'><strong>Preliminary:</strong> "
                 f"{esc(card.get('preliminary_reason') or '')}.</p>")
    if card.get("evidence_rule"):
        head += f"<p class='meta'>Examples: {esc(card['evidence_rule'])}.</p>"
    return f"{head}<ol class='findings'>{''.join(items)}</ol>"


def gate_html(gate: Mapping[str, Any]) -> str:
    rows = [[c.check, c.aspect, c.measured, badge(c.state)] for c in gate_checks(gate, num)]
    return table(["check", "aspect", "measured", "verdict"], rows, left=3, row_headers=True,
                 table_id="gate-table")


def blindspot_html(section: Mapping[str, Any], ids: set[str]) -> str:
    rows = section["results"].get("rows") or []
    aspects = list(dict.fromkeys(r["aspect"] for r in rows))
    names = list(dict.fromkeys(r["perturbation"] for r in rows))
    body, row_ids = [], []
    for name in names:
        mine = {r["aspect"]: r for r in rows if r["perturbation"] == name}
        first = next(iter(mine.values()))
        top = max(first["severities"], key=lambda s: s["severity_rank"]) \
            if first["severities"] else {}
        line: list[Any] = [name, badge(worst(r.get("verdict") for r in mine.values())),
                           yes_no(all_of(r.get("rank_pass") for r in mine.values())),
                           yes_no(all_of(r.get("monotonic_pass") for r in mine.values())),
                           "; ".join(dict.fromkeys(o for o in (outcome_text(r) for r in
                                                               mine.values()) if o)) or None,
                           top.get("severity")]
        for aspect in aspects:
            row = mine.get(aspect)
            heavy = max(row["severities"], key=lambda s: s["severity_rank"]) \
                if row and row["severities"] else {}
            line.append(f"{pct(heavy.get('relative_change'))} "
                        f"({ci(heavy.get('relative_ci_low'), heavy.get('relative_ci_high'))})"
                        if heavy else None)
        body.append(line)
        row_ids.append(row_anchor("blindspot", name))
    ids.update(row_ids)
    drops = [f"drop at top severity, 95% CI ({a})" if len(aspects) > 1 else
             "drop at top severity (95% CI)" for a in aspects]
    return table(["perturbation", "verdict", "rank", "monotonic", "from intervals",
                  "top severity", *drops], body,
                 row_ids=row_ids, row_headers=True, table_id="t-blindspot")


def worst(verdicts: Any) -> str | None:
    seen = [v for v in verdicts if v]
    for verdict in ("fail", "inconclusive", "not-applicable", "pass"):
        if verdict in seen:
            return verdict
    return seen[0] if seen else None


def all_of(values: Any) -> bool | None:
    seen = [v for v in values if v is not None]
    return all(seen) if seen else None


def discernment_html(section: Mapping[str, Any], ids: set[str]) -> str:
    results = section["results"]
    threshold = float(results.get("threshold") or 1.0)
    units = results.get("units") or []
    summaries = {(s["task"], s["group"]): s for s in results.get("summaries") or []}
    tasks = list(dict.fromkeys(s["task"] for s in results.get("summaries") or []))
    body, row_ids = [], []
    for task in tasks:
        mine = [u for u in units if u["task"] == task and u.get("d") is not None]
        every = summaries.get((task, "all")) or {}
        able = [u for u in mine if can_reach(u, threshold)]
        body.append([task, len(mine), (summaries.get((task, "minor")) or {}).get("d_avg"),
                     (summaries.get((task, "major")) or {}).get("d_avg"), every.get("d_min"),
                     max((ceiling(u) for u in mine), default=None),
                     sum(1 for u in able if u["d"] < threshold), len(mine) - len(able)])
        row_ids.append(row_anchor("discernment", task))
    ids.update(row_ids)
    return table(["task", "units", "D_avg minor", "D_avg major", "D_min", "max D for n",
                  f"below D = {threshold:g}", "too few examples"], body, left=1,
                 row_ids=row_ids,
                 row_headers=True, table_id="t-discernment")


def criteria_html(section: Mapping[str, Any], ids: set[str]) -> str:
    results = section["results"]
    if results.get("mode") == "confusion":
        matrix = (results.get("confusion") or {}).get("matrix") or {}
        affected = list(matrix.get("affected") or [])
        cells = {(c["perturbation"], c["affected"]): c for c in matrix.get("cells") or []}
        body, row_ids = [], []
        for attack in matrix.get("attacks") or []:
            some: Mapping[str, Any] = next((c for c in cells.values()
                                            if c["perturbation"] == attack), {})
            line: list[Any] = [f"{attack} @{some.get('severity')}", some.get("intended")]
            for aspect in affected:
                cell = cells.get((attack, aspect))
                line.append(Raw("–") if cell is None else Raw(
                    f"{esc(cell.get('expected') or 'no test')}: "
                    f"{badge({True: 'pass', False: 'fail'}.get(cell.get('passed')))}"
                    + (f" r {cell['rank_biserial']:+.2f}"
                       if cell.get("rank_biserial") is not None else "")))
            body.append(line)
            row_ids.append(row_anchor("criteria", attack))
        ids.update(row_ids)
        return table(["attack", "intended", *affected], body, left=2, row_ids=row_ids,
                     row_headers=True, table_id="t-criteria")
    profile = results.get("sensitivity") or {}
    probed = [a for a in profile.get("aspects") or [] if a.get("probed")]
    several = len({a["aspect"] for a in probed}) > 1
    body, row_ids = [], []
    for aspect in probed:
        label = f"{aspect['quality_aspect']} ({aspect['aspect']})" if several \
            else aspect["quality_aspect"]
        body.append([label, ", ".join(aspect["perturbations"]),
                     pct(aspect.get("relative_change")),
                     ci(aspect.get("relative_ci_low"), aspect.get("relative_ci_high")),
                     aspect.get("rank_biserial")])
        row_ids.append(row_anchor("criteria", aspect["aspect"], aspect["quality_aspect"]))
    ids.update(row_ids)
    unprobed = sorted({a["quality_aspect"] for a in profile.get("aspects") or []
                       if not a.get("probed")})
    note = (f"<p class='note'>Not probed by this suite: {esc(', '.join(unprobed))}.</p>"
            if unprobed else "")
    return table(["quality aspect", "attacks (heaviest severity)", "drop", "95% CI",
                  "r (rank-biserial)"],
                 body, left=2, row_ids=row_ids, row_headers=True, table_id="t-criteria") + note


def adversarial_html(section: Mapping[str, Any], ids: set[str]) -> str:
    results = section["results"]
    rows = results.get("asr") or []
    row_ids = [row_anchor("adversarial", r["victim"], r["direction"], r["method"]) for r in rows]
    ids.update(row_ids)
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in results.get("notes") or [])
    return table(["victim", "direction", "method", "attempts", "successes", "ASR", "95% CI"],
                 [[r["victim"], r["direction"], r["method"], r["attempts"], r["successes"],
                   pct(r.get("asr"), False), ci(r.get("ci_low"), r.get("ci_high"), signed=False)]
                  for r in rows], left=3, row_ids=row_ids, row_headers=True,
                 table_id="t-adversarial") + notes + example_html(results.get("example"),
                                                                  "example-adversarial")


def correlation_html(section: Mapping[str, Any], ids: set[str]) -> str:
    rows = section["results"].get("rows") or []
    row_ids = [row_anchor("correlation", r["aspect"], r["human"], r["level"], r["method"])
               for r in rows]
    ids.update(row_ids)
    return (table(["aspect", "human", "level", "method", "value", "95% CI", "n"],
                  [[r["aspect"], r["human"], r["level"], r["method"], r["value"],
                    ci(r.get("ci_low"), r.get("ci_high"), False), r["n"]] for r in rows],
                  left=4, row_ids=row_ids, row_headers=True,
                  table_id="t-correlation") if rows else "") + agreement_html(
        section["results"].get("agreement"), ids)


def agreement_html(block: Mapping[str, Any] | None, ids: set[str]) -> str:
    """The agreement block under the correlations (`card.agreement`), its tau-b and alpha
    rows anchored for the findings that rest on them."""
    if not block:
        return ""
    row_ids = [row_anchor("correlation", r["aspect"], r["human"], r["level"], r["statistic"])
               for r in block.get("rows") or []]
    ids.update(row_ids)
    out = "<h4>Agreement with the human raters</h4>" + table(
        agreement.HEADERS, agreement.table_rows(block), left=4, row_ids=row_ids,
        row_headers=True, table_id="t-agreement") if block.get("rows") else ""
    if agreement.human_rows(block):
        out += "<p>Among the human raters:</p>" + table(
            agreement.HUMAN_HEADERS, agreement.human_rows(block), left=4,
            table_id="t-agreement-humans")
    if agreement.pair_rows(block):
        out += "<p>Pairs of outputs the humans order:</p>" + table(
            agreement.PAIR_HEADERS, agreement.pair_rows(block), left=2,
            table_id="t-agreement-pairs")
    if agreement.preference_rows(block):
        out += "<h4>Agreement with the human preferences</h4>" + table(
            agreement.PREFERENCE_HEADERS, agreement.preference_rows(block), left=3,
            table_id="t-agreement-preferences")
    if agreement.rater_rows(block):
        out += "<p>The raters' votes among themselves:</p>" + table(
            agreement.RATER_HEADERS, agreement.rater_rows(block), left=1,
            table_id="t-agreement-raters")
    return out + "".join(f"<p class='note'>{esc(n)}</p>" for n in agreement.notes(block))


def bias_html(section: Mapping[str, Any], ids: set[str]) -> str:
    """Each bias probe arm's effect above its placebo, its corrected interval and verdict."""
    results = section["results"]
    rows = results.get("rows") or []
    row_ids = [row_anchor("bias", r["probe"], r["arm"], r["aspect"]) for r in rows]
    ids.update(row_ids)
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in results.get("notes") or [])
    how = (f"<p class='note'>Effect: {esc(results.get('effect'))}. {esc(results.get('interval'))}"
           f", {esc(results.get('correction'))} over {esc(results.get('n_tests'))} tests.</p>")
    return table(BIAS_HEAD, [bias_cells(r) for r in rows], left=3, row_ids=row_ids,
                 row_headers=True, table_id="t-bias") + how + notes


def consistency_html(section: Mapping[str, Any], ids: set[str]) -> str:
    """Repeats, rewording shifts and the blind-spot verdicts that change between wordings."""
    results = section["results"]
    changes = view.change_rows(results)
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in results.get("notes") or [])
    return ("<p>Repeats of one request:</p>"
            + table(view.REPEAT_HEAD, view.repeat_rows(results), left=1,
                    table_id="t-consistency-repeats")
            + "<p>Criteria reworded (shift = reworded minus as written):</p>"
            + table(view.SHIFT_HEAD, view.shift_rows(results), left=1,
                    table_id="t-consistency-wording")
            + f"<p>{esc(view.verdict_line(results))}</p>"
            + (table(view.CHANGE_HEAD, changes, left=2) if changes else "") + notes)


def identity_html(evaluator: Mapping[str, Any]) -> str:
    """The judge's identity and the warnings on its model family; "" for other evaluators."""
    warnings = "".join(f"<p class='stamp' role='note'>Warning: {esc(w)}</p>"
                       for w in view.identity_warnings(evaluator))
    facts = view.identity_facts(evaluator)
    rows = "".join(f"<dt>{esc(name)}</dt><dd><code>{esc(value)}</code></dd>"
                   for name, value in facts)
    return warnings + (f"<section id='identity'><h2>Judge identity</h2><dl class='facts'>"
                       f"{rows}</dl></section>" if facts else "")


TABLES = {"blindspot": blindspot_html, "discernment": discernment_html,
          "criteria": criteria_html, "adversarial": adversarial_html,
          "correlation": correlation_html, "consistency": consistency_html}


def position_html(section: Mapping[str, Any], ids: set[str]) -> str:
    """The position test: flip rates under swapping and re-asking, first-position wins."""
    results = section["results"]
    if results.get("pairs") is None:
        return ""
    ids.add(row_anchor("position", "test"))
    return table(POSITION_HEAD, [position_cells(results)], left=1,
                 row_ids=[row_anchor("position", "test")], table_id="t-position") + \
        f"<p class='note'>Pairs: {esc(results.get('pairs_rule', ''))}.</p>"


TABLES["bias"] = bias_html
TABLES["position"] = position_html


def judge_methods_html(note: JudgeMethodsNote) -> str:
    """The judge's methods in one line, where none of them ran (`plan.judge_methods_note`)."""
    return (f"<section class='method notrun' id='m-{esc(note.at)}'><p><strong>"
            f"{esc(note.titles[:1].upper() + note.titles[1:])}</strong>: not run: "
            f"{esc(note.reason)}</p></section>")


def figure_html(plan: FigurePlan, svg: str, number: int) -> str:
    inline = inline_svg(svg, plan.alt)
    return (f"<figure id='fig-{esc(plan.key)}'>{inline}<figcaption>Figure {number}. "
            f"{esc(plan.title)}: {esc(plan.legend)}.</figcaption></figure>")


def method_html(section: Mapping[str, Any], figure: str, ids: set[str],
                card: Mapping[str, Any]) -> str:
    key = section["key"]
    note = judge_methods_note(card["methods"])
    if note is not None and note.covers(key):  # a metric's card: one line for them
        return judge_methods_html(note) if key == note.at else ""
    paper = f" (paper {section['paper']})" if section.get("paper") else ""
    head = f"<h3>{esc(section['title'].capitalize())}{esc(paper)}</h3>"
    if section["status"] != "run":
        return (f"<section class='method notrun' id='m-{esc(key)}'><p><strong>"
                f"{esc(section['title'].capitalize())}{esc(paper)}</strong>: "
                f"{esc(section['status'])}: {esc(section['reason'])}</p></section>")
    ids.add(f"m-{key}")
    stamp = (f"<p class='stamp'>Untrusted: the sanity gate failed "
             f"({esc(gate_failures(card['gate']))})</p>"
             if section.get("trusted") is False else "")
    left_out = "".join(f"<li>{esc(item['line'])}</li>" for item in section.get("left_out") or [])
    body = TABLES[key](section, ids)
    layout = (f"{figure}{body}" if key == "blindspot" or not figure
              else f"<div class='grid2'>{figure}<div>{body}</div></div>")
    klass = "method untrusted" if not card["gate"]["trusted"] else "method"
    return (f"<section class='{klass}' id='m-{esc(key)}'>{head}{stamp}"
            f"<p class='summary'>{esc(section.get('summary') or '')}</p>"
            + (f"<ul class='left-out'>{left_out}</ul>" if left_out else "")
            + (f"<p class='design'>{esc(design)}</p>" if (design := design_line(section))
               else "")
            + f"{layout}</section>")


def header_html(card: Mapping[str, Any]) -> str:
    evaluator, data, budget, cost = card["evaluator"], card["data"], card["budget"], card["cost"]
    signature = evaluator.get("signature") or {}
    versions = ", ".join(f"{k} {v}" for k, v in (signature.get("versions") or {}).items())
    tasks = ", ".join(f"{task} {n}" for task, n in data["tasks"].items())
    facts = [("signature", Raw(f"<code>{esc(evaluator['short_signature'])}</code>"
                               + (f" ({esc(versions)})" if versions else ""))),
             ("data", Raw(f"{esc(data['source'])}: {esc(count_text(data))} ({esc(tasks)}); "
                          f"sha256 <code>{esc(data['sha256'])}</code>")),
             ("budget", f"{budget['name']}: {budget['description']}"),
             ("cost", cost_text(cost))]
    rows = "".join(f"<dt>{esc(name)}</dt><dd>{value.html if isinstance(value, Raw) else esc(value)}"
                   "</dd>" for name, value in facts)
    return (f"<header><h1>Evaluator card: {esc(evaluator['label'])}</h1>"
            f"<p class='sig'>spec <code>{esc(evaluator['spec'])}</code> · evalstress "
            f"{esc(card['evalstress'])} · {esc(card['created'])}</p>"
            f"<dl class='facts'>{rows}</dl></header>")


def render_card_html(card: Mapping[str, Any],
                     figures: Sequence[tuple[FigurePlan, str]] = ()) -> str:
    """card.html for card.json's data and its drawn figures (`figures.card_figures`)."""
    gate = card["gate"]
    verdict = {"pass": "passed", "warn": "passed with a warning", "fail": "FAILED"}[
        gate["verdict"]]
    banner = ""
    if not gate["trusted"]:
        reasons = "".join(f"<li>{esc(r)}</li>" for r in gate.get("reasons") or [])
        banner = ("<div class='banner' role='alert'><strong>Degenerate or missing scores: the "
                  "sanity gate failed.</strong> Nothing on this card says anything about this "
                  "evaluator's judgement; every statistic below is greyed and kept only to "
                  f"show what was measured.<ul>{reasons}</ul></div>")
    drawn = {plan.key: figure_html(plan, svg, number)
             for number, (plan, svg) in enumerate(figures, 1)}
    ids: set[str] = {f"fig-{key}" for key in drawn}
    methods = "".join(method_html(section, drawn.get(key, ""), ids, card)
                      for key, section in card["methods"].items())
    reasons = "".join(f"<li>{esc(r)}</li>" for r in gate.get("reasons") or []) \
        if gate["trusted"] else ""
    gate_class = "gate" if gate["trusted"] else "gate untrusted"
    newpage = " class='newpage'" if len(card["findings"]) >= NEWPAGE_FINDINGS else ""
    toc = "".join(f"<a href='#{target}'>{esc(words)}</a>" for target, words in (
        ("gate", "sanity gate"), ("findings", "findings"), ("methods", "methods")))
    title = f"Evaluator card: {card['evaluator']['label']}"
    runs = ", ".join(f"<code>{esc(s['run_dir'])}</code>" for s in card["methods"].values()
                     if s.get("run_dir") and s.get("status") == "run") or "none"
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            f"<title>{esc(title)}</title><style>{CARD_CSS}</style></head><body><main>"
            f"{header_html(card)}<nav class='toc' aria-label='sections'>{toc}</nav>{banner}"
            f"{identity_html(card['evaluator'])}"
            f"<section id='gate' class='{gate_class}'><h2>Sanity gate: <span class='verdict "
            f"verdict-{esc(gate['verdict'])}'>{esc(verdict)}</span></h2>"
            + (f"<ul>{reasons}</ul>" if reasons else "") + gate_html(gate) + "</section>"
            f"<section id='findings'><h2>Findings</h2>{findings_html(card, ids)}</section>"
            f"<section id='methods'{newpage}><h2>Methods</h2>{methods}</section>"
            f"<footer>card.json holds every number on this page and the full tables; the "
            f"methods' run directories ({runs}) hold the texts and scores they come from."
            "</footer>"
            "</main></body></html>")
