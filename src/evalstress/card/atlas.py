"""The atlas: the cards of every evaluator that runs offline out of the box, on the built-in
corpus, and one docs page made from them ("Blind spots of common evaluators", docs/atlas.md).

`build_atlas` makes each card in a work folder (runs/atlas/<name>: its run directories stay
there, resumable, never committed), then publishes what the page needs into docs/atlas/<name>
(card.json and the figures) and writes the page. `atlas_page` is a pure function of the
published cards, so the committed page can be checked against the committed cards.

ROUGE gets three cards (`rouge:types=rouge1`, `rouge2`, `rougeL`) rather than one card of
three aspects: papers report them as three metrics, and each then gets its own sanity gate and
its own three to five findings, where one card would share five findings among three scores.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote as url_quote

from evalstress.analyses.blindspot_stats import PARTLY_BLIND
from evalstress.card.assemble import write_figures
from evalstress.card.compare import compare_cards, compare_markdown, read_card
from evalstress.card.execution import open_cluster
from evalstress.card.figures import FIGURES, gate_failures
from evalstress.card.make import make_card, plan_card
from evalstress.card.markdown import ci, code, interval_text, level_text, text
from evalstress.card.model import CARD_JSON, build_seconds, count_text, write_atomic
from evalstress.card.plan import CardPlan
from evalstress.card.run import CardOptions, card_workers, check_same_card
from evalstress.core.strict import check_names
from evalstress.engine.outdir import OutDirError, check_owned_file, record_files

#: where `evalstress atlas` works (run directories), publishes the cards, and writes the page
WORK = Path("runs/atlas")
#: columns of a side-by-side table on the atlas page: four fit the docs site's text column
SIDE_BY_SIDE = 4
PUBLISHED = Path("docs/atlas")
PAGE = Path("docs/atlas.md")


@dataclass(frozen=True)
class AtlasEntry:
    """One evaluator of the atlas: its folder name, spec, short title (its heading) and what it
    is; its budget, and `note` saying why that is not the atlas's own."""

    name: str
    spec: str
    title: str
    what: str
    budget: str = "standard"
    note: str = ""


#: every evaluator that scores offline with what ships (no server, no download)
ATLAS = (
    AtlasEntry("bleu", "bleu", "BLEU", "sacreBLEU's sentence BLEU"),
    AtlasEntry("chrf", "chrf", "chrF", "sacreBLEU's chrF (character 6-grams)"),
    AtlasEntry("ter", "ter", "TER", "sacreBLEU's translation edit rate (lower is better)",
               budget="small",
               note="made with the small budget (8 examples, one seed): sacreBLEU's TER searches "
                    "word shifts, 0.2 to 1.7 s a text for the corpus's 70-word summaries and "
                    "their shuffled variants on this project's 2-core machine, so the standard "
                    "budget's 6,800 texts would take over an hour"),
    AtlasEntry("rouge1", "rouge:types=rouge1", "ROUGE-1", "rouge-score's unigram F-measure"),
    AtlasEntry("rouge2", "rouge:types=rouge2", "ROUGE-2", "rouge-score's bigram F-measure"),
    AtlasEntry("rougeL", "rouge:types=rougeL", "ROUGE-L",
               "rouge-score's longest-common-subsequence F-measure"),
    AtlasEntry("bertscore", "bertscore", "BERTScore",
               "precision, recall and F on the shipped all-MiniLM-L6-v2"),
    AtlasEntry("gpt-ppl", "gpt-ppl", "GPT-PPL",
               "negated perplexity under the shipped SmolLM2-135M"),
    AtlasEntry("judge-local", "judge:form=score-only,model=local", "LLM judge, score only",
               "the shipped SmolLM2-135M-Instruct rating overall quality 1-5", budget="small",
               note="made with the small budget (8 examples, one seed): its first make took "
                    "49 min on this project's 2-core machine at a load of 7-9 (bias probes "
                    "10 min, position 12 min and consistency 26 min: a pairwise answer or a "
                    "reworded run costs the 135M model seconds a call), so the standard "
                    "budget's 6,800 texts and more would take hours"),
)


def slug(title: str) -> str:
    """A heading's anchor as the docs site (Python-Markdown's toc) and GitHub make it."""
    text = re.sub(r"[^\w\s-]", "", title).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def entries(only: Sequence[str] | None = None) -> list[AtlasEntry]:
    """The atlas's entries, or those named in `only` (an unknown name: a did-you-mean)."""
    if not only:
        return list(ATLAS)

    known = [e.name for e in ATLAS]
    check_names("atlas evaluator", {name: None for name in only}, known, "--only")
    return [e for e in ATLAS if e.name in only]


def check_published(dest: Path, *, force: bool = False) -> None:
    """Refuse (OutDirError), before any card is made, a published folder whose card.json or
    figures evalstress did not write there (its marker records what it did), or a link."""
    if dest.is_symlink():
        raise OutDirError(f"--published {dest}: is a symbolic link; evalstress does not "
                          "write through a link it did not make")
    check_owned_file(dest / CARD_JSON, "--published", force=force)
    figures = dest / FIGURES
    if figures.is_symlink():
        raise OutDirError(f"--published {figures}: is a symbolic link; evalstress does not "
                          "write through a link it did not make")
    if figures.is_dir():
        for path in sorted(figures.iterdir()):
            if path.suffix == ".svg":  # recorded in the card's folder, as figures/NAME.svg
                check_owned_file(path, "--published", force=force, root=dest)


def publish_card(card: Mapping[str, Any], dest: Path) -> None:
    """What the page needs of a card into `dest`: its card.json and its figures (no run
    directory, no score table), recorded in the folder's marker as evalstress's."""
    dest.mkdir(parents=True, exist_ok=True)
    drawn = write_figures(card, dest)
    write_atomic(dest / CARD_JSON, json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    record_files(dest, [CARD_JSON, *(plan.path for plan, _ in drawn)], "atlas", "atlas")


def read_atlas(published: Path, chosen: Sequence[AtlasEntry] = ATLAS
               ) -> list[tuple[AtlasEntry, dict[str, Any]]]:
    """The published cards of the entries that have one, in the atlas's order."""
    return [(entry, read_card(published / entry.name)) for entry in chosen
            if (published / entry.name / CARD_JSON).exists()]


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def outcomes(rows: list[Mapping[str, Any]]) -> str:
    """'reversed: c; blind: a, b; blind at light severities only: d; 2 inconclusive' from the
    rows' verdicts (`analyses.blindspot_stats.row_state`); a dash
    for a card made before them."""
    if not any("outcome" in r for r in rows):
        return "\u2014"
    parts = []
    for kind in ("reversed", "blind"):
        names = sorted({r["perturbation"] for r in rows if r.get("outcome") == kind})
        if names:
            parts.append(f"{kind}: {', '.join(names)}")
    partly = sorted({r["perturbation"] for r in rows if r.get("outcome") == PARTLY_BLIND})
    if partly:
        parts.append(f"blind at light severities only: {', '.join(partly)}")
    undecided = len({r["perturbation"] for r in rows if r.get("outcome") == "inconclusive"})
    if undecided:
        parts.append(f"{undecided} inconclusive")
    return "; ".join(parts) or "none"


#: what the glance's "from intervals" column says, under the table of each atlas page
GLANCE_NOTE = ("From intervals: the blind-spot rows' verdicts (the rules: the blind-spot "
               "method's page). A row is *blind* when its heaviest severity is; "
               "*blind at light severities only* names the rows blind up to some severity "
               "and detected (or undecided) beyond it, which the cards call partly blind.")


#: the glance table's head (both atlas pages)
GLANCE_HEAD = ["| evaluator | budget | sanity gate | rank test fails | from intervals | findings "
               "| time and work | card |", "|---|---|---|---|---|---|---|---|"]
#: how to read its "time and work" column
TIME_NOTE = (
    "Time and work: the methods' wall time on this project's shared 2-core machine when the "
    "card was made; the texts that make scored itself, of the distinct texts its methods asked "
    "for (each method counted apart, so an original two methods share counts twice); the rest "
    "came from the score cache of an earlier make, so a time with few texts scored is not what "
    "a cold make costs; model calls: the calls its run sent the evaluator's model (an LLM "
    "judge's requests, net of its response cache; a local model's batches).")


def work_cell(cost: Mapping[str, Any]) -> str:
    """'TIME: 0 of 26,149 texts scored' (', 120 model calls' where a judge was asked)."""
    methods = [m for m in (cost.get("methods") or {}).values() if "distinct" in m]
    scored = sum(int(m.get("scored") or 0) for m in methods)
    asked = sum(int(m.get("distinct") or 0) for m in methods)
    calls = sum(int(m.get("calls") or 0) for m in methods)
    return (f"{minutes(build_seconds(cost))}: {scored:,} of {asked:,} texts scored"
            + (f", {calls:,} model calls" if calls else ""))


def glance_row(entry: AtlasEntry, card: Mapping[str, Any], base: str) -> str:
    gate = card["gate"]
    verdict = text(gate["verdict"] + (f" ({gate_failures(gate)})" if gate["verdict"] != "pass"
                                      else ""))
    blind = (card["methods"]["blindspot"].get("results") or {}).get("rows") or []
    failed = sorted({r["perturbation"] for r in blind if r.get("rank_pass") is False})
    return (f"| [{entry.title}](#{slug(entry.title)}) | {text(card['budget']['name'])} | "
            f"{verdict} | {text(', '.join(failed) or 'none')} | {text(outcomes(blind))} | "
            f"{len(card['findings'])} | "
            f"{work_cell(card['cost'])} | [card.json]({base}/{entry.name}/{CARD_JSON}) |")


def entry_section(entry: AtlasEntry, card: Mapping[str, Any], base: str) -> list[str]:
    evaluator, data, budget = card["evaluator"], card["data"], card["budget"]
    lines = [f"## {entry.title}", "", f"{entry.what} · "
             f"{code(evaluator['short_signature'])} · spec {code(evaluator['spec'])} · "
             f"{text(budget['name'])} budget ({text(count_text(data))}, "
             f"data sha256 {code(data['sha256'][:12] + '…')}) · made in "
             f"{minutes(build_seconds(card['cost']))} · [card.json]({base}/{entry.name}/{CARD_JSON})",
             ""]
    if entry.note:
        lines += ["!!! note \"Budget\"", f"    This card was {entry.note}.", ""]
    gate = card["gate"]
    if not gate["trusted"]:
        lines += ["!!! warning \"Sanity gate failed\"",
                  "    " + text("; ".join(gate.get("reasons") or [])) + ". Nothing on this card "
                  "says anything about the evaluator's judgement.", ""]
    elif gate["verdict"] == "warn":
        lines += ["Sanity gate passed with a warning: "
                  + text("; ".join(gate.get("reasons") or [])) + ".", ""]
    else:
        ranking = gate.get("ranking") or {}
        where = (f" (95% CI {ci(ranking['ci_low'], ranking['ci_high'], signed=False)}, "
                 f"resampling {ranking['n']} examples)" if ranking.get("n") is not None
                 and ranking.get("ci_low") is not None else "")
        lines += [f"Sanity gate passed: the original scores above its heaviest damage in "
                  f"{text(ranking.get('above'))} of {text(ranking.get('pairs'))} pairs"
                  f"{where}.", ""]
    if card.get("preliminary") and card["findings"]:
        lines += [f"Preliminary: {text(card.get('preliminary_reason') or '')}.", ""]
    for number, finding in enumerate(card["findings"], 1):
        lines.append(f"{number}. {text(finding['text'])} *({text(finding['kind'])}; "
                     f"{text(finding['interval']['what'])}: {level_text(finding['interval'])} "
                     f"{interval_text(finding['interval'])})*")
    if card["findings"]:
        lines.append("")
    for path in card["files"].get("figures") or []:
        lines += [f"![{entry.title}: {text(Path(path).stem)}]"
                  f"({base}/{entry.name}/{url_quote(path)})", ""]
    return lines


def atlas_page(cards: Sequence[tuple[AtlasEntry, Mapping[str, Any]]], base: str = "atlas",
               card_doc: str = "card.md") -> str:
    """docs/atlas.md from the published cards (`base`: their folder, and `card_doc`: the page
    on reading a card, both relative to the page)."""
    lines = ["# Blind spots of common evaluators", "",
             f"The [evaluator cards]({card_doc}) of every evaluator that scores offline with what "
             "ships in evalstress, made by `evalstress atlas` on the built-in corpus (57 "
             "examples over 7 tasks). Each card runs the blind-spot tests (paper 002), "
             "discernment (paper 003) and the criteria response (paper 000) after a sanity "
             "gate; no adversarial search (it needs a gold evaluator) and no human correlation "
             "(the corpus has no human scores). Every number below comes from the cards' "
             f"card.json files (in `{base}/` beside this page); the run directories they rest "
             "on are not published: `evalstress atlas` makes them again.", "",
             "```bash", "evalstress atlas                 # every card, then this page",
             "evalstress atlas --only bleu     # one card, then this page",
             "evalstress atlas --page-only     # this page from the committed cards", "```", "",
             "## At a glance", "", *GLANCE_HEAD]
    lines += [glance_row(entry, card, base) for entry, card in cards]
    lines += ["", TIME_NOTE, "",
              GLANCE_NOTE, "",
              "## Side by side", "",
              compare_markdown(compare_cards([c for _, c in cards], [e.name for e, _ in cards]),
                               per_table=SIDE_BY_SIDE).rstrip(), ""]
    for entry, card in cards:
        lines += entry_section(entry, card, base)
    return "\n".join(lines).rstrip() + "\n"


def check_page(page: Path, published: Path, *, force: bool = False) -> None:
    """Refuse (OutDirError), before any work, a page that is a folder or a link, one inside
    the published cards it is made from (even with `force`), or an existing file evalstress
    did not write (unless `force`)."""
    if not page.is_symlink() and page.resolve().is_relative_to(published.resolve()):
        raise OutDirError(f"--page {page}: is inside --published {published}, whose cards the "
                          "page is made from; name a file outside it, e.g. docs/atlas.md")
    check_owned_file(page, "--page", force=force)


def write_page(published: Path, page: Path, *, force: bool = False) -> Path:
    """The page from the cards published in `published` (linked relative to the page); the
    page's folder records it as evalstress's."""
    check_page(page, published, force=force)
    cards = read_atlas(published)
    if not cards:
        raise ValueError(f"{published}: no published card (run `evalstress atlas` first)")
    return write_atlas_page(page, published, lambda base, card_doc: atlas_page(cards, base,
                                                                              card_doc))


def write_atlas_page(page: Path, published: Path, render: Callable[[str, str], str]) -> Path:
    """Write `render(base, card_doc)` at `page`, given the published cards' folder and the
    card page as links relative to it, and record the page as evalstress's (the atlas and the
    real-data atlas pages)."""
    base = Path(os.path.relpath(published, page.parent)).as_posix()
    card_doc = Path(os.path.relpath(published.parent / "card.md", page.parent)).as_posix()
    page.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(page, render(base, card_doc))
    record_files(page.parent, [page.name], "atlas", "atlas")
    return page


def prefixed(say: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda line: say(f"{name}: {line}")


def build_atlas(chosen: Sequence[AtlasEntry], *, work: Path = WORK,
                published: Path = PUBLISHED, page: Path = PAGE, cache_dir: Path | None = None,
                force: bool = False, say: Callable[[str], None] = lambda line: None,
                backend: str = "local", ray_address: str | None = None,
                exhaustive: bool = False) -> dict[str, float]:
    """Make each card in `work/<name>` (methods finished earlier are reused), publish it into
    `published/<name>` and write the page; returns each card's seconds in this call
    (`exhaustive`: every test on every example, see `plan_card`). Every
    card is planned (its spec and budget checked), and every file it would replace checked to
    be one evalstress wrote (`force`: any), before any runs."""
    check_page(page, published, force=force)
    for entry in chosen:
        check_published(published / entry.name, force=force)
    seconds = make_cards([(entry.name, plan_card(entry.spec, budget=entry.budget,
                                                 exhaustive=exhaustive),
                           f"card of {entry.spec} ({entry.budget} budget)") for entry in chosen],
                         work=work, published=published, cache_dir=cache_dir, force=force,
                         say=say, backend=backend, ray_address=ray_address)
    write_page(published, page, force=force)
    return seconds


def make_cards(plans: Sequence[tuple[str, CardPlan, str]], *, work: Path, published: Path,
               cache_dir: Path | None, force: bool, say: Callable[[str], None],
               backend: str = "local", ray_address: str | None = None) -> dict[str, float]:
    """Each (name, plan, what it is) as a card in `work/<name>` published in
    `published/<name>`, after checking that no card of other settings is replaced unasked;
    returns each card's seconds. The atlas and the real-data atlas make their cards here
    (`backend` and `ray_address`: where their stress methods score, one Ray for all)."""
    for name, plan, _ in plans:
        check_same_card(work / name, plan, force=force, what="--work")
    seconds = {}
    cluster = open_cluster([plan for _, plan, _ in plans], backend, ray_address)
    try:
        for name, plan, what in plans:
            started = time.perf_counter()
            say(f"{name}: {what}")
            make_card(plan, CardOptions(work / name, cache_dir=cache_dir,
                                        workers=card_workers(len(plan.examples), None),
                                        force=force, say=prefixed(say, name),
                                        backend=backend, ray_address=ray_address))
            publish_card(read_card(work / name), published / name)
            seconds[name] = time.perf_counter() - started
    finally:
        cluster.close()
    return seconds
