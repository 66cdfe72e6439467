"""card.md: the card as GitHub renders it, drawn from card.json's data alone.

Order: the evaluator and its signature; the sanity gate (first, since it says whether the rest
means anything); data, budget and cost; the findings with their evidence (links into the run
directories, relative to the card's folder) and a before/after example each; a table of the
methods; a section per method; and the figures, SVG files beside card.md (figures/*.svg)
that card.html draws inline.

Every text that is not ours (the data's ids and texts, evaluator labels and specs, perturbation
and aspect names, error messages) goes through `text`, `code` or `link`: what GitHub or
Python-Markdown (mkdocs) would read as HTML or as Markdown structure is written as a character
reference, so the reader sees the text as it is and a `<script>` in the data stays words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote as url_quote

from evalstress.analyses.blindspot_stats import outcome_text
from evalstress.analyses.verdicts import MDE_RULE
from evalstress.card import agreement
from evalstress.card import consistency_view as view
from evalstress.card.figures import FigurePlan, figure_plans
from evalstress.card.findings import can_reach, ceiling
from evalstress.card.model import cost_text, count_text
from evalstress.card.plan import judge_methods_note
from evalstress.card.sequential import design_line
from evalstress.core.consoles import visible_controls

#: characters of a text shown in an example (the run directory holds the whole text)
TEXT_CHARS = 600
#: rows of a long table shown before "and N more"
MAX_ROWS = 40


#: characters that start HTML or Markdown structure anywhere in a line, as the character
#: references GitHub, Python-Markdown and a raw HTML block (the examples' <details>) all show
#: as the character itself
_SIGNIFICANT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "&#92;",
                              "`": "&#96;", "*": "&#42;", "[": "&#91;", "]": "&#93;",
                              "|": "&#124;", "#": "&#35;", "~": "&#126;"})
#: an underscore that could open or close emphasis (one inside a word cannot)
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
#: what makes a line a list item ("- ", "+ ", "1. "), a heading underline or a rule ("===",
#: "---") or an admonition ("!!! note") at its start; "-0.5" and "83.4%" are none of these
_LINE_MARK = re.compile(r"^(\s*)(?:([-+=!])(?=\s|$|[-=\s]*$|!!)|(\d{1,9})([.)])(?=\s|$))")
#: the line breaks of Markdown, of Python's str.splitlines, and Unicode's
_LINE_BREAK = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
#: indentation, which would make a quoted line a code block (showing references as typed)
_INDENT = re.compile(r"^[ \t]+")


def _kept_indent(match: re.Match[str]) -> str:
    return match[0].replace("\t", "    ").replace(" ", "\u00a0")  # no-break spaces indent nothing


def _reference(char: str) -> str:
    return f"&#{ord(char)};"


def _line_mark(match: re.Match[str]) -> str:
    space, mark, digits, dot = match.groups()
    return space + (_reference(mark) if mark else digits + _reference(dot))


def text(value: Any) -> str:
    """A text that is not ours as Markdown that shows it as it is, on one line: HTML and
    Markdown syntax written as character references, control characters as escapes (`\\x1b`),
    line breaks as spaces, indentation as no-break spaces."""
    flat = _INDENT.sub(_kept_indent, visible_controls(_LINE_BREAK.sub(" ", str(value))))
    escaped = _EMPHASIS_UNDERSCORE.sub("&#95;", flat.translate(_SIGNIFICANT))
    return _LINE_MARK.sub(_line_mark, escaped, count=1)


def code(value: Any) -> str:
    """A text that is not ours as a code span (shown as is by every Markdown reader): on one
    line, fenced with one backtick more than its longest run of them."""
    flat = visible_controls(_LINE_BREAK.sub(" ", str(value)))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def value_text(value: Any) -> str:
    """A value as a table shows it: numbers to 3 significant digits, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "0" if abs(value) < 1e-9 else f"{value:.3g}"  # float noise and -0.0 read as 0
    return str(value)


def cell(value: Any) -> str:
    """A table cell: `value_text`, escaped as `text` escapes (pipes included)."""
    return text(value_text(value))


def pct(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "–"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def ci(low: float | None, high: float | None, percent: bool = True,
       signed: bool = True) -> str:
    if low is None or high is None:
        return "–"
    if percent:
        return f"{pct(low, signed)} to {pct(high, signed)}"
    return f"{low:.3g} to {high:.3g}"


def interval_text(interval: Mapping[str, Any]) -> str:
    """A finding's interval as its unit reads: a share or a rate in percent, else as is."""
    unit = interval.get("unit", "score")
    return ci(interval["low"], interval["high"], percent=unit in ("share", "rate"),
              signed=unit == "share")


def level_text(interval: Mapping[str, Any]) -> str:
    """'95% CI', or the level a corrected interval was printed at ('96.5% CI')."""
    level = float(interval.get("level", 0.95))
    return "95% CI" if abs(level - 0.95) < 1e-9 else f"{level:.1%} CI"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for row in rows[:MAX_ROWS]:
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    if len(rows) > MAX_ROWS:
        lines.append(f"\n*… and {len(rows) - MAX_ROWS} more rows in card.json*")
    return [*lines, ""]


def link(path: str | None, shown: str | None = None) -> str:
    """A link to a file of the card's folder: its text escaped, its path URL-quoted."""
    return "–" if not path else f"[{text(shown or path)}]({url_quote(path)})"


def quote(said: str) -> str:
    """A text of the data as a block quote, line by line, each escaped as `text` does."""
    shown = said if len(said) <= TEXT_CHARS else said[:TEXT_CHARS] + " …"
    return "\n".join("> " + text(line) if line else ">"
                     for line in _LINE_BREAK.split(shown) or [""])


def example_block(example: Mapping[str, Any] | None) -> list[str]:
    if not example:
        return []
    where = text(", ".join(str(v) for v in (example.get("perturbation"),
                                            example.get("severity")) if v not in (None, "")))
    label = f" \u2014 {text(str(example['label']))}" if example.get("label") else ""
    lines = [f"<details><summary>Example {cell(example.get('example_id'))} ({where}{label}): "
             f"{cell(example.get('original_score'))} → {cell(example.get('variant_score'))}"
             "</summary>", "", f"Original (score {cell(example.get('original_score'))}):", "",
             quote(str(example.get("original", ""))), "",
             f"Variant (score {cell(example.get('variant_score'))}):", "",
             quote(str(example.get("variant", ""))), ""]
    files = example.get("files") or []
    if files:
        lines += ["From " + ", ".join(link(f) for f in files), ""]
    return [*lines, "</details>", ""]


@dataclass(frozen=True)
class GateCheck:
    """One row of the sanity gate's table: `state` (pass, warn or fail) is the badge card.html
    shows, `word` what card.md says."""

    check: str
    aspect: str
    measured: str
    state: str
    word: str


def gate_checks(gate: Mapping[str, Any], value: Callable[[Any], str]) -> list[GateCheck]:
    """The gate's checks as card.md and card.html show them; `value` writes a score."""
    rows = []
    for spread in gate.get("spread") or []:
        covered = spread.get("range_share")
        rows.append(GateCheck(
            "spread", spread["aspect"],
            f"commonest value {value(spread['modal_value'])} on "
            f"{pct(spread['modal_share'], False)} of {spread['scored']} scores"
            + (f"; scores span {pct(covered, False)} of the declared range"
               if covered is not None else ""),
            "fail" if spread["degenerate"] else "pass",
            "degenerate" if spread["degenerate"] else "varies"))
    ranking = gate.get("ranking")
    if ranking:
        rows.append(GateCheck(
            "ranking", "all",
            f"original above its heaviest damage in {ranking['above']} of "
            f"{ranking['pairs']} pairs ({pct(ranking['share'], False)}; 95% CI "
            f"{ci(ranking['ci_low'], ranking['ci_high'], signed=False)}"
            + (f", resampling {ranking['n']} examples" if ranking.get("n") is not None
               else "") + ")",
            ranking["verdict"], ranking["verdict"]))
    missing = gate["missing"]
    rows.append(GateCheck(
        "missing", "all", f"{missing['missing']} of {missing['rows']} scores "
        f"({pct(missing['share'], False)})"
        + (f"; most often: {missing['top_reason']}" if missing["top_reason"] else ""),
        "fail" if missing["mostly_missing"] else "pass",
        "mostly missing" if missing["mostly_missing"] else "ok"))
    return rows


def gate_lines(gate: Mapping[str, Any]) -> list[str]:
    verdict = gate["verdict"]
    head = {"pass": "passed", "warn": "passed with a warning",
            "fail": "FAILED: the statistics below say nothing about this evaluator's judgement"}
    lines = [f"> **Sanity gate {head[verdict]}.**"]
    for reason in gate.get("reasons") or []:
        lines.append(f"> - {text(reason)}")
    lines.append("")
    rows = [[c.check, c.aspect, c.measured, c.word] for c in gate_checks(gate, value_text)]
    return lines + table(["check", "aspect", "measured", "verdict"], rows)


def finding_lines(findings: Sequence[Mapping[str, Any]], gate: Mapping[str, Any],
                  card: Mapping[str, Any] | None = None) -> list[str]:
    """The findings, after the line that says they are preliminary (a small budget) and the
    rule that chose their examples."""
    lines = ["## Findings", ""]
    if card and card.get("preliminary"):
        lines += [f"**Preliminary:** {text(str(card.get('preliminary_reason') or ''))}.", ""]
    if findings and card and card.get("evidence_rule"):
        lines += [f"*Examples:* {text(str(card['evidence_rule']))}.", ""]
    if not findings:
        lines.append("No findings: the sanity gate does not trust this evaluator's scores, so "
                     "nothing below is stated as a property of the evaluator."
                     if not gate["trusted"] else "No finding stood out in the methods that ran.")
        return [*lines, ""]
    for number, finding in enumerate(findings, 1):
        interval = finding["interval"]
        lines += [f"{number}. **{text(finding['text'])}**", "",
                  f"   *{text(finding['kind'])}*, from the {text(finding['method'])} section; "
                  f"{text(interval['what'])}: {level_text(interval)} {interval_text(interval)}."
                  f" Evidence: " + ", ".join(link(e) for e in finding.get("evidence") or []),
                  ""]
        shown = [*example_block(finding.get("example")), *example_block(finding.get("extreme"))]
        lines += ["   " + line if line else "" for line in "\n".join(shown).split("\n")]
    return lines


def blindspot_lines(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for row in results.get("rows") or []:
        top = max(row["severities"], key=lambda s: s["severity_rank"]) if row["severities"] \
            else {}
        rows.append([row["perturbation"], row["aspect"], row["verdict"], row["rank_pass"],
                     row["monotonic_pass"], row.get("rank_strict_pass"), outcome_text(row),
                     top.get("severity"), pct(top.get("relative_change")),
                     ci(top.get("relative_ci_low"), top.get("relative_ci_high")),
                     detectable(top.get("test") or {})])
    return [*table(["perturbation", "aspect", "verdict", "rank", "monotonic",
                    "rank (paper, strict)", "from intervals", "top severity",
                    "drop (share of score)", "95% CI", "smallest detectable change"], rows),
            f"Smallest detectable change: {text(MDE_RULE)}.", ""]


def detectable(test: Mapping[str, Any]) -> str:
    """'2.31 (n 57)': the smallest change a test could detect at its n, in the score's units
    (its mde: told apart from no change with 80% power at the corrected level)."""
    mde = test.get("mde")
    return "\u2014" if mde is None else f"{mde:.3g} (n {test.get('n')})"


def discernment_lines(results: Mapping[str, Any]) -> list[str]:
    summaries = results.get("summaries") or []
    lines = table(["task", "group", "D_avg", "D_min", "weakest unit", "too few examples"],
                  [[s["task"], s["group"], s["d_avg"], s["d_min"], s.get("d_min_at"),
                    s.get("n_too_few")] for s in summaries])
    if any("n_too_few" in s for s in summaries):
        lines += ["D_avg and D_min leave out the units of too few examples (their n cannot "
                  "reach D = 1).", ""]
    threshold = float(results.get("threshold") or 1.0)
    units = [[u["task"], u["perturbation"], u["severity"], u["level"], u.get("aspect"),
              u.get("n"), u["d"],
              ceiling(u) if can_reach(u, threshold) else f"{ceiling(u):.2f}: too few examples",
              pct(u.get("relative_change")), ci(u.get("relative_ci_low"),
                                                u.get("relative_ci_high"))]
             for u in results.get("units") or []]
    return lines + table(["task", "perturbation", "severity", "level", "aspect", "n", "D",
                          "max D for n", "drop", "95% CI"], units)


def matrix_lines(matrix: Mapping[str, Any]) -> list[str]:
    """Intended (rows: each attack at its heaviest severity) against affected aspects
    (columns): what each aspect should do, the verdict, and the effect r."""
    affected = list(matrix.get("affected") or [])
    if not affected:
        return []
    cells = {(c["perturbation"], c["affected"]): c for c in matrix.get("cells") or []}
    rows = []
    for attack in matrix.get("attacks") or []:
        some: Mapping[str, Any] = next((c for c in cells.values() if c["perturbation"] == attack), {})
        line: list[Any] = [f"{attack} @{some.get('severity')}", some.get("intended")]
        for aspect in affected:
            cell_ = cells.get((attack, aspect))
            if cell_ is None:
                line.append(None)
                continue
            verdict = {True: "pass", False: "FAIL"}.get(cell_.get("passed"), "–")
            effect = cell_.get("rank_biserial")
            line.append(f"{cell_.get('expected') or 'no test'}: {verdict}"
                        + (f", r {effect:+.2f}" if effect is not None else ""))
        rows.append(line)
    return ["Intended against affected aspects (each attack at its heaviest severity; r: "
            "rank-biserial effect of the drop, +1 when every example dropped):", "",
            *table(["attack", "intended", *affected], rows)]


def criteria_lines(results: Mapping[str, Any]) -> list[str]:
    if results.get("mode") == "confusion":
        items = results["confusion"]["items"]
        return [*matrix_lines(results["confusion"].get("matrix") or {}),
                "Every test: each attack is aimed at one aspect (intended); each row is one of "
                "the evaluator's aspects (affected) and whether it moved as it should.", "",
                *table(["attack", "severity", "intended", "affected", "expected", "change",
                        "95% CI", "r", "verdict"],
                       [[i["perturbation"], i["severity"], i.get("intended"),
                         f"{i['aspect']} ({i['quality_aspect']})",
                         {"directional": "move", "invariance": "stay"}.get(i["test"], "–"),
                         i.get("change"), ci(i.get("ci_low"), i.get("ci_high"), False),
                         i.get("rank_biserial"),
                         {True: "pass", False: "fail"}.get(i.get("passed"), "–")]
                        for i in items])]
    profile = results["sensitivity"]
    rows = [[a["aspect"], a["quality_aspect"], ", ".join(a["perturbations"]) or "not probed",
             pct(a.get("relative_change")), ci(a.get("relative_ci_low"),
                                               a.get("relative_ci_high")),
             a.get("rank_biserial"), detectable(a)] for a in profile["aspects"]
            if a["probed"]]
    unprobed = sorted({a["quality_aspect"] for a in profile["aspects"] if not a["probed"]})
    return ["Sensitivity profile: how much the score drops when the attacks aimed at each "
            "quality aspect damage the text (heaviest severity, share of the score: a ratio "
            "of means bootstrapped over examples).", "",
            *table(["aspect", "quality aspect", "attacks", "drop", "95% CI", "r",
                    "smallest detectable change"], rows),
            f"Not probed by this suite: {text(', '.join(unprobed))}." if unprobed else "", ""]


def adversarial_lines(results: Mapping[str, Any]) -> list[str]:
    rows = [[r["victim"], r["direction"], r["method"], r["attempts"], r["successes"],
             pct(r.get("asr"), False), ci(r.get("ci_low"), r.get("ci_high"), signed=False)]
            for r in results.get("asr") or []]
    return table(["victim", "direction", "method", "attempts", "successes", "ASR", "95% CI"],
                 rows) + example_block(results.get("example"))


def correlation_lines(results: Mapping[str, Any]) -> list[str]:
    rows = [[r["aspect"], r["human"], r["level"], r["method"], r["value"],
             ci(r.get("ci_low"), r.get("ci_high"), False), r["n"]]
            for r in results.get("rows") or []]
    return (table(["aspect", "human", "level", "method", "value", "95% CI", "n"], rows)
            if rows else []) + agreement_lines(results.get("agreement"))


def agreement_lines(block: Mapping[str, Any] | None) -> list[str]:
    """The agreement block under the correlations: tau-b and alpha with their 95% and
    Holm-corrected intervals, the raters among themselves, the derived pairs."""
    if not block:
        return []
    lines = ["", "**Agreement with the human raters**", "",
             *table(agreement.HEADERS, agreement.table_rows(block))] if block.get("rows") else []
    if agreement.human_rows(block):
        lines += ["", "Among the human raters:", "",
                  *table(agreement.HUMAN_HEADERS, agreement.human_rows(block))]
    if agreement.pair_rows(block):
        lines += ["", "Pairs of outputs the humans order:", "",
                  *table(agreement.PAIR_HEADERS, agreement.pair_rows(block))]
    if agreement.preference_rows(block):
        lines += ["", "**Agreement with the human preferences** (pairs of outputs, the one "
                  "people preferred)", "",
                  *table(agreement.PREFERENCE_HEADERS, agreement.preference_rows(block))]
    if agreement.rater_rows(block):
        lines += ["", "The raters' votes among themselves:", "",
                  *table(agreement.RATER_HEADERS, agreement.rater_rows(block))]
    return [*lines, "", *(f"- {text(note)}" for note in agreement.notes(block)), ""]


#: the bias table's columns (card.md and card.html)
BIAS_HEAD = ["probe", "arm", "aspect", "effect above placebo", "CI", "probe move",
             "placebo move", "n", "verdict"]


def bias_cells(row: Mapping[str, Any]) -> list[Any]:
    """One bias test as the card's table shows it; the CI at the corrected level."""
    level = f" ({float(row.get('level') or 0.95):.1%})"
    return [row["probe"], row["arm"], row["aspect"], row.get("effect"),
            ci(row.get("low"), row.get("high"), False) + level, row.get("probe_shift"),
            row.get("placebo_shift"), row["n"], row["verdict"]]


def bias_lines(results: Mapping[str, Any]) -> list[str]:
    """The bias probes: each arm's effect above its placebo, then how it was tested."""
    rows = [bias_cells(r) for r in results.get("rows") or []]
    how = (f"Effect: {results.get('effect')}. Interval: {results.get('interval')}, "
           f"{results.get('correction')} over {results.get('n_tests')} tests (alpha "
           f"{results.get('alpha')}, each at {results.get('alpha_eff')}).")
    return [*table(BIAS_HEAD, rows), text(how), ""]


def consistency_lines(results: Mapping[str, Any]) -> list[str]:
    """Repeats, rewording shifts and the blind-spot verdicts that change between wordings."""
    lines = ["Repeats of one request:", "", *table(view.REPEAT_HEAD, view.repeat_rows(results)),
             "Criteria reworded (shift = reworded minus as written):", "",
             *table(view.SHIFT_HEAD, view.shift_rows(results)), text(view.verdict_line(results)),
             ""]
    changes = view.change_rows(results)
    lines += table(view.CHANGE_HEAD, changes) if changes else []
    return lines + [f"*{text(note)}*" for note in results.get("notes") or []] + [""]


def identity_lines(evaluator: Mapping[str, Any]) -> list[str]:
    """The judge's identity and the warnings on its model family; [] for other evaluators."""
    lines = [f"> **Warning:** {text(w)}" for w in view.identity_warnings(evaluator)]
    lines += [""] if lines else []
    facts = view.identity_facts(evaluator)
    return lines + (["## Judge identity", "", *table(["", ""], facts)] if facts else [])


SECTION_LINES = {"blindspot": blindspot_lines, "discernment": discernment_lines,
                 "criteria": criteria_lines, "adversarial": adversarial_lines,
                 "correlation": correlation_lines, "consistency": consistency_lines}


#: the position table's columns (card.md and card.html)
POSITION_HEAD = ["pairs", "swap flip rate", "re-ask flip rate", "difference", "CI",
                 "McNemar p", "first-position wins", "95% CI", "verdict"]


def position_cells(row: Mapping[str, Any]) -> list[Any]:
    """The position test as the card's table shows it."""
    return [row.get("pairs"), pct(row.get("swap_flip_rate"), False),
            pct(row.get("reask_flip_rate"), False), pct(row.get("effect")),
            ci(row.get("low"), row.get("high")) + f" ({float(row.get('level') or 0.95):.1%})",
            row.get("mcnemar_p"), pct(row.get("first_win_share"), False),
            ci(row.get("first_win_low"), row.get("first_win_high"), signed=False),
            row.get("verdict")]


def position_lines(results: Mapping[str, Any]) -> list[str]:
    """The position test of a pairwise judge, and how its pairs were made."""
    if results.get("pairs") is None:
        return []
    return [*table(POSITION_HEAD, [position_cells(results)]),
            text(f"Pairs: {results.get('pairs_rule', '')}."), ""]


SECTION_LINES["bias"] = bias_lines
SECTION_LINES["position"] = position_lines


def section_lines(section: Mapping[str, Any]) -> list[str]:
    paper = f" (paper {text(section['paper'])})" if section.get("paper") else ""
    lines = [f"### {text(section['title'].capitalize())}{paper}", ""]
    if section["status"] != "run":
        return [*lines, f"**{text(section['status'].capitalize())}:** "
                        f"{text(section['reason'])}", ""]
    if section.get("trusted") is False:
        lines += [f"*Untrusted: {text(section['trust_note'])}*", ""]
    files = section.get("files") or {}
    lines += [text(section.get("summary") or ""), ""]
    left_out = [f"- {text(item['line'])}" for item in section.get("left_out") or []]
    lines += [*left_out, ""] if left_out else []
    design = design_line(section)
    lines += [f"*{text(design)}*", ""] if design else []
    lines += ["Run directory: " + link(section.get("run_dir")) + " (" + ", ".join(
                  link(path, name) for name, path in files.items()) + ")", ""]
    return lines + SECTION_LINES[section["key"]](section.get("results") or {})


def render_markdown(card: Mapping[str, Any]) -> str:
    """card.md from card.json's data."""
    evaluator, data, budget, cost = card["evaluator"], card["data"], card["budget"], card["cost"]
    lines = [f"# Evaluator card: {text(evaluator['label'])}", "",
             f"{code(evaluator['short_signature'])} · spec {code(evaluator['spec'])} · "
             f"evalstress {text(card['evalstress'])} · {text(card['created'])}", "",
             *gate_lines(card["gate"])]
    tasks = ", ".join(f"{task} {n}" for task, n in data["tasks"].items())
    lines += table(["", ""], [
        ["data", f"{data['source']}: {count_text(data)} ({tasks}); sha256 {data['sha256'][:16]}…"],
        ["budget", f"{budget['name']}: {budget['description']}"],
        ["cost", cost_text(cost)]])
    lines += identity_lines(evaluator)
    lines += finding_lines(card["findings"], card["gate"], card)
    methods = card["methods"]
    lines += ["## Methods", "", *table(
        ["method", "paper", "status", "summary or reason"],
        [[m["title"], m.get("paper"), m["status"],
          m["summary"] if m["status"] == "run" else m["reason"]] for m in methods.values()])]
    note = judge_methods_note(methods)
    for key, section in methods.items():
        if note is None or not note.covers(key):
            lines += section_lines(section)
        elif key == note.at:
            lines += [f"### {text(note.titles[:1].upper() + note.titles[1:])}", "",
                      f"**Not run:** {text(note.reason)}", ""]
    lines += figure_lines(figure_plans(card))
    return "\n".join(lines).rstrip() + "\n"


def figure_lines(plans: Sequence[FigurePlan]) -> list[str]:
    """The figures as images beside card.md (figures/*.svg), each with its title as alt text
    and, as its caption, the text alternative that says what it finds; card.html draws the
    same SVG inline."""
    lines = ["## Figures", ""]
    if not plans:
        return [*lines, "No method that ran has a figure.", ""]
    for number, plan in enumerate(plans, 1):
        lines += [f"![{text(plan.title)}]({url_quote(plan.path)})", "",
                  f"*Figure {number}. {text(plan.title)}.* {text(plan.alt)}", ""]
    return lines
