"""The report's section for the adversarial search (paper 004; results.json `adversarial` in
docs/results.schema.json): the ASR table over the examples each method could attack and over all
it was given, how each victim's scores were put on 0-100 (with a warning where the scale came
from the attacked examples), the stop rule that chose each method's texts, what was lost, and
the successful attacks."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from evalstress.report.common import Raw, esc, label_html, num, table
from evalstress.report.renderers import SectionContext, report_section

MAX_ATTACKS_SHOWN = 60

#: What each stop rule means, for the reader of the report.
STOP_RULES = {
    "first-success": "stops at the first text meeting eq. 3 and returns it",
    "highest-feedback": "paper 004: stops when S passes the threshold or the iterations run "
                        "out, returns the highest S and judges that text",
    "final-text": "a greedy baseline: returns the text it ended on",
}
#: How a scale was chosen, for the reader of the report.
SCALE_HOW = {
    "given": "given with --range",
    "declared": "the evaluator's declared range",
    "reference": "percentiles of a reference set",
    "min-max": "min-max over the attacked originals (data-dependent)",
    "paper-code": "paper 004's code's rule (--protocol paper)",
}


def word_diff(original: str, text: str) -> str:
    """Both texts' words with deletions and insertions marked (<del>, <ins>); escaped."""
    a, b = original.split(), text.split()
    out = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.append(esc(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{esc(' '.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{esc(' '.join(b[j1:j2]))}</ins>")
    return " ".join(out)


def ci_bar01(value: Any, low: Any, high: Any) -> str:
    """A tiny interval on [0, 1]: the CI as a bar, the value as a tick."""
    if value is None:
        return ""

    def x(v: float) -> float:
        return 2 + 76 * max(0.0, min(1.0, float(v)))

    bar = (f"<rect x='{x(low):.1f}' y='3' width='{max(1.0, x(high) - x(low)):.1f}' height='6' "
           "fill='#9ec5fe'/>" if low is not None and high is not None else "")
    return (f"<svg class='ci' width='80' height='12' aria-hidden='true'>{bar}<rect "
            f"x='{x(value) - 1:.1f}' y='1' width='2' height='10' fill='#0969da'/></svg>")


def _asr(value: Any, low: Any, high: Any) -> Raw:
    return Raw(f"{num(value, 2)} <span class='note'>[{num(low, 2)}, {num(high, 2)}]</span> "
               f"{ci_bar01(value, low, high)}")


def _asr_table(data: Mapping[str, Any], short: Mapping[str, str]) -> str:
    rows = []
    for r in data.get("asr") or []:
        given = r.get("attempts_all", r.get("attempts"))
        rows.append([label_html(str(r["victim"]), short), r.get("direction"), r.get("method"),
                     r.get("attempts"), r.get("successes"),
                     _asr(r.get("asr"), r.get("ci_low"), r.get("ci_high")),
                     given, _asr(r.get("asr_all"), r.get("ci_low_all"), r.get("ci_high_all"))
                     if r.get("not_run") else Raw("<span class='note'>same</span>"),
                     r.get("queries_per_success"), r.get("mean_queries")])
    return table(["victim", "direction", "method", "attacked", "successes",
                  "ASR [95% CI] of attacked", "given", "ASR [95% CI] of all given",
                  "queries / success", "mean queries"], rows, left=3,
                 caption="direction good: gold high, victim low; bad: gold low, victim high. "
                         "Attacked: the examples a method could attack (a rule that does not "
                         "apply, or an original the gold could not score, is left out); all "
                         "given: those count as failures. Wilson 95% intervals. Scores on "
                         "0-100.")


def _scales(data: Mapping[str, Any], short: Mapping[str, str]) -> str:
    """Each victim's (and gold member's) 0-100 scale, and a warning for data-dependent ones."""
    members = [("victim", v) for v in data.get("victims") or []] + \
              [("gold", g) for g in data.get("gold") or []]
    if not members:
        return ""
    rows, fitted = [], []
    for role, member in members:
        scale = member.get("scale") or {}
        how = str(scale.get("how", ""))
        if scale.get("data_dependent") or how == "min-max":
            fitted.append(str(member.get("label")))
        source = scale.get("reference") or {}
        where = (f"{source.get('file')} (percentiles {source.get('percentiles')}, "
                 f"{source.get('scored')} scores)" if source else
                 f"{scale.get('originals')} originals" if how == "min-max" else
                 str(scale.get("rule", "")))
        rows.append([label_html(str(member.get("label")), short), role,
                     SCALE_HOW.get(how, how), num(scale.get("low")), num(scale.get("high")),
                     "higher" if scale.get("higher_is_better", True) else "lower (flipped)",
                     where, member.get("reference_mode", ""), member.get("clipped", 0)])
    parts = []
    if fitted:
        parts.append(f"<p class='banner data-dependent'><b>Data-dependent scale for "
                     f"{esc(', '.join(fitted))}</b>: their 0-100 scores come from the minimum "
                     "and maximum of the attacked originals, so their ASR changes with the "
                     "examples attacked. Give --range NAME=LO:HI or --scale-reference "
                     "[NAME=]FILE for a fixed scale.</p>")
    parts.append(table(["evaluator", "role", "scale", "raw low (0)", "raw high (100)",
                        "better", "from", "reference", "clipped"], rows, left=3,
                       caption="how each score was put on 0-100; reference: what "
                               "reference-based victims compared with"))
    return "".join(parts)


def _stop_rules(data: Mapping[str, Any]) -> str:
    rules = data.get("stop_rules") or {}
    if not rules:
        return ""
    items = "".join(
        f"<li><b>{esc(method)}</b>: " + "; ".join(
            f"{esc(rule)} ({esc(STOP_RULES.get(str(rule), ''))})" for rule in chosen) + "</li>"
        for method, chosen in rules.items())
    protocol = data.get("protocol")
    head = f"Protocol <b>{esc(protocol)}</b>. " if protocol else ""
    return f"<p class='stop-rules'>{head}Which text each method returned:</p><ul>{items}</ul>"


@report_section("adversarial")
def adversarial(data: Mapping[str, Any], context: SectionContext) -> str:
    short = context.short
    parts = []
    params = data.get("params") or {}
    if params:
        # a parameter left unset (a budget sized per search) says so in words, not "None"
        parts.append("<p class='note'>" + " · ".join(
            f"{esc(k)} = {esc('not set' if v is None else v)}" for k, v in params.items())
            + "</p>")
    parts.append(_asr_table(data, short))
    parts.append(_stop_rules(data))
    parts.append(_scales(data, short))
    parts.append(_attack_losses(data))
    parts.append(_successes(data.get("successes") or [], short))
    return "".join(parts)


def _successes(successes: Sequence[Mapping[str, Any]], short: Mapping[str, str]) -> str:
    if not successes:
        return ""
    shown = successes[:MAX_ATTACKS_SHOWN]
    parts = [f"<h3>Successful attacks ({len(shown)} of {len(successes)} shown)</h3>"]
    for s in shown:
        parts.append(
            "<div class='attack'><p class='small'>"
            f"{label_html(str(s.get('victim')), short).html} · {esc(s.get('direction'))} · "
            f"{esc(s.get('method'))} · example <code>{esc(s.get('example_id'))}</code> · "
            f"gold {num(s.get('gold_original'), 1)} → <b>{num(s.get('gold'), 1)}</b> · "
            f"victim {num(s.get('victim_original'), 1)} → "
            f"<b>{num(s.get('victim_score'), 1)}</b> · {num(s.get('queries'))} queries</p>"
            f"<p class='diff'>{word_diff(str(s.get('original', '')), str(s.get('text', '')))}"
            "</p></div>")
    return "".join(parts)


def _attack_losses(data: Mapping[str, Any]) -> str:
    """Scores that came back missing (a failing gold makes every ASR 0, which reads as a robust
    victim) and candidates each method rejected, so neither is hidden behind the table."""
    parts = []
    missing = {str(k): int(v) for k, v in (data.get("missing") or {}).items()}
    if missing:
        listed = "; ".join(f"{esc(reason)} × {count}" for reason, count in
                           sorted(missing.items(), key=lambda kv: (-kv[1], kv[0])))
        parts.append(f"<p class='banner missing-scores'><b>{sum(missing.values())} scores came back "
                     f"missing</b> and were left out of the search: {listed}</p>")
    rejections = data.get("rejections") or {}
    rows = [[method, ", ".join(f"{reason}: {count}" for reason, count in
                               sorted(counts.items(), key=lambda kv: -int(kv[1])))]
            for method, counts in sorted(rejections.items()) if counts]
    if rows:
        parts.append(table(["method", "candidates rejected"], rows, left=2,
                           caption="candidates left out of each method's search, by reason"))
    return "".join(parts)
