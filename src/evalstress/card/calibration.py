"""The card checked against known answers: cards of the planted evaluators
(`evaluators.planted`), each graded against the defect planted in it, and one docs page
(docs/calibration.md) with the card's detection rate and false alarms per defect, budget and
dataset.

The known answers are one declaration, `PLANTED`: for each defect, the blind-spot rows the
card must report (blind, reversed, or blind up to some severity, from card.json's row
`outcome`), the sanity gate's verdict, and whether any row may be decided at all (an
evaluator without signal gives the card nothing to decide). Every other row of the blind-spot
suite is a place where the evaluator has no defect: a blind or reversed verdict there is a
false alarm; a partly blind one (blind at light damage only) is counted apart, as what the
tolerance lets through, not as a defect stated.

The planted evaluators compare a text with its references; the calibration data gives each
example its own intact text as its only reference (`ORACLE`), so the control sees every
change a perturbation makes and a blind defect changes the score by exactly nothing. With the
data's real references the control's response to light damage is real but can be smaller than
the card's tolerance, and the card would rightly call it blind: an answer about the data, not
a known one about the card.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from evalstress.analyses.blindspot_stats import PARTLY_BLIND, partly_text
from evalstress.card.compare import read_card
from evalstress.card.make import make_card, plan_card
from evalstress.card.model import build_seconds, write_atomic
from evalstress.card.run import CardOptions, card_workers, check_same_card
from evalstress.core.strict import check_names
from evalstress.engine.outdir import OutDirError, check_owned_file, record_files

WORK = Path("runs/calibration")
PAGE = Path("docs/calibration.md")
#: the graded results the page is written from, beside it
RESULTS = Path("docs/calibration.json")
BUDGETS = ("small", "standard")
#: the blind-spot suite's perturbations, in the card's order
PERTURBATIONS = ("truncation", "token-drop", "repeated-token", "local-swap", "article-removal",
                 "noised-punctuation", "sentence-switching", "repetition")
#: a row's outcomes that state a defect
DEFECT_OUTCOMES = ("blind", "reversed")
#: each known answer and the row outcomes that give it: a defect that saturates is blind at
#: light damage, up to a severity that depends on each text, so "blind up to s" and "blind at
#: every severity" both report it
ANSWERS = {"blind": ("blind",), "reversed": ("reversed",), PARTLY_BLIND: (PARTLY_BLIND, "blind")}
#: how the page words each known answer
WORDS = {PARTLY_BLIND: "blind up to some severity"}


@dataclass(frozen=True)
class Planted:
    """One evaluator of the calibration and its known answer: `defect` (its name on the
    page and its folder), `rows` (perturbation -> the outcome the card must give: blind,
    reversed or partly blind, see ANSWERS), `gate` (pass, fail, or "not pass": warn or
    fail), `signal` (False: the evaluator carries none, so no row may be decided either
    way), and `control` (a clean evaluator: the card must report nothing on it)."""

    defect: str
    spec: str
    why: str
    rows: Mapping[str, str] = field(default_factory=dict)
    gate: str = "pass"
    signal: bool = True
    control: bool = False


#: the known answers, derived from what each perturbation changes (docs/calibration.md)
PLANTED = (
    Planted("none", "planted:defect=none",
            "the control: every perturbation changes tokens it counts, in order",
            control=True),
    Planted("order-blind", "planted:defect=order-blind",
            "local-swap and sentence-switching move tokens and keep every character, so "
            "its bag of characters stays the same",
            rows={"local-swap": "blind", "sentence-switching": "blind"}),
    Planted("punctuation-blind", "planted:defect=punctuation-blind",
            "noised-punctuation changes only marks, which it drops",
            rows={"noised-punctuation": "blind"}),
    Planted("length-only", "planted:defect=length-only",
            "local-swap, sentence-switching and noised-punctuation keep the word count; "
            "repeated-token and repetition add words, which it rewards",
            rows={"local-swap": "blind", "sentence-switching": "blind",
                  "noised-punctuation": "blind", "repeated-token": "reversed",
                  "repetition": "reversed"}),
    Planted("constant", "planted:defect=constant",
            "one number for every text: nothing moves it, and the gate finds no spread",
            rows={p: "blind" for p in PERTURBATIONS}, gate="fail"),
    Planted("random", "planted:defect=random",
            "a seeded draw per text: no row can be decided and the original does not beat "
            "heavy damage", gate="not pass", signal=False),
    Planted("deletion-rewarding", "planted:defect=deletion-rewarding",
            "truncation, token-drop and article-removal delete words, and the reward for "
            "each outweighs what the overlap loses",
            rows={"truncation": "reversed", "token-drop": "reversed",
                  "article-removal": "reversed"}),
    Planted("saturating", "planted:defect=saturating",
            "capped at 50 where the intact text scores 100: the lightest severity of these "
            "keeps every text's overlap above the cap, so the card must find it blind there, "
            "up to the severity where the damage pulls the overlap under the cap (it depends "
            "on each text; repetition's ten copies can push a short text below it, so it has "
            "no known answer there)",
            rows={p: PARTLY_BLIND for p in PERTURBATIONS if p != "repetition"}),
    Planted("chrf", "chrf", "a real control: sacreBLEU's chrF counts character 1- to "
            "6-grams, punctuation included, so every perturbation changes some", control=True),
    Planted("rougeL", "rouge:types=rougeL",
            "a real evaluator with a known defect: rouge-score's tokenizer turns every "
            "character but letters and digits into a space, so noised-punctuation (marks "
            "swapped for marks) leaves its tokens as they were",
            rows={"noised-punctuation": "blind"}),
)


@dataclass(frozen=True)
class Dataset:
    """Data a calibration card runs on: a file (None: the built-in corpus) and how its
    fields map, the intact text mapped to the references too (`ORACLE`)."""

    name: str
    title: str
    path: Path | None
    field_map: Mapping[str, str]
    task: str | None = None

    def file(self) -> Path:
        if self.path is not None:
            return self.path
        return Path(str(resources.files("evalstress") / "corpus" / "sample.jsonl"))


ORACLE = "each example's intact text is its only reference"
#: how the page names each dataset
TITLES = {"builtin": "built-in corpus (7 tasks)",
          "summeval": "SummEval CNN/DM highlights (summarization)"}
BUILTIN = Dataset("builtin", TITLES["builtin"], None,
                  {"references": "hypothesis"})


def summeval(path: Path) -> Dataset:
    """SummEval (../shared/data/summeval.jsonl): the CNN/DM highlight is the text."""
    return Dataset("summeval", TITLES["summeval"], path,
                   {"hypothesis": "highlight", "references": "highlight"}, "summarization")


def observed(card: Mapping[str, Any]) -> dict[str, Any]:
    """What a card says, from card.json's structured fields: each blind-spot row's outcome
    (by perturbation), where each partly blind row stops being blind, and the gate's
    verdict."""
    results = card["methods"]["blindspot"].get("results") or {}
    rows = results.get("rows") or []
    return {"gate": card["gate"]["verdict"],
            "rows": {r["perturbation"]: r.get("outcome", "inconclusive") for r in rows},
            "partly": {r["perturbation"]: partly_text(r) for r in rows
                       if r.get("outcome") == PARTLY_BLIND}}


def grade(planted: Planted, seen: Mapping[str, Any]) -> dict[str, Any]:
    """The card's answer against the known one: each planted defect found or missed, and each
    false alarm (a defect stated where none is planted; for an evaluator without signal, any
    decided row; a gate that fails an evaluator the gate should pass), and, apart, each
    clean row the card calls partly blind."""
    rows: Mapping[str, str] = seen["rows"]
    partly: Mapping[str, str] = seen.get("partly") or {}
    found: list[str] = []
    missed: list[str] = []
    alarms: list[str] = []
    light: list[str] = []
    for perturbation, outcome in planted.rows.items():
        got = rows.get(perturbation, "not run")
        said = partly.get(perturbation, got)
        (found if got in ANSWERS[outcome] else missed).append(
            f"{perturbation}: {WORDS.get(outcome, outcome)} (card: {said})")
    clean = [p for p in PERTURBATIONS if p not in planted.rows and p in rows]
    for perturbation in clean:
        outcome = rows[perturbation]
        if outcome in DEFECT_OUTCOMES or (not planted.signal and outcome != "inconclusive"):
            alarms.append(f"{perturbation}: {partly.get(perturbation, outcome)}")
        elif outcome == PARTLY_BLIND:
            light.append(f"{perturbation}: {partly.get(perturbation, outcome)}")
    gate = seen["gate"]
    if planted.gate == "pass":
        if gate == "fail":
            alarms.append("gate: fail")
    else:
        ok = gate == "fail" if planted.gate == "fail" else gate != "pass"
        (found if ok else missed).append(f"gate: {planted.gate} (card: {gate})")
    return {"defect": planted.defect, "spec": planted.spec, "expected": len(found) + len(missed),
            "found": found, "missed": missed, "checks": len(clean) + (planted.gate == "pass"),
            "false_alarms": alarms, "partly_blind": light, "observed": dict(seen)}


def entries(only: Sequence[str] | None = None) -> list[Planted]:
    """The planted evaluators, or those named in `only` (an unknown one: a did-you-mean)."""
    if not only:
        return list(PLANTED)
    check_names("planted defect", {name: None for name in only}, [p.defect for p in PLANTED],
                "--only")
    return [p for p in PLANTED if p.defect in only]


def check_targets(page: Path, results: Path, *, force: bool = False) -> None:
    """Refuse (OutDirError), before any card runs, a page or results file evalstress did not
    write (unless `force`), a link, or a folder."""
    for path, what in ((page, "--page"), (results, "--results")):
        check_owned_file(path, what, force=force)
    if page.resolve() == results.resolve():
        raise OutDirError(f"--page {page} and --results {results} name one file")


def run_calibration(datasets: Sequence[Dataset], budgets: Sequence[str],
                    chosen: Sequence[Planted], *, work: Path = WORK,
                    cache_dir: Path | None = None, force: bool = False,
                    say: Callable[[str], None] = lambda line: None) -> list[dict[str, Any]]:
    """A card of each planted evaluator on each dataset and budget, made in
    work/<dataset>/<budget>/<defect> (finished methods reused), each graded; every card is
    planned (spec, budget and data checked) before any runs."""
    plans = [(data, budget, planted,
              plan_card(planted.spec, data=data.file(), field_map=dict(data.field_map),
                        task=data.task, budget=budget))
             for data in datasets for budget in budgets for planted in chosen]
    for data, budget, planted, plan in plans:  # no card of other settings is replaced unasked
        check_same_card(work / data.name / budget / planted.defect, plan, force=force,
                        what="--work")
    graded = []
    for data, budget, planted, plan in plans:
        folder = work / data.name / budget / planted.defect
        say(f"{data.name} {budget} {planted.defect}")
        started = time.perf_counter()
        make_card(plan, CardOptions(folder, cache_dir=cache_dir, force=force,
                                    workers=card_workers(len(plan.examples), None)))
        card = read_card(folder)
        graded.append({"dataset": data.name, "dataset_title": data.title, "budget": budget,
                       "examples": card["data"]["examples"], **grade(planted, observed(card)),
                       "seconds": round(time.perf_counter() - started, 1),
                       "build_seconds": round(build_seconds(card["cost"]), 1)})
    return graded


def summary(graded: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per dataset and budget: planted defects found of those expected (the card's
    sensitivity), false alarms of the clean checks (1 - its specificity), and clean rows
    called partly blind."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for g in graded:
        key = (g["dataset"], g["budget"])
        row = out.setdefault(key, {"dataset": g["dataset"], "budget": g["budget"],
                                   "found": 0, "expected": 0, "false_alarms": 0, "checks": 0,
                                   "partly_blind": 0})
        row["found"] += len(g["found"])
        row["expected"] += g["expected"]
        row["false_alarms"] += len(g["false_alarms"])
        row["checks"] += g["checks"]
        row["partly_blind"] += len(g.get("partly_blind") or [])
    return list(out.values())


def share(part: int, whole: int) -> str:
    return f"{part} of {whole}" + (f" ({part / whole:.0%})" if whole else "")


def cell(items: Sequence[str]) -> str:
    return "; ".join(items).replace("|", "/") or "none"


def calibration_page(graded: Sequence[Mapping[str, Any]],
                     results: str = "calibration.json") -> str:
    """docs/calibration.md from the graded cards."""
    minutes = sum(float(g.get("seconds") or 0) for g in graded) / 60
    lines = ["# The card checked against known answers", "",
             "Each evaluator below has one defect planted in it on purpose (or none: the "
             "controls), or, for two real metrics, a defect or none known from how they are "
             "computed, so the right answer of its [evaluator card](card.md) is known before "
             "the card runs. `evalstress calibrate` makes a card of each, reads the verdicts "
             "from card.json (the four-way blind-spot `outcome` of each perturbation and the "
             "sanity gate's `verdict`), and grades them: a planted defect the card reports is "
             "*found*; a blind or reversed verdict where nothing is planted, or a failed gate "
             "on an evaluator with spread, is a *false alarm*; a row blind only at light "
             "damage where nothing is planted (*partly blind*: blind up to a severity, "
             "detected beyond it) is counted apart. The numbers come from "
             f"[{results}]({results}) beside this page.", "",
             "```bash",
             "evalstress calibrate                                          # built-in corpus",
             "evalstress calibrate --summeval ../shared/data/summeval.jsonl  # and SummEval",
             "evalstress calibrate --page-only                              # page from the "
             "results", "```", "",
             "`--only DEFECT` and `--budget NAME` make only those cards; the results of the "
             "others are kept. The planted evaluators are real evaluators: "
             "`evalstress card planted:defect=order-blind` makes one card.", "",
             "## Detection rate and false alarms", "",
             "| dataset | budget | planted defects found | false alarms (of clean checks) "
             "| partly blind (of clean checks) |",
             "|---|---|---|---|---|"]
    for row in summary(graded):
        lines.append(f"| {row['dataset']} | {row['budget']} | "
                     f"{share(row['found'], row['expected'])} | "
                     f"{share(row['false_alarms'], row['checks'])} | "
                     f"{share(row['partly_blind'], row['checks'])} |")
    seen: dict[str, dict[str, Any]] = {}
    for g in graded:
        seen.setdefault(g["dataset"], {"title": TITLES.get(g["dataset"], g["dataset"]),
                                       "n": {}})["n"][g["budget"]] = g["examples"]
    lines += ["", "Datasets: " + "; ".join(
        f"{name}, the {d['title']}: " + ", ".join(f"{n} examples at the {b} budget"
                                               for b, n in d["n"].items())
        for name, d in seen.items()) + "."]
    lines += ["", f"Data: {ORACLE} (`evaluators.planted` compares a text with its "
              "references), so the control sees every change and a blind defect changes the "
              "score by exactly nothing. The small budget has 8 examples: the card decides "
              "nothing on fewer than 10 (every row stays inconclusive), so only the gate can "
              "find a defect there.", "",
              "A false alarm names the row and the card's outcome. Two rules of the card "
              "shape them: the tolerance is 0.2 x the standard deviation of the originals' "
              "scores, so a score that varies a lot between texts (a length) treats a real "
              "but small response to light damage as none; and a row is blind only when its "
              "heaviest severity is blind. A row blind at its lighter severities alone is "
              "*partly blind* (\"blind up to 0.2 (detects from 0.4)\"): on a clean row that "
              "is the tolerance at work on light damage, which the card reports as such and "
              "ranks below its blind spots, so it is listed apart and not counted as a false "
              "alarm. A defect that saturates is such a row by design: it is found when the "
              "card calls it blind up to some severity (or blind at every one)."]
    lines += ["", f"The {len(graded)} cards took {minutes:.1f} min in all (each card's wall "
              "time, its methods and grading) on this project's shared 2-core machine."]
    lines += ["", "## The known answers", "",
              "| defect | spec | the card must report | why |", "|---|---|---|---|"]
    for planted in PLANTED:
        wanted = [f"{p}: {WORDS.get(o, o)}" for p, o in planted.rows.items()]
        if planted.gate != "pass":
            wanted.append(f"gate: {planted.gate}")
        if not planted.signal:
            wanted.append("no decided row")
        lines.append(f"| {planted.defect} | `{planted.spec}` | {cell(wanted)} | "
                     f"{planted.why} |")
    lines += ["", "Every other perturbation of the blind-spot suite is a clean check: there "
              "the evaluator behaves as the control, so the card must not say blind or "
              "reversed.", "", "## Per defect", "",
              "| dataset | budget | defect | found | missed | false alarms | partly blind "
              "| gate |",
              "|---|---|---|---|---|---|---|---|"]
    for g in graded:
        lines.append(f"| {g['dataset']} | {g['budget']} | {g['defect']} | "
                     f"{share(len(g['found']), g['expected'])} | {cell(g['missed'])} | "
                     f"{cell(g['false_alarms'])} | {cell(g.get('partly_blind') or [])} | "
                     f"{g['observed']['gate']} |")
    return "\n".join(lines).rstrip() + "\n"


def card_key(card: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(card["dataset"]), str(card["budget"]), str(card["defect"]))


def merged(earlier: Sequence[Mapping[str, Any]], graded: Sequence[Mapping[str, Any]]
           ) -> list[Mapping[str, Any]]:
    """The earlier results with each card graded now put in its place (a card of a new
    dataset, budget or defect added), in the calibration's order: datasets, budgets and
    defects as `PLANTED` lists them."""
    cards = {card_key(c): c for c in earlier}
    cards.update({card_key(c): c for c in graded})
    defects = [p.defect for p in PLANTED]
    budgets = {name: i for i, name in enumerate(BUDGETS)}
    datasets = list(dict.fromkeys(c["dataset"] for c in [*earlier, *graded]))
    return sorted(cards.values(), key=lambda c: (
        datasets.index(c["dataset"]), budgets.get(c["budget"], len(budgets)), c["budget"],
        defects.index(c["defect"]) if c["defect"] in defects else len(defects)))


def read_results(results: Path) -> list[dict[str, Any]]:
    """The graded cards of a results file (a ValueError naming it when it is not one)."""
    if not results.is_file():
        raise ValueError(f"{results}: no calibration results (run `evalstress calibrate`)")
    try:
        cards = json.loads(results.read_text(encoding="utf-8"))["cards"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{results}: not a calibration results file ({exc})") from None
    return list(cards)


def write_results(graded: Sequence[Mapping[str, Any]], page: Path, results: Path, *,
                  force: bool = False) -> None:
    """The graded results (JSON; cards of an earlier run that were not made again kept) and
    the page written from them, each recorded as evalstress's in its folder's marker."""
    check_targets(page, results, force=force)
    earlier = read_results(results) if results.is_file() else []
    results.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(results, json.dumps({"cards": merged(earlier, graded)}, indent=1) + "\n")
    record_files(results.parent, [results.name], "calibrate", "calibration")
    write_page(page, results, force=force)


def write_page(page: Path, results: Path, *, force: bool = False) -> None:
    """The page from the results file (`evalstress calibrate --page-only`), which is only
    read."""
    check_owned_file(page, "--page", force=force)
    if page.resolve() == results.resolve():
        raise OutDirError(f"--page {page} and --results {results} name one file")
    cards = read_results(results)
    link = Path(results).name if results.parent.resolve() == page.parent.resolve() \
        else str(results)
    page.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(page, calibration_page(cards, link))
    record_files(page.parent, [page.name], "calibrate", "calibration")
