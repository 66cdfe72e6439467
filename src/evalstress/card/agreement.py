"""The card's agreement block (`analyses.agreement`) in words and tables: the claims the
human-correlation method may make, the rows card.md and card.html show, and the row of
`evalstress compare`.

A claim is read off the Holm-corrected interval of Kendall's tau-b (over every aspect tested at
that level), never off the best of several uncorrected intervals: "agrees" only where that
interval lies above 0, "ranks against" only where it lies below, else undecided, with the
items that would settle it. Krippendorff's alpha stands beside it with its own interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: how a claim names a level
LEVEL_WORDS = {"item": "at item level (per item, across its outputs)",
               "system": "at system level (each system's mean over the items)"}
STATISTIC_WORDS = {"tau_b": "Kendall tau-b", "alpha": "Krippendorff alpha (ordinal, on ranks)"}
HEADERS = ["aspect", "human", "level", "statistic", "value", "95% CI", "corrected CI",
           "verdict", "n"]
HUMAN_HEADERS = ["human", "raters", "level", "statistic", "value", "95% CI", "n"]
PAIR_HEADERS = ["aspect", "human", "pairs", "agree", "evaluator ties", "accuracy",
                "95% CI (Wilson)", "95% CI (items drawn)"]


@dataclass
class Claim:
    """One finding of the block: its kind (`findings.RANKS`), words, the row it rests on
    (tau-b's, with alpha's beside it) and the interval it quotes."""

    kind: str
    text: str
    row: dict[str, Any]
    low: float | None
    high: float | None
    conf: float
    magnitude: float
    #: what the quoted interval measures, and how its bounds read (`findings.interval`)
    statistic: str = "Kendall tau-b"
    unit: str = "correlation"


def bounds(low: float | None, high: float | None) -> str:
    return "no interval" if low is None or high is None else f"{low:.2f} to {high:.2f}"


def level_share(conf: float) -> str:
    """'97.5%': the corrected interval's level, as few digits as it needs."""
    return f"{conf * 100:.4g}%"


def claims(block: Mapping[str, Any]) -> list[Claim]:
    """Per level, one claim: the aspect it agrees with most (or ranks most against) among
    those whose corrected interval excludes 0; else undecided, on the aspect nearest to
    deciding."""
    every = block.get("rows") or []
    rows = [r for r in every if r.get("value") is not None]
    out = []
    for level in dict.fromkeys(r["level"] for r in rows):
        taus = [r for r in rows if r["level"] == level and r["statistic"] == "tau_b"]
        if not taus:
            continue
        family = sum(1 for r in every if r["level"] == level and r["statistic"] == "tau_b")
        agree = [r for r in taus if r["verdict"] == "agrees"]
        against = [r for r in taus if r["verdict"] == "disagrees"]
        if agree:
            row, kind, lead = max(agree, key=lambda r: r["value"]), "human correlation", "Agrees with"
        elif against:
            row, kind, lead = min(against, key=lambda r: r["value"]), "reversed", "Ranks against"
        else:
            row, kind, lead = max(taus, key=lambda r: abs(r["value"])), "inconclusive", \
                "Undecided whether it agrees with"
        alpha = next((r for r in rows if r["level"] == level and r["statistic"] == "alpha"
                      and r["human"] == row["human"] and r["aspect"] == row["aspect"]), None)
        out.append(Claim(kind, claim_text(lead, row, alpha, family, block), {**row,
                         "method": row["statistic"]}, row.get("low"), row.get("high"),
                         float(row.get("conf") or 0.95), abs(float(row["value"]))))
    return out + preference_claims(block)


def claim_text(lead: str, row: Mapping[str, Any], alpha: Mapping[str, Any] | None,
               family: int, block: Mapping[str, Any]) -> str:
    correction = (f"Holm over {family} aspects" if family > 1 else "one aspect tested")
    where = LEVEL_WORDS.get(str(row["level"]), f"at {row['level']} level")
    text = (f"{lead} human {row['human']} ratings {where}: Kendall tau-b {row['value']:.2f} "
            f"({level_share(row['conf'])} CI {bounds(row.get('low'), row.get('high'))}, "
            f"{correction}")
    if alpha is not None:
        text += (f"; Krippendorff alpha {alpha['value']:.2f}, CI "
                 f"{bounds(alpha.get('low'), alpha.get('high'))}")
    drawn = row.get("items") or block.get("items")
    text += (f"; {row['n']} systems, {drawn} items resampled" if row["level"] == "system"
             else f"; {row['n']} items resampled")
    text += f"; {raters_words(block, row)})"
    if row.get("verdict") == "inconclusive" and row.get("n_to_settle"):
        text += f"; about {row['n_to_settle']} items would settle it at this spread"
    return text + "."


def raters_words(block: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """The raters' own agreement on the claim's aspect and level, or why there is none."""
    among = next((r for r in block.get("human_human") or [] if r["human"] == row["human"]
                  and r["level"] == row["level"] and r["statistic"] == "tau_b"
                  and r.get("value") is not None), None)
    if among is None:
        note = str(block.get("human_human_note") or "not available")
        return "the raters among themselves: " + note.replace(
            "not available: ", "not available, as ")
    return (f"the raters among themselves: tau-b {among['value']:.2f}, 95% CI "
            f"{bounds(among.get('ci_low'), among.get('ci_high'))}")


def table_rows(block: Mapping[str, Any]) -> list[list[Any]]:
    """The block's rows for card.md and card.html (HEADERS)."""
    return [[r["aspect"], r["human"], r["level"], STATISTIC_WORDS.get(r["statistic"],
             r["statistic"]), r["value"], bounds(r.get("ci_low"), r.get("ci_high")),
             f"{bounds(r.get('low'), r.get('high'))} ({level_share(r['conf'])})",
             r["verdict"], r["n"]] for r in block.get("rows") or []]


def human_rows(block: Mapping[str, Any]) -> list[list[Any]]:
    """The raters among themselves (HUMAN_HEADERS); [] where the data has one score."""
    return [[r["human"], r["evaluator"], r["level"], STATISTIC_WORDS.get(r["statistic"],
             r["statistic"]), r["value"], bounds(r.get("ci_low"), r.get("ci_high")), r["n"]]
            for r in block.get("human_human") or []]


def pair_rows(block: Mapping[str, Any]) -> list[list[Any]]:
    """The derived pairs (PAIR_HEADERS)."""
    return [[r["aspect"], r["human"], r["pairs"], r["agree"], r["evaluator_ties"],
             r["accuracy"], bounds(r.get("ci_low"), r.get("ci_high")),
             bounds(r.get("item_low"), r.get("item_high"))]
            for r in block.get("pairs") or []]


def notes(block: Mapping[str, Any]) -> list[str]:
    """What the tables rest on, in sentences under them."""
    method = block.get("method") or {}
    if not block.get("rows") and block.get("preferences"):  # preference pairs only
        return preference_notes(block)
    out = [f"{block.get('items')} items" + (f", {block.get('systems')} systems"
                                            if block.get("systems") else ""),
           *(str(method[k]) for k in ("item", "system", "alpha", "interval", "correction",
                                      "pairs") if method.get(k))]
    out += [str(n) for n in block.get("notes") or []]
    if block.get("human_human_note"):
        out.append(f"Agreement among the human raters: {block['human_human_note']}.")
    return out + preference_notes(block)


def compare_cells(blocks: Sequence[Mapping[str, Any] | None], aspects: Sequence[str]
                  ) -> list[tuple[str, list[str | None], list[str | None]]]:
    """`evalstress compare`'s agreement rows: per (human aspect, level), each card's tau-b
    with its corrected interval and alpha, and its verdict ('pass' where it agrees, 'fail'
    where it ranks against)."""
    keys: list[tuple[str, str]] = []
    found: dict[tuple[int, str, str, str], Mapping[str, Any]] = {}
    for index, (block, aspect) in enumerate(zip(blocks, aspects, strict=True)):
        for row in (block or {}).get("rows") or []:
            if row["aspect"] != aspect:
                continue
            key = (row["human"], row["level"])
            keys += [key] if key not in keys else []
            found[(index, *key, row["statistic"])] = row
    out = []
    for human, level in keys:
        cells: list[str | None] = []
        verdicts: list[str | None] = []
        for index in range(len(blocks)):
            tau = found.get((index, human, level, "tau_b"))
            alpha = found.get((index, human, level, "alpha"))
            if tau is None or tau.get("value") is None:
                cells.append(None)
                verdicts.append(None)
                continue
            cell = f"tau-b {tau['value']:.2f} ({bounds(tau.get('low'), tau.get('high'))})"
            if alpha is not None and alpha.get("value") is not None:
                cell += f", alpha {alpha['value']:.2f}"
            cells.append(cell)
            verdicts.append({"agrees": "pass", "disagrees": "fail"}.get(tau["verdict"]))
        out.append((f"agreement with human {human}, {level} level", cells, verdicts))
    return out


#: the preference pairs' table (the block's `preferences`, `analyses.preference`)
PREFERENCE_HEADERS = ["aspect", "human", "reading", "pairs", "agree", "ties / flips",
                      "accuracy", "95% CI (Wilson)", "95% CI (items drawn)", "corrected CI",
                      "verdict", "items"]
RATER_HEADERS = ["human", "raters", "pairs", "Krippendorff alpha (nominal)", "95% CI",
                 "rater pairs alike"]
PREFERENCE_VERDICTS = {"agrees": "agrees beyond chance",
                       "disagrees": "prefers what people reject",
                       "inconclusive": "inconclusive"}


def preference_block(block: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The preference pairs' block inside an agreement block ({} without one)."""
    return (block or {}).get("preferences") or {}


def preference_missing(block: Mapping[str, Any] | None) -> list[tuple[str, int, int, str]]:
    """Per evaluator aspect and reading of the preference tests: (what, pairs without a pick,
    pairs people decided, the commonest reason a score went missing), the run-health check's
    reading. The human aspects of one evaluator aspect share its picks; the one that decided
    the most pairs stands for them."""
    prefs = preference_block(block)
    reasons = [h.get("top_reason") or "" for h in prefs.get("health") or []
               if h.get("missing")]
    worst: dict[tuple[str, str], tuple[str, int, int, str]] = {}
    for r in prefs.get("rows") or []:
        key, decided = (r["aspect"], r["reading"]), r["missing"] + r["pairs"]
        if key not in worst or decided > worst[key][2]:
            worst[key] = (f"{r['evaluator']} on the preference pairs ({r['aspect']}, "
                          f"{r['reading']})", r["missing"], decided,
                          reasons[0] if reasons and r["reading"] == "scores" else "")
    return list(worst.values())


def preference_rows(block: Mapping[str, Any] | None) -> list[list[Any]]:
    """The preference tests (PREFERENCE_HEADERS)."""
    return [[r["aspect"], r["human"], r["reading"], r["pairs"], r["agree"],
             f"{r['evaluator_ties']} / {r['flips']}", r["accuracy"],
             bounds(r.get("ci_low"), r.get("ci_high")),
             bounds(r.get("item_low"), r.get("item_high")),
             f"{bounds(r.get('low'), r.get('high'))} ({level_share(r['conf'])})",
             PREFERENCE_VERDICTS.get(r["verdict"], r["verdict"]), r["items"]]
            for r in preference_block(block).get("rows") or []]


def rater_rows(block: Mapping[str, Any] | None) -> list[list[Any]]:
    """The raters among themselves on the preference pairs (RATER_HEADERS)."""
    return [[r["human"], r["raters"], r["pairs"], r["alpha"],
             bounds(r.get("ci_low"), r.get("ci_high")), r["agreement"]]
            for r in preference_block(block).get("raters") or []]


def preference_notes(block: Mapping[str, Any] | None) -> list[str]:
    """What the preference table rests on, in sentences under it."""
    prefs = preference_block(block)
    if not prefs:
        return []
    data = prefs.get("data") or {}
    method = prefs.get("method") or {}
    skipped = [f"{r['aspect']} on {r['human']} ({r['reading']}): {r['human_ties']} pairs "
               f"people called a tie and {r['missing']} without an answer left out"
               for r in prefs.get("rows") or [] if r["human_ties"] or r["missing"]]
    return [f"{prefs.get('pairs')} preference pairs on {prefs.get('items')} items"
            + (f" from {data['file']}" if data.get("file") else ""),
            *(str(v) for v in (method.get("readings") or {}).values()),
            *(str(method[k]) for k in ("accuracy", "interval", "correction", "raters")
              if method.get(k)),
            *skipped, *(str(n) for n in prefs.get("notes") or [])]


def preference_claims(block: Mapping[str, Any] | None) -> list[Claim]:
    """One claim of the preference pairs: the test that agrees most (or falls most below
    chance) among those the corrected interval decides, else the one nearest to deciding."""
    prefs = preference_block(block)
    rows = [r for r in prefs.get("rows") or [] if r.get("accuracy") is not None]
    if not rows:
        return []
    agree = [r for r in rows if r["verdict"] == "agrees"]
    against = [r for r in rows if r["verdict"] == "disagrees"]
    if agree:
        row, kind, lead = max(agree, key=lambda r: r["accuracy"]), "human correlation", \
            "Picks the output people preferred"
    elif against:
        row, kind, lead = min(against, key=lambda r: r["accuracy"]), "reversed", \
            "Picks the output people rejected"
    else:
        row, kind, lead = max(rows, key=lambda r: abs(r["accuracy"] - 0.5)), "inconclusive", \
            "Undecided whether it picks the output people preferred"
    return [Claim(kind, preference_text(lead, row, prefs), {**row, "method": "preference"},
                  row.get("low"), row.get("high"), float(row.get("conf") or 0.95),
                  abs(float(row["accuracy"]) - 0.5), "preference accuracy", "rate")]


def preference_text(lead: str, row: Mapping[str, Any], prefs: Mapping[str, Any]) -> str:
    tests = len(prefs.get("rows") or [])
    reading = ("its scores of the two outputs" if row["reading"] == "scores"
               else "asked in both orders, a verdict that flips counting as a miss")
    text = (f"{lead} ({row['human']}, {reading}) in {row['agree']} of {row['pairs']} pairs: "
            f"accuracy {row['accuracy']:.2f} ({level_share(row['conf'])} CI "
            f"{bounds(row.get('low'), row.get('high'))} drawing {row['items']} items, "
            + (f"Holm over {tests} tests" if tests > 1 else "one test")
            + f"; Wilson 95% CI {bounds(row.get('ci_low'), row.get('ci_high'))}; chance 0.5")
    rater = next((r for r in prefs.get("raters") or [] if r["human"] == row["human"]), None)
    if rater is not None and rater.get("alpha") is not None:
        text += (f"; the raters among themselves: alpha {rater['alpha']:.2f}, 95% CI "
                 f"{bounds(rater.get('ci_low'), rater.get('ci_high'))}")
    text += ")"
    if row.get("verdict") == "inconclusive" and row.get("n_to_settle"):
        text += f"; about {row['n_to_settle']} items would settle it at this spread"
    return text + "."


def preference_compare_cells(blocks: Sequence[Mapping[str, Any] | None]
                             ) -> list[tuple[str, list[str | None], list[str | None]]]:
    """`evalstress compare`'s preference rows: per (human aspect, reading), each card's best
    accuracy over its aspects with the corrected interval, and its verdict."""
    keys: list[tuple[str, str]] = []
    found: dict[tuple[int, str, str], Mapping[str, Any]] = {}
    for index, block in enumerate(blocks):
        for row in preference_block(block).get("rows") or []:
            key = (row["human"], row["reading"])
            keys += [key] if key not in keys else []
            best = found.get((index, *key))
            if row.get("accuracy") is not None and (
                    best is None or row["accuracy"] > best["accuracy"]):
                found[(index, *key)] = row
    out = []
    for human, reading in keys:
        rows = [found.get((i, human, reading)) for i in range(len(blocks))]
        cells: list[str | None] = [
            None if r is None else f"{r['accuracy']:.2f} ({bounds(r.get('low'), r.get('high'))}"
            f", {r['pairs']} pairs)" for r in rows]
        verdicts: list[str | None] = [
            None if r is None else {"agrees": "pass", "disagrees": "fail"}.get(r["verdict"])
            for r in rows]
        out.append((f"human preference {human}, {reading}", cells, verdicts))
    return out


def preference_lines(section: Mapping[str, Any] | None) -> list[str]:
    """The terminal's lines on the preference pairs: each test's accuracy, corrected interval
    and verdict ([] where the card has none)."""
    block = ((section or {}).get("results") or {}).get("agreement")
    rows = preference_block(block).get("rows") or []
    if not rows:
        return []
    prefs = preference_block(block)
    lines = [f"human preferences ({prefs.get('pairs')} pairs, {prefs.get('items')} items, "
             f"Holm over {len(rows)} tests; chance 0.5):"]
    for r in rows:
        accuracy = "-" if r["accuracy"] is None else f"{r['accuracy']:.2f}"
        lines.append(f"  {r['aspect']} on {r['human']}, {r['reading']}: accuracy {accuracy} "
                     f"in {r['pairs']} pairs ({level_share(r['conf'])} CI "
                     f"{bounds(r.get('low'), r.get('high'))}, items drawn): "
                     f"{PREFERENCE_VERDICTS.get(r['verdict'], r['verdict'])}")
    return lines
