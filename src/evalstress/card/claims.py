"""The papers' published findings beside the real-data atlas's cards: each claim of papers 002,
003 and 000 that a card here can speak to, marked agree, disagree or not comparable, with why.

A claim is checked against the four-way verdicts of the card's blind-spot rows (decided by
intervals over examples, `analyses.verdicts`), never against a point estimate: "the metric
fails this test" (paper 002's sense: the damaged text does not score lower) agrees with a row
that is blind (at its heaviest severity, `analyses.blindspot_stats.row_state`) or reversed
and disagrees with one that detects; a row blind at its light severities only is *partly*
so (blind up to a severity, the heavier damage detected or undecided), its own word for
"fails" and "passes" alike; an inconclusive row, a card not made, or a test that could not
run is not comparable, and the reason says which. Claims that
no card here can test (another data set, larger judges) carry their standing reason.
The claims are written in this project's words; their facts are the papers'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalstress.analyses.blindspot_stats import PARTLY_BLIND, partly_text
from evalstress.analyses.verdicts import settle_text

AGREE, DISAGREE, NOT_COMPARABLE = "agree", "disagree", "not comparable"
#: the paper's claim holds at light damage only, or only at heavy damage: blind up to s
PARTLY = "partly"
#: what the paper says of the test: fails (the damage does not lower the score: blind or
#: reversed), reversed (the damage raises it), detects (it lowers it)
EXPECTED = {"fails": ("blind", "reversed"), "reversed": ("reversed",), "detects": ("detects",)}


@dataclass(frozen=True)
class Claim:
    """One published finding: paper, where, what it says (our words), and what tests it here:
    a card, one perturbation (None: every row of the card) and an aspect (None: the card's
    only one), and what the paper found; or `standing`, why no card here can test it."""

    paper: str
    where: str
    text: str
    card: str | None = None
    perturbation: str | None = None
    aspect: str | None = None
    expect: str = "fails"
    standing: str = ""


CLAIMS = (
    Claim("002", "Table 1, App. I", "Cutting the end off CNN/DM summaries does not lower "
          "ROUGE-2.", "rouge2-summeval", "truncation"),
    Claim("002", "Table 1, App. I", "Cutting the end off CNN/DM summaries does not lower "
          "ROUGE-L.", "rougeL-summeval", "truncation"),
    Claim("002", "Table 1, App. I", "Swapping punctuation marks does not lower ROUGE-2 on "
          "CNN/DM.", "rouge2-summeval", "noised-punctuation"),
    Claim("002", "Table 1, App. I", "Swapping punctuation marks does not lower ROUGE-L on "
          "CNN/DM.", "rougeL-summeval", "noised-punctuation"),
    Claim("002", "Table 1, Fig. 5", "Truncation does not lower BERTScore precision on CNN/DM "
          "(precision rises as the text gets shorter).", "bertscore-summeval", "truncation",
          "precision"),
    Claim("002", "Table 1, Fig. 5", "Truncation does not lower BERTScore F on CNN/DM.",
          "bertscore-summeval", "truncation", "f"),
    Claim("002", "App. D, Table 11", "The source article pasted as the summary scores above "
          "the gold summary on BERTScore recall.", "bertscore-summeval", "copy-source",
          "recall", expect="reversed"),
    Claim("002", "sec. 5.5", "On WMT, every metric ranks truncated translations below the "
          "originals (BLEU among them).", "bleu-wmt21", "truncation", expect="detects"),
    Claim("002", "sec. 6", "BLEU passes every test on translation (WMT).", "bleu-wmt21",
          None, expect="detects"),
    Claim("002", "sec. 6", "BLEU passes every test on translation (TED).", "bleu-ted", None,
          expect="detects"),
    Claim("002", "App. E, Table 13", "GPT-PPL rates a text that repeats itself above the "
          "original.", "gpt-ppl-wikitext", "repetition", expect="reversed"),
    Claim("002", "sec. 5.3, Table 4", "GPT-PPL rates a salad of frequent n-grams above real "
          "paragraphs.", standing="the frequent n-gram test needs an n-gram table from a "
          "corpus apart from the gold texts, which the card's suite leaves out; "
          "docs/reproductions.md rows 9-12 run it with WikiText set b"),
    Claim("003", "sec. 4.2, Fig. 4", "Most LLM judges reach an average discernment D_avg "
          "above 1 on summarization.", "judge-local-summeval", "", expect="discerns"),
    Claim("003", "sec. 4.2", "Judges under 8B parameters discern less on summarization than "
          "larger ones.", standing="one judge here (SmolLM2-135M): there is no larger judge "
          "to compare it with"),
    Claim("003", "sec. 4.2, Fig. 4b", "On SumPubMed every judge but GPT-4-Turbo has D_min "
          "below 1.", standing="SumPubMed is not among the public sets here"),
    Claim("000", "sec. 1", "A single-number metric such as BLEU or BERTScore cannot rate "
          "quality aspects one by one.", standing="a statement of what such a metric is "
          "built to give, not a measured result; the SummEval correlation table shows the "
          "numbers it implies (one score, correlated with every expert aspect)"),
    Claim("000", "Table 5", "GPT-3.5 asked for a score only correlates with SummEval's "
          "experts (Pearson 0.437 for coherence, 0.362 for fluency).",
          standing="a 135M-parameter judge is not GPT-3.5; docs/reproductions.md runs the "
          "shipped judge against the experts on 2 articles"),
    Claim("000", "sec. 5, Table 4", "LLM judges' scores move on aspects an attack did not "
          "aim at (criteria confusion).", "judge-local-summeval", "", expect="confusion"),
)


def _fails(outcome: str | None) -> str:
    return {"blind": "fails", "reversed": "fails", "detects": "passes",
            PARTLY_BLIND: PARTLY}.get(str(outcome), "")


def describe_row(row: Mapping[str, Any]) -> str:
    """'truncation (bleu): inconclusive; by severity: 0.1 inconclusive (drop +2.23 to +4.4
    against ±3.22), 0.2-0.5 detects; strict test of paper 002: pass' for a blind-spot row:
    the row's verdict, the severities that decide it with their intervals, and the strict
    verdict."""
    outcome = row.get("outcome")
    decisive = "blind" if outcome == PARTLY_BLIND else outcome  # whose bounds are quoted
    runs: list[tuple[str, str, str, dict[str, Any]]] = []  # (first, last, verdict, test)
    for severity in row.get("severities") or []:
        test = severity.get("test") or {}
        verdict, name = str(test.get("verdict")), str(severity.get("severity"))
        if runs and runs[-1][2] == verdict and verdict != decisive:
            runs[-1] = (runs[-1][0], name, verdict, runs[-1][3])
        else:
            runs.append((name, name, verdict, test))
    parts = []
    for first, last, verdict, test in runs:
        where = first if first == last else f"{first}-{last}"
        bounds = (f" (drop {test['low']:+.3g} to {test['high']:+.3g} against "
                  f"±{test['delta']:.3g})" if verdict == decisive and test.get("low") is not None
                  and test.get("high") is not None and test.get("delta") is not None else "")
        parts.append(f"{where} {verdict}{bounds}")
    aspect = f" ({row.get('aspect')})" if row.get("aspect") else ""
    said = f"partly blind, {partly_text(row)}" if outcome == PARTLY_BLIND else outcome
    return (f"{row.get('perturbation')}{aspect}: {said}; by severity: {', '.join(parts)}; "
            f"strict test of paper 002: {row.get('verdict')}")


def judge_verdict(claim: Claim, card: Mapping[str, Any]) -> tuple[str, str]:
    """The judge claims of papers 003 and 000 on a made judge card."""
    if claim.expect == "discerns":
        summaries = ((card["methods"]["discernment"].get("results") or {}).get("summaries")
                     or [])
        every = [s for s in summaries if s.get("group") == "all"]
        if not every or every[0].get("d_avg") is None:
            return NOT_COMPARABLE, "the card has no discernment summary"
        d_avg = float(every[0]["d_avg"])
        return (AGREE if d_avg >= 1 else DISAGREE,
                f"D_avg = {d_avg:.2f} on {card['data']['examples']} examples (SmolLM2-135M, "
                "far smaller than the paper's judges)")
    section = card["methods"]["criteria"]
    return NOT_COMPARABLE, f"criteria section: {section.get('summary') or section['status']}"


def claim_verdict(claim: Claim, cards: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """agree / disagree / not comparable, and why, from the published cards."""
    if claim.standing:
        return NOT_COMPARABLE, claim.standing
    card = cards.get(str(claim.card))
    if card is None:
        return NOT_COMPARABLE, f"the card {claim.card} is not made yet (see below)"
    if claim.expect in ("discerns", "confusion"):
        return judge_verdict(claim, card)
    rows = [r for r in (card["methods"]["blindspot"].get("results") or {}).get("rows") or []
            if (claim.perturbation is None or r.get("perturbation") == claim.perturbation)
            and (claim.aspect is None or r.get("aspect") == claim.aspect)]
    if not rows:
        return NOT_COMPARABLE, (f"{claim.card} has no {claim.perturbation} row: the test did "
                                "not run on this card")
    undecided = [r for r in rows if r.get("outcome") not in ("blind", "reversed", "detects",
                                                             PARTLY_BLIND)]
    if claim.perturbation is None:  # "passes every test": name the rows that do not
        failing = [r for r in rows if r.get("outcome") in ("blind", "reversed")]
        if failing:
            more = f" ({len(failing) - 2} more rows likewise)" if len(failing) > 2 else ""
            return DISAGREE, " / ".join(describe_row(r) for r in failing[:2]) + more
        partly = [r for r in rows if r.get("outcome") == PARTLY_BLIND]
        if partly:
            more = f" ({len(partly) - 2} more rows likewise)" if len(partly) > 2 else ""
            return PARTLY, ("no test fails at its heaviest severity; blind at light damage "
                            "only: " + " / ".join(describe_row(r) for r in partly[:2]) + more)
        if undecided:
            return NOT_COMPARABLE, (f"no test fails, {len(undecided)} of {len(rows)} "
                                    "inconclusive at this n: "
                                    + ", ".join(str(r.get("perturbation")) for r in undecided))
        return AGREE, f"all {len(rows)} tests detect the damage"
    row = rows[0]
    if undecided:
        settle = row.get("n_to_settle")
        return NOT_COMPARABLE, (describe_row(row) + "; inconclusive at "
                                f"{card['data']['examples']} examples"
                                + (f" ({settle_text(settle)})" if settle else ""))
    if row.get("outcome") == PARTLY_BLIND and claim.expect in ("fails", "detects"):
        return PARTLY, describe_row(row)
    return (AGREE if row.get("outcome") in EXPECTED[claim.expect] else DISAGREE,
            describe_row(row))


def claims_table(cards: Mapping[str, Mapping[str, Any]], anchors: Mapping[str, str]
                 ) -> list[str]:
    """The claims as Markdown table lines (`anchors`: each made card's heading anchor)."""
    lines = ["| paper | where | published finding (our words) | card | here | why |",
             "|---|---|---|---|---|---|"]
    for claim in CLAIMS:
        verdict, why = claim_verdict(claim, cards)
        card = (f"[{claim.card}](#{anchors[claim.card]})" if claim.card and claim.card in anchors
                else (claim.card or "\u2014"))
        lines.append(f"| {claim.paper} | {claim.where} | {claim.text} | {card} | **{verdict}** "
                     f"| {why.replace('|', '/')} |")
    return lines
