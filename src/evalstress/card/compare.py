"""Several evaluators' cards side by side: one table, the evaluators as columns (one per aspect
of an evaluator that rates several), the tests and findings as rows, as Markdown and as one
self-contained HTML page.

Cards compare only on the same examples under the same budget: a difference in the data's
hash, the budget or the evalstress version is named above the table, never hidden. A column of
a card that failed its sanity gate is marked untrusted (its numbers say nothing about its
judgement). Every cell comes from card.json: verdicts and drops with their 95% intervals,
nothing combined into a score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from evalstress.card.agreement import compare_cells, preference_compare_cells
from evalstress.card.figures import gate_failures
from evalstress.card.html import CSP
from evalstress.card.identity import identity_changes
from evalstress.card.markdown import ci, pct, text
from evalstress.card.model import CARD_JSON, count_text
from evalstress.card.schema import card_problems
from evalstress.card.style import CARD_CSS
from evalstress.core.userfile import DataError, parse_json, read_user_text
from evalstress.core.wording import plural
from evalstress.report.common import esc, scroll_box, table

#: the method groups of the table, in the card's order
GROUPS = {"gate": "sanity gate",
          "findings": "headline findings: what each is about",
          "blindspot": "blind spots (paper 002): verdict, drop at the top severity (95% CI)",
          "discernment": "discernment (paper 003): D of the DHP units",
          "criteria": "criteria response (paper 000): drop at the heaviest severity (95% CI)",
          "adversarial": "adversarial search (paper 004)", "correlation": "human correlation",
          "consistency": "consistency (LLM judges): repeats, reworded criteria",
          "bias": "bias probes: effect above placebo (corrected CI), verdict",
          "position": "position bias: swap flip rate above re-ask (CI), verdict",
          "agreement": "agreement with humans: tau-b (Holm-corrected CI), alpha"}
#: the words of each verdict a cell may carry
MARKS = {"pass": "pass", "fail": "FAIL", "warn": "warn", "inconclusive": "inconclusive",
         "not-applicable": "n/a", "unclear": "unclear"}


def read_card(path: str | Path) -> dict[str, Any]:
    """A card.json (or a card's folder holding one), checked against the card schema; a
    DataError naming the file and what is wrong with it."""
    file = Path(path)
    if file.is_dir():
        file = file / CARD_JSON
    text = read_user_text(file, "a card (card.json)")
    card = parse_json(text, file)
    if not isinstance(card, dict):
        raise DataError(file, None, None, "is not a card: card.json holds one JSON object")
    problems = card_problems(card)
    if problems:
        raise DataError(file, None, None, f"is not a card (docs/card.schema.json): "
                        f"{problems[0]}")
    return card


@dataclass
class Column:
    """One column: a card, and the aspect of its evaluator the column shows."""

    name: str
    card: Mapping[str, Any]
    aspect: str

    @property
    def trusted(self) -> bool:
        return bool(self.card["gate"]["trusted"])


@dataclass
class Row:
    """One test or finding across the columns: a cell each (None: the card has none) and the
    verdict that colours it."""

    group: str
    test: str
    cells: list[str | None]
    verdicts: list[str | None] = field(default_factory=list)


@dataclass
class Source:
    """What one card rests on, shown above the table: its budget and its data (how many
    examples, the start of the data's sha256), so a reader sees what each column measured."""

    name: str
    spec: str
    budget: str
    seeds: int | None
    data: str
    examples: str
    sha256: str

    @classmethod
    def of(cls, name: str, card: Mapping[str, Any]) -> Source:
        data, budget = card["data"], card["budget"]
        return cls(name, card["evaluator"]["spec"], budget["name"], budget.get("seeds"),
                   data["source"], count_text(data), data["sha256"][:12])

    def cells(self) -> list[str]:
        seeds = f", {plural(self.seeds, 'seed')}" if self.seeds is not None else ""
        return [self.name, self.spec, f"{self.budget}{seeds}", self.data, self.examples,
                self.sha256]


#: the header of the table of the compared cards (`Source.cells`)
SOURCE_HEAD = ["card", "evaluator", "budget", "data", "examples", "data sha256"]


@dataclass
class Comparison:
    columns: list[Column]
    rows: list[Row]
    differences: list[str]
    sources: list[Source] = field(default_factory=list)

    def groups(self) -> list[tuple[str, list[Row]]]:
        out: dict[str, list[Row]] = {}
        for row in self.rows:
            out.setdefault(row.group, []).append(row)
        return list(out.items())


def columns_of(cards: Sequence[Mapping[str, Any]], names: Sequence[str] | None) -> list[Column]:
    out = []
    for index, card in enumerate(cards):
        name = names[index] if names else card["evaluator"]["label"]
        aspects = list(card["evaluator"]["aspects"])
        out += [Column(name if len(aspects) == 1 else f"{name} · {aspect}", card, aspect)
                for aspect in aspects]
    return out


def differences(cards: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """What the cards do not share, one line each: the data (by its hash), the budget, the
    version of evalstress."""
    said = []
    for what, key in (("data", lambda c: c["data"]["sha256"]),
                      ("budget", lambda c: c["budget"]["name"]),
                      ("evalstress version", lambda c: c["evalstress"])):
        values: dict[str, list[str]] = {}
        for card, name in zip(cards, names, strict=True):
            values.setdefault(str(key(card)), []).append(name)
        if len(values) > 1:
            parts = []
            for value, who in values.items():
                card = cards[names.index(who[0])]
                shown = (f"{card['data']['source']}, {card['data']['examples']} examples, "
                         f"sha256 {value[:12]}…" if what == "data" else value)
                parts.append(f"{', '.join(who)}: {shown}")
            said.append(f"The {what} differs, so these columns do not measure the same thing: "
                        + "; ".join(parts) + ".")
    return said


def heaviest(severities: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return max(severities, key=lambda s: s["severity_rank"]) if severities else {}


def drop_cell(point: Mapping[str, Any]) -> str:
    return (f"{pct(point.get('relative_change'))} "
            f"({ci(point.get('relative_ci_low'), point.get('relative_ci_high'))})")


def section_of(column: Column, key: str) -> Mapping[str, Any] | None:
    section = column.card["methods"].get(key) or {}
    return section if section.get("status") == "run" else None


def status_cell(column: Column, key: str) -> str:
    """'not run: needs --gold', the reason's first words (the card says the rest)."""
    section = column.card["methods"].get(key) or {}
    reason = str(section.get("reason") or "").split(":")[0].split("(")[0].strip()
    return f"{section.get('status', 'not run')}: {reason}" if reason else \
        str(section.get("status", "not run"))


def gate_rows(columns: Sequence[Column]) -> list[Row]:
    verdicts = [c.card["gate"]["verdict"] for c in columns]
    rows = [Row("gate", "verdict", [MARKS.get(v, v) + (f" ({gate_failures(c.card['gate'])})"
                                                        if v != "pass" else "")
                                    for v, c in zip(verdicts, columns, strict=True)],
                [{"pass": "pass", "warn": "inconclusive"}.get(v, "fail") for v in verdicts])]
    ranking = []
    for column in columns:
        rank = column.card["gate"].get("ranking")
        ranking.append(None if not rank else
                       f"{pct(rank['share'], False)} of {rank['pairs']} pairs "
                       f"({ci(rank['ci_low'], rank['ci_high'], signed=False)}"
                       + (f", {rank['n']} examples" if rank.get("n") is not None else "")
                       + ")")
    rows.append(Row("gate", "original above its heaviest damage", ranking,
                    [(c.card["gate"].get("ranking") or {}).get("verdict") for c in columns]))
    spread = []
    for column in columns:
        mine = [s for s in column.card["gate"].get("spread") or [] if s["aspect"] == column.aspect]
        spread.append(f"{pct(mine[0]['modal_share'], False)}" if mine else None)
    rows.append(Row("gate", "share of the commonest score", spread,
                    ["fail" if (s := [x for x in c.card["gate"].get("spread") or []
                                      if x["aspect"] == c.aspect]) and s[0]["degenerate"]
                     else None for c in columns]))
    missing = [c.card["gate"]["missing"] for c in columns]
    rows.append(Row("gate", "scores missing", [pct(m["share"], False) for m in missing],
                    ["fail" if m["mostly_missing"] else None for m in missing]))
    return rows


def subject(finding: Mapping[str, Any]) -> str:
    """What a finding is about, in a few words (the perturbation, unit, aspect or attack)."""
    row: Mapping[str, Any] = (finding.get("rows") or [{}])[0]
    method = finding["method"]
    if method == "discernment":
        return f"{row.get('perturbation')} ({row.get('severity')}, {row.get('task')})"
    if method == "criteria":
        if "test" in row:
            return f"{row.get('quality_aspect')} under {row.get('perturbation')}"
        return str(row.get("quality_aspect"))
    if method == "adversarial":
        return f"{row.get('method')}, {row.get('direction')}"
    if method == "correlation":
        return f"{row.get('human')} ({row.get('method')})"
    return str(row.get("perturbation"))


def finding_rows(columns: Sequence[Column]) -> list[Row]:
    kinds: list[str] = []
    for column in columns:  # each kind once, even when one card has it twice
        kinds += [k for k in dict.fromkeys(f["kind"] for f in column.card["findings"])
                  if k not in kinds]
    rows = []
    for kind in kinds:
        cells: list[str | None] = []
        for column in columns:
            mine = [subject(f) for f in column.card["findings"] if f["kind"] == kind
                    and column.aspect in aspects_of(f, column)]
            cells.append("; ".join(mine) if mine else None)
        rows.append(Row("findings", kind, cells,
                        [None if c is None else ("pass" if kind in ("holds", "human correlation")
                                                 else "fail") for c in cells]))
    return rows


def aspects_of(finding: Mapping[str, Any], column: Column) -> set[str]:
    """The aspects a finding's rows speak of (every aspect of the card when they name none)."""
    named = {str(r["aspect"]) for r in finding.get("rows") or [] if r.get("aspect")}
    return named or {column.aspect}


def blindspot_rows(columns: Sequence[Column]) -> list[Row]:
    names: list[str] = []
    found: dict[tuple[int, str], Mapping[str, Any]] = {}
    for index, column in enumerate(columns):
        section = section_of(column, "blindspot")
        for row in (section or {}).get("results", {}).get("rows") or []:
            if row["aspect"] == column.aspect:
                names += [row["perturbation"]] if row["perturbation"] not in names else []
                found[(index, row["perturbation"])] = row
    rows = []
    for name in names:
        cells: list[str | None] = []
        verdicts: list[str | None] = []
        for index, _ in enumerate(columns):
            row = found.get((index, name))
            if row is None:
                cells.append(None)
                verdicts.append(None)
                continue
            verdict = str(row.get("verdict"))
            cells.append(f"{MARKS.get(verdict, verdict)} {drop_cell(heaviest(row['severities']))}")
            verdicts.append(verdict)
        rows.append(Row("blindspot", name, cells, verdicts))
    return rows


def discernment_rows(columns: Sequence[Column]) -> list[Row]:
    rows = []
    reach: list[str | None] = []
    marks: list[str | None] = []
    averages: dict[str, list[str | None]] = {"minor": [], "major": []}
    for column in columns:
        section = section_of(column, "discernment")
        results = (section or {}).get("results") or {}
        threshold = float(results.get("threshold") or 1.0)
        units = [u for u in results.get("units") or []
                 if u.get("aspect") == column.aspect and u.get("d") is not None]
        if section is None or not units:
            reach.append(None if section is not None else status_cell(column, "discernment"))
            marks.append(None)
            for group in averages.values():
                group.append(None)
            continue
        good = sum(1 for u in units if u["d"] >= threshold)
        reach.append(f"{good} of {len(units)}")
        marks.append("pass" if good == len(units) else "fail")
        for severity, group in averages.items():
            values = [u["d"] for u in units if u["severity"] == severity]
            group.append(f"{mean(values):.2f}" if values else None)
    rows.append(Row("discernment", "units that reach D = 1 (p = 0.05)", reach, marks))
    for severity, group in averages.items():
        rows.append(Row("discernment", f"mean D, {severity} errors", group,
                        [None] * len(group)))
    return rows


def criteria_rows(columns: Sequence[Column]) -> list[Row]:
    targets: list[str] = []
    found: dict[tuple[int, str], Mapping[str, Any]] = {}
    tests: list[str | None] = []
    for index, column in enumerate(columns):
        results = (section_of(column, "criteria") or {}).get("results") or {}
        if results.get("mode") == "confusion":
            items = [i for i in (results.get("confusion") or {}).get("items") or []
                     if i["aspect"] == column.aspect and i.get("passed") is not None]
            tests.append(f"{sum(1 for i in items if i['passed'])} of {len(items)} pass")
            continue
        tests.append(None)
        for aspect in (results.get("sensitivity") or {}).get("aspects") or []:
            if aspect["aspect"] == column.aspect and aspect.get("probed"):
                quality = aspect["quality_aspect"]
                targets += [quality] if quality not in targets else []
                found[(index, quality)] = aspect
    rows = [Row("criteria", f"drop when {quality} is damaged",
                [drop_cell(found[(i, quality)]) if (i, quality) in found else None
                 for i in range(len(columns))], [None] * len(columns)) for quality in targets]
    if any(t is not None for t in tests):
        rows.append(Row("criteria", "aspect tests (confusion)", tests, [None] * len(columns)))
    return rows


def adversarial_rows(columns: Sequence[Column]) -> list[Row]:
    keys: list[tuple[str, str]] = []
    found: dict[tuple[int, str, str], Mapping[str, Any]] = {}
    for index, column in enumerate(columns):
        results = (section_of(column, "adversarial") or {}).get("results") or {}
        for row in results.get("asr") or []:
            key = (row["method"], row["direction"])
            keys += [key] if key not in keys else []
            found[(index, *key)] = row
    return [Row("adversarial", f"{method}, {direction}: attack success rate",
                [f"{pct(r.get('asr'), False)} ({ci(r.get('ci_low'), r.get('ci_high'), signed=False)})"
                 if (r := found.get((i, method, direction))) else None
                 for i in range(len(columns))], [None] * len(columns))
            for method, direction in keys]


def correlation_rows(columns: Sequence[Column]) -> list[Row]:
    keys: list[tuple[str, str]] = []
    found: dict[tuple[int, str, str], Mapping[str, Any]] = {}
    for index, column in enumerate(columns):
        results = (section_of(column, "correlation") or {}).get("results") or {}
        for row in results.get("rows") or []:
            if row["aspect"] == column.aspect:
                key = (row["human"], row["method"])
                keys += [key] if key not in keys else []
                found[(index, *key)] = row
    return [Row("correlation", f"human {human}, {method}",
                [f"{r['value']:.2f} ({ci(r.get('ci_low'), r.get('ci_high'), False)})"
                 if (r := found.get((i, human, method))) and r.get("value") is not None else None
                 for i in range(len(columns))], [None] * len(columns))
            for human, method in keys]


def bias_rows(columns: Sequence[Column]) -> list[Row]:
    """One row per bias probe arm and aspect: the effect above placebo, its interval and the
    verdict of each card (a judge's card; other cards have none)."""
    keys: list[tuple[str, str]] = []
    found: dict[tuple[int, str, str], Mapping[str, Any]] = {}
    for index, column in enumerate(columns):
        results = (section_of(column, "bias") or {}).get("results") or {}
        for row in results.get("rows") or []:
            if row["aspect"] == column.aspect:
                key = (row["probe"], row["arm"])
                keys += [key] if key not in keys else []
                found[(index, *key)] = row
    verdicts = {"detects": "fail", "reversed": "fail", "blind": "pass",
                "inconclusive": "inconclusive"}
    return [Row("bias", probe + (f" ({arm})" if arm != "probe" else ""),
                [f"{r['effect']:+.3g} ({ci(r.get('low'), r.get('high'), False)}): "
                 f"{r['verdict']}" if (r := found.get((i, probe, arm))) and
                 r.get("effect") is not None else None for i in range(len(columns))],
                [verdicts.get(str(r.get("outcome"))) if (r := found.get((i, probe, arm)))
                 else None for i in range(len(columns))])
            for probe, arm in keys]


def position_rows(columns: Sequence[Column]) -> list[Row]:
    """The position test of each judge's card, in one row."""
    found = [(section_of(c, "position") or {}).get("results") or {} for c in columns]
    if not any(r.get("effect") is not None for r in found):
        return []
    verdicts = {"detects": "fail", "reversed": "fail", "blind": "pass",
                "inconclusive": "inconclusive"}
    return [Row("position", "swap flips above re-ask flips",
                [f"{r['effect']:+.0%} ({ci(r.get('low'), r.get('high'))}): {r['verdict']}"
                 if r.get("effect") is not None else None for r in found],
                [verdicts.get(str(r.get("outcome"))) for r in found])]


def consistency_rows(columns: Sequence[Column]) -> list[Row]:
    """Per column: the share of items answered identically k times, the shift under each
    rewording with its verdict, and the blind-spot verdicts that changed between wordings."""
    found = [(section_of(c, "consistency") or {}).get("results") or {} for c in columns]
    if not any(found):
        return []
    repeats = [next((r for r in f.get("repeat_rows") or [] if r["aspect"] == c.aspect), None)
               for f, c in zip(found, columns, strict=True)]
    rows = [Row("consistency", "all k answers identical: share (95% CI)",
                [f"{pct(r.get('identical_share'), False)} of {r['items']}, k {r['k']} "
                 f"({ci(r.get('identical_low'), r.get('identical_high'), signed=False)})"
                 if r and r.get("identical_share") is not None else None for r in repeats],
                [None] * len(columns))]
    variants = sorted({int(s["variant"]) for f in found for s in f.get("shift_rows") or []})
    for variant in variants:
        shifts = [next((s for s in f.get("shift_rows") or [] if s["aspect"] == c.aspect
                        and int(s["variant"]) == variant), None)
                  for f, c in zip(found, columns, strict=True)]
        rows.append(Row("consistency", f"rewording {variant}: shift (interval), verdict",
                        [f"{s['shift']:+.3g} ({ci(s.get('low'), s.get('high'), False)}), "
                         f"{s['outcome']}" if s and s.get("shift") is not None else None
                         for s in shifts], [None] * len(columns)))
    rows.append(Row("consistency", "blind-spot verdicts changed between wordings",
                    [f"{len(f['verdicts'].get('changed') or [])} of "
                     f"{f['verdicts'].get('compared')}" if f.get("verdicts") else None
                     for f in found], [None] * len(columns)))
    return rows


def judge_changes(cards: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """What changed in the judge from each card to the next (`card.identity`), one line per
    setting; the cards' names lead each line when more than two are compared."""
    said = []
    for index in range(1, len(cards)):
        lead = "" if len(cards) == 2 else f"{names[index - 1]} → {names[index]}: "
        said += [lead + line for line in identity_changes(cards[index - 1], cards[index])]
    return said


def agreement_rows(columns: Sequence[Column]) -> list[Row]:
    """Per human aspect and level, each card's tau-b with its corrected interval and alpha
    (`card.agreement.compare_cells`)."""
    blocks = [((section_of(c, "correlation") or {}).get("results") or {}).get("agreement")
              for c in columns]
    return [Row("agreement", test, cells, verdicts) for test, cells, verdicts in
            [*compare_cells(blocks, [c.aspect for c in columns]),
             *preference_compare_cells(blocks)]]


def compare_cards(cards: Sequence[Mapping[str, Any]],
                  names: Sequence[str] | None = None) -> Comparison:
    """The side-by-side table of `cards` (`names`: a column name per card, else its label)."""
    if not cards:
        raise ValueError("no card to compare: give at least one card.json")
    shown = distinct(list(names) if names else [c["evaluator"]["label"] for c in cards])
    columns = columns_of(cards, shown)
    rows = [*gate_rows(columns), *finding_rows(columns), *blindspot_rows(columns),
            *discernment_rows(columns), *criteria_rows(columns), *adversarial_rows(columns),
            *correlation_rows(columns), *bias_rows(columns), *position_rows(columns),
            *agreement_rows(columns), *consistency_rows(columns)]
    # a card made before the bias method has no bias section: then no row says "not run"
    added = [k for k in ("bias", "position", "consistency") if any(k in c.card["methods"] for c in columns)]
    for key in ("adversarial", "correlation", *added):
        if not any(r.group == key for r in rows):
            rows.append(Row(key, "status", [status_cell(c, key) for c in columns],
                            [None] * len(columns)))
    return Comparison(columns, rows, judge_changes(cards, shown) + differences(cards, shown),
                      [Source.of(name, card) for name, card in zip(shown, cards, strict=True)])


def distinct(names: list[str]) -> list[str]:
    """The cards' names, those given to more than one card (two cards of one evaluator) told
    apart by their place in the list: 'bleu (1)', 'bleu (2)'."""
    return [f"{name} ({index})" if names.count(name) > 1 else name
            for index, name in enumerate(names, 1)]


def untrusted_note(comparison: Comparison) -> str:
    names = [c.name for c in comparison.columns if not c.trusted]
    return (f"† untrusted: the sanity gate failed for {', '.join(names)}; its numbers say "
            "nothing about its judgement." if names else "")


def markdown_cell(value: str | None) -> str:
    """A cell of the Markdown table: its text escaped (card.md's `text`), None as a dash."""
    return "–" if value is None else text(value)


def compare_markdown(comparison: Comparison, per_table: int | None = None) -> str:
    """The table as Markdown (GitHub renders it); above it, what each card rests on (budget,
    data), the differences and the marks. `per_table`: at most this many columns a table, the
    rest in tables below (a page column holds a few, not a dozen), each table leaving out the
    rows none of its columns has."""
    lines = []
    if comparison.sources:
        lines += ["| " + " | ".join(SOURCE_HEAD) + " |", "|" + "---|" * len(SOURCE_HEAD),
                  *("| " + " | ".join(markdown_cell(c) for c in source.cells()) + " |"
                    for source in comparison.sources), ""]
    lines += [f"> **{text(d)}**" for d in comparison.differences]
    lines += [""] if comparison.differences else []
    note = untrusted_note(comparison)
    lines += [text(note), ""] if note else []
    every = range(len(comparison.columns))
    step = per_table or len(comparison.columns)
    chunks = [list(every[start:start + step]) for start in range(0, len(every), step)]
    tables = [markdown_table(comparison, chunk, whole=len(chunks) == 1) for chunk in chunks]
    return "\n".join([*lines, "\n".join(tables)])


def markdown_table(comparison: Comparison, chosen: Sequence[int], *, whole: bool) -> str:
    """One Markdown table of the `chosen` columns (`whole`: every column, every row kept)."""
    columns = [comparison.columns[i] for i in chosen]
    head = ["test", *(c.name + ("†" if not c.trusted else "") for c in columns)]
    lines = ["| " + " | ".join(markdown_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    for group, rows in comparison.groups():
        kept = [row for row in rows
                if whole or any(row.cells[i] is not None for i in chosen)]
        if kept:
            lines.append(f"| **{GROUPS[group]}** |" + " |" * len(columns))
        for row in kept:
            lines.append("| " + " | ".join([markdown_cell(row.test),
                                            *(markdown_cell(row.cells[i]) for i in chosen)])
                         + " |")
    return "\n".join(lines) + "\n"


def compare_html(comparison: Comparison, title: str = "Evaluator cards side by side") -> str:
    """The table as one self-contained page (the card's style and content-security policy),
    what each card rests on above it."""
    columns = comparison.columns
    head = "".join(f"<th scope='col' class='l'>{esc(c.name)}{'' if c.trusted else '†'}</th>"
                   for c in columns)
    body = []
    for group, rows in comparison.groups():
        body.append(f"<tr><th scope='rowgroup' colspan='{len(columns) + 1}' class='l'>"
                    f"{esc(GROUPS[group])}</th></tr>")
        for row in rows:
            cells = []
            for index, cell in enumerate(row.cells):
                verdict = row.verdicts[index] if index < len(row.verdicts) else None
                klass = "l" + ("" if columns[index].trusted else " untrusted")
                shown = esc("–" if cell is None else " ".join(cell.splitlines()))
                if verdict in ("pass", "fail") and columns[index].trusted:
                    shown = f"<span class='verdict verdict-{verdict}'>{shown}</span>"
                cells.append(f"<td class='{klass}'>{shown}</td>")
            body.append(f"<tr><th scope='row' class='l'>{esc(row.test)}</th>{''.join(cells)}"
                        "</tr>")
    notes = "".join(f"<div class='banner' role='note'><strong>{esc(d)}</strong></div>"
                    for d in comparison.differences)
    note = untrusted_note(comparison)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            f"<title>{esc(title)}</title><style>{CARD_CSS}</style></head><body><main>"
            f"<h1>{esc(title)}</h1>"
            + (table(SOURCE_HEAD, [s.cells() for s in comparison.sources],
                     left=len(SOURCE_HEAD), caption="the cards compared", cls="sources")
               if comparison.sources else "")
            + notes
            + (f"<p class='note'>{esc(note)}</p>" if note else "")
            + scroll_box(f"<table class='compare'><thead><tr><th scope='col' class='l'>test"
                         f"</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
            + "</main></body></html>")
