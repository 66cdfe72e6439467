"""docs/atlas-real.md: the real-data atlas's page, a pure function of the published cards (so
the committed page can be checked against the committed cards) and of the atlas's entries
(what each set is, which cards are not yet made and what they would take)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalstress.card.agreement import bounds, level_share
from evalstress.card.atlas import (
    GLANCE_HEAD,
    GLANCE_NOTE,
    TIME_NOTE,
    check_page,
    entry_section,
    glance_row,
    minutes,
    slug,
    write_atlas_page,
)
from evalstress.card.claims import claims_table
from evalstress.card.compare import read_card
from evalstress.card.markdown import text
from evalstress.card.model import CARD_JSON, build_seconds
from evalstress.card.realatlas import EXAMPLES, REAL_ATLAS, SETS, RealEntry

#: the models behind the model-based evaluators, said exactly (the card's signature has the
#: file's sha256; this says what the file is)
MODELS = {
    "bertscore": "all-MiniLM-L6-v2 (sentence-transformers, 6 layers, its last layer), no "
                 "IDF weighting, not rescaled: no baseline file ships for MiniLM, so scores sit "
                 "near 0.7 where the paper's rescaled RoBERTa-large ones sit near 0.2",
    "gpt-ppl": "SmolLM2-135M-Instruct, the GGUF file quantized to 4 bits (Q4_1), dequantized "
               "by transformers and run on the CPU; the score is the negated perplexity",
    "judge": "SmolLM2-135M-Instruct Q4_1 (the same GGUF) in process, asked for a 1-5 rating "
             "of overall quality only, under a grammar, temperature 0",
}
#: the paper budget's seeds, as the page states them
SEEDS = "five seeds per severity for paper 002's tests, one perturbed text per example for " \
        "papers 000 and 003"


def d_ceiling(n: int, aspects: int = 1) -> float:
    """The largest D a unit of n examples can reach (no ties): (n ln 2 + ln M) / ln 20."""
    return (n * math.log(2) + math.log(aspects)) / math.log(20)


def alpha_eff(card: Mapping[str, Any]) -> float | None:
    """The corrected level the card's blind-spot intervals are printed at (1 - their level)."""
    for row in (card["methods"]["blindspot"].get("results") or {}).get("rows") or []:
        for severity in row.get("severities") or []:
            level = (severity.get("test") or {}).get("level")
            if level is not None:
                return 1 - float(level)
    return None


def model_line(card: Mapping[str, Any]) -> str:
    name = card["evaluator"]["name"]
    return MODELS.get(name, "no model: a string-matching metric")


def data_lines() -> list[str]:
    lines = ["| set | file | task | used | fields | paper 002 suite |", "|---|---|---|---|---|---|"]
    for s in SETS.values():
        used = f"the first {EXAMPLES} of {s.rows:,}" if s.rows > EXAMPLES else f"all {s.rows}"
        lines.append(f"| {s.title} | `{s.file}` | {s.task} | {used} | {s.roles} | "
                     f"`{s.suite}` |")
    return lines


def models_lines(cards: Sequence[tuple[RealEntry, Mapping[str, Any]]]) -> list[str]:
    lines = ["| card | signature | model |", "|---|---|---|"]
    for entry, card in cards:
        lines.append(f"| {entry.name} | `{card['evaluator']['short_signature']}` | "
                     f"{model_line(card)} |")
    return lines


def protocol_lines(cards: Sequence[tuple[RealEntry, Mapping[str, Any]]]) -> list[str]:
    levels = sorted({round(a, 4) for _, c in cards if (a := alpha_eff(c)) is not None})
    counts = sorted({int(m.group(1)) for _, c in cards
                     for r in (c["methods"]["blindspot"].get("results") or {}).get("rows") or []
                     if (m := re.fullmatch(r"0\.2 x sd of (\d+) originals",
                                           str(r.get("delta_rule") or "")))})
    originals = (f"{counts[0]} to {counts[-1]}" if len(counts) > 1 else str(counts[0])
                 ) if counts else "none yet"
    span = (f"{levels[0]} to {levels[-1]}" if len(levels) > 1 else str(levels[0])
            ) if levels else "none yet"
    return [
        f"- **Budget.** The papers' protocols on {EXAMPLES} examples a card: {SEEDS}. The "
        "blind-spot suite is paper 002's code's suite for the set (its grids and rules).",
        "- **Verdicts.** Each blind-spot test is *detects*, *blind*, *reversed* or "
        "*inconclusive*, read off a percentile bootstrap interval of the mean per-example drop "
        "that resamples examples (seeds averaged inside their example), 2,000 resamples. Paper "
        "002's strict verdict (no tolerance) stands beside it in every row of the cards.",
        "- **Tolerance.** δ = 0.2 × the standard deviation of the originals' scores (Cohen's "
        "small effect) unless a tolerance is declared; none is here. *Blind* needs the whole "
        "interval inside ±δ, *detects* the whole interval beyond +δ. The standard deviation "
        f"is over the originals a test has variants of ({originals} on these cards: the "
        "examples a perturbation skipped, having nothing it could change, are left out).",
        "- **Correction.** Benjamini-Hochberg over every severity and step test of a card; each "
        f"interval is printed at 1 − α_eff, α_eff = {span} on these cards.",
        f"- **D ceilings.** A unit of n examples cannot exceed D = (n ln 2 + ln M) / ln 20 for M "
        f"combined aspects: with {EXAMPLES} examples {d_ceiling(EXAMPLES):.2f} for one aspect "
        f"and {d_ceiling(EXAMPLES, 3):.2f} for three, so every unit here can reach D = 1 (5 "
        "examples suffice) and none is set apart as too few.",
        "- **Human correlation.** On SummEval each card scores all 16 systems' summaries of the "
        "100 articles and correlates them with the experts' mean ratings (coherence, "
        "consistency, fluency, relevance): summary level (per article across its 16 "
        "summaries, averaged) and system level (each system's mean over the articles): Kendall "
        "tau-b and Krippendorff's ordinal alpha, percentile intervals from 2,000 resamples of "
        "articles, corrected by Holm over the four expert aspects; the verdicts are read off "
        "the corrected intervals.",
    ]


def correlation_lines(cards: Sequence[tuple[RealEntry, Mapping[str, Any]]]) -> list[str]:
    """Each card's agreement with the experts (the cards' agreement block): Kendall tau-b per
    expert aspect at summary and system level, with the Holm-corrected interval each verdict
    is read from; a card made before that block says so instead of showing older numbers."""
    lines = ["| card | score | expert aspect | summary level: tau-b [Holm interval] | system "
             "level: tau-b [Holm interval] |", "|---|---|---|---|---|"]
    found, older = False, []
    for entry, card in cards:
        section = card["methods"]["correlation"]
        if section["status"] != "run":
            continue
        block = (section.get("results") or {}).get("agreement")
        if not block:
            older.append(entry.name)
            continue
        keyed = {(r["aspect"], r["human"], r["level"]): r for r in block.get("rows") or []
                 if r.get("statistic") == "tau_b"}
        for aspect, human in dict.fromkeys((a, h) for a, h, _ in keyed):
            cells = [_agreement_cell(keyed.get((aspect, human, level)))
                     for level in ("item", "system")]
            lines.append(f"| {entry.name} | {aspect} | {human} | {cells[0]} | {cells[1]} |")
            found = True
    notes = ([f"Made before the agreement block (make them again to show it): "
              f"{', '.join(older)}."] if older else [])
    if not found:
        return notes or ["No SummEval card is made yet."]
    return [*lines, "", AGREEMENT_NOTE, *(["", *notes] if notes else [])]


#: how to read the agreement table
AGREEMENT_NOTE = (
    "Summary level: tau-b across each article's 16 summaries, averaged over the articles; "
    "system level: tau-b across the 16 systems' means. Each interval resamples articles "
    "(2,000 resamples) and is printed at the level Holm's correction over the card's four "
    "expert aspects leaves (the level after 'at'); the verdict is read off it: *agrees* "
    "(above 0), *disagrees* (below 0), *inconclusive* (it holds 0). Krippendorff's ordinal "
    "alpha and the accuracy on pairs the experts order are on each card.")


def _agreement_cell(row: Mapping[str, Any] | None) -> str:
    """"0.317 [-0.03 to 0.62] at 98.33%: inconclusive, n = 16"."""
    if row is None or row.get("value") is None:
        return "undefined"
    return (f"{row['value']:.3f} [{bounds(row.get('low'), row.get('high'))}] at "
            f"{level_share(float(row.get('conf') or 0.95))}: "
            f"{row.get('verdict') or 'inconclusive'}, n = {row['n']}")


def pending_lines(made: set[str]) -> list[str]:
    waiting = [e for e in REAL_ATLAS if e.name not in made]
    if not waiting:
        return ["Every card of the atlas is made."]
    lines = ["| card | evaluator | model it would run | set | not yet made |",
             "|---|---|---|---|---|"]
    for entry in waiting:
        model = MODELS.get(entry.metric.spec.split(":")[0], "no model: a string-matching metric")
        lines.append(f"| {entry.name} | {entry.metric.title} | {model} | {entry.data.title} | "
                     f"{text(entry.pending or 'not made yet')} |")
    return lines


def real_page(cards: Sequence[tuple[RealEntry, Mapping[str, Any]]], base: str = "atlas-real",
              card_doc: str = "card.md") -> str:
    """docs/atlas-real.md from the published cards (`base`: their folder relative to the
    page; `card_doc`: the page on reading a card)."""
    by_name = {e.name: c for e, c in cards}
    anchors = {e.name: slug(e.title) for e, _ in cards}
    total = sum(build_seconds(c["cost"]) for _, c in cards)
    lines = [
        "# The atlas on real data", "",
        f"[Evaluator cards]({card_doc}) of the offline evaluators on the public sets the "
        "papers used, made by `evalstress atlas --data-dir DIR` under the papers' protocols. "
        "The [built-in atlas](atlas.md) is the demo on this project's own 57 examples; this "
        "page is the measurement. The sets are blindspot_nlg's release (MIT license, "
        "Copyright (c) 2022 TianxingHe); they are not shipped with evalstress: the command "
        "reads them from the folder it is given, and only the cards' numbers and short quoted "
        f"examples are published (`{base}/<card>/card.json`).", "",
        "```bash",
        "evalstress atlas --data-dir ../shared/data/                  # every card made by "
        "default, then this page",
        "evalstress atlas --data-dir ../shared/data/ --only bleu-wmt21",
        "evalstress atlas --data-dir ../shared/data/ --only gpt-ppl-wikitext --dry-run   # "
        "its estimate",
        "evalstress atlas --data-dir ../shared/data/ --page-only     # this page from the "
        "committed cards",
        "```", "",
        "## Data", "", *data_lines(), "",
        "A translation example, WMT21 de-en segment `wmt21-0`: source *Biker reagiert "
        "blitzschnell und verhindert Schlimmeres*; hypothesis (translation A) *Biker reacts "
        "lightning fast and prevents worse.*; reference (translation B) *Biker reacts "
        "lighting-fast and prevents the worst*.", "",
        "## What ran", "", *models_lines(cards), "", *protocol_lines(cards), "",
        "## At a glance", "", *GLANCE_HEAD,
        *[glance_row(e.as_atlas_entry(), c, base) for e, c in cards], "", GLANCE_NOTE, "",
        f"{TIME_NOTE} In all: {minutes(total)}.", "",
        "## Human correlation on SummEval", "", *correlation_lines(cards), "",
        "## The papers' findings, here", "",
        "Each published finding that a card here can speak to, marked from the card's "
        "four-way verdicts (an interval over examples, never a point estimate). *Agree*: the "
        "row's verdict says what the paper found (a failed test is a row blind at its "
        "heaviest severity, or reversed); *disagree*: it says the opposite; *partly*: the row "
        "is blind at its light severities only (blind up to a severity, the heavier damage "
        "detected or undecided); *not comparable*: inconclusive at this n, a card not made, "
        "or a claim no data or model here can test.", "",
        *claims_table(by_name, anchors), "",
        "## Not yet made", "",
        "Cards that need more model time than this project's 2-core machine gives a page; "
        "`--only NAME` makes one. The estimate is the dry run's (`--dry-run`), from the rates "
        "measured on this machine.", "", *pending_lines(set(by_name)), ""]
    for entry, card in cards:
        lines += entry_section(entry.as_atlas_entry(), card, base)
    return "\n".join(lines).rstrip() + "\n"


def read_real_atlas(published: Path) -> list[tuple[RealEntry, dict[str, Any]]]:
    """The published cards of the real atlas's entries, in its order."""
    return [(entry, read_card(published / entry.name)) for entry in REAL_ATLAS
            if (published / entry.name / CARD_JSON).exists()]


def write_real_page(published: Path, page: Path, *, force: bool = False) -> Path:
    """The page from the cards published in `published`; its folder records it as
    evalstress's."""
    check_page(page, published, force=force)
    cards = read_real_atlas(published)
    if not cards:
        raise ValueError(f"{published}: no published card (run `evalstress atlas --data-dir "
                         "DIR` first)")
    return write_atlas_page(page, published, lambda base, card_doc: real_page(cards, base,
                                                                             card_doc))
