"""The papers' findings beside the real-data atlas: each marked from the card's interval
verdicts (agree, disagree, not comparable), never from a point estimate."""

from __future__ import annotations

from typing import Any

from evalstress.card.claims import (
    AGREE,
    CLAIMS,
    DISAGREE,
    NOT_COMPARABLE,
    PARTLY,
    Claim,
    claim_verdict,
    claims_table,
)


def row(perturbation: str, outcome: str, aspect: str = "rougeL", strict: str = "pass",
        **extra: Any) -> dict[str, Any]:
    return {"perturbation": perturbation, "aspect": aspect, "outcome": outcome,
            "verdict": strict, "severities": [{"severity": "0.5", "test": {
                "verdict": outcome, "low": -0.2, "high": 0.1, "delta": 0.9}}], **extra}


def card(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"data": {"examples": 100},
            "methods": {"blindspot": {"results": {"rows": list(rows)}}}}


FAILS = Claim("002", "Table 1", "Truncation does not lower ROUGE-L.", "rougeL-summeval",
              "truncation")


def test_a_failed_test_agrees_with_a_blind_or_reversed_row_and_not_a_detecting_one() -> None:
    for outcome, verdict in (("blind", AGREE), ("reversed", AGREE), ("detects", DISAGREE)):
        got, why = claim_verdict(FAILS, {"rougeL-summeval": card(row("truncation", outcome))})
        assert got == verdict
        assert why.startswith(f"truncation (rougeL): {outcome}; by severity: 0.5 {outcome}")
        assert "(drop -0.2 to +0.1 against ±0.9)" in why and "paper 002: pass" in why


def test_an_inconclusive_row_or_a_missing_card_is_not_comparable_and_says_why() -> None:
    got, why = claim_verdict(FAILS, {"rougeL-summeval": card(
        row("truncation", "inconclusive", n_to_settle=740))})
    assert got == NOT_COMPARABLE and "(about 740 examples would settle it)" in why
    # an effect sitting almost on the tolerance: capped and worded, not 49,976,088
    got, why = claim_verdict(FAILS, {"rougeL-summeval": card(
        row("truncation", "inconclusive", n_to_settle=100_000))})
    assert "(100,000 or more examples: the effect is too small to settle)" in why


def test_the_why_names_the_severities_that_decide_a_row() -> None:
    tests = [("0.1", "blind", 0.1, 0.5), ("0.2", "detects", 2.0, 3.0),
             ("0.3", "detects", 4.0, 5.0)]
    blind = row("stopword-removal", "blind", "bleu", severities=[
        {"severity": s, "test": {"verdict": v, "low": lo, "high": hi, "delta": 1.0}}
        for s, v, lo, hi in tests])
    why = claim_verdict(FAILS, {"rougeL-summeval": card({**blind,
                                                         "perturbation": "truncation"})})[1]
    assert "by severity: 0.1 blind (drop +0.1 to +0.5 against ±1), 0.2-0.3 detects;" in why
    got, why = claim_verdict(FAILS, {})
    assert got == NOT_COMPARABLE and "not made" in why
    got, why = claim_verdict(FAILS, {"rougeL-summeval": card(row("negation", "blind"))})
    assert got == NOT_COMPARABLE and "no truncation row" in why


def test_passes_every_test_is_disagreed_with_by_any_blind_row_it_names() -> None:
    claim = Claim("002", "sec. 6", "BLEU passes every test.", "bleu-wmt21", None,
                  expect="detects")
    rows = [row("truncation", "detects", "bleu"), row("negation", "blind", "bleu")]
    got, why = claim_verdict(claim, {"bleu-wmt21": card(*rows)})
    assert got == DISAGREE and why.startswith("negation (bleu): blind")
    got, _ = claim_verdict(claim, {"bleu-wmt21": card(rows[0])})
    assert got == AGREE


def test_a_reversal_claim_wants_the_damaged_text_scored_higher() -> None:
    claim = Claim("002", "App. D", "Copy-source beats gold on recall.", "bertscore-summeval",
                  "copy-source", "recall", expect="reversed")
    cards = {"bertscore-summeval": card(row("copy-source", "blind", "recall"),
                                        row("copy-source", "reversed", "precision"))}
    assert claim_verdict(claim, cards)[0] == DISAGREE  # recall's row, not precision's


def test_the_table_has_a_row_per_claim_of_each_of_the_three_papers() -> None:
    lines = claims_table({}, {})
    assert len(lines) == 2 + len(CLAIMS)
    assert {c.paper for c in CLAIMS} == {"002", "003", "000"}
    assert all(f"**{NOT_COMPARABLE}**" in line for line in lines[2:])  # no card made


def graded(perturbation: str, aspect: str, *verdicts: str, **extra: Any) -> dict[str, Any]:
    """A row over severities 0.1 .. 0.5 with these verdicts, its outcome given in `extra`."""
    bounds = {"blind": (-0.2, 0.3), "detects": (2.0, 3.0), "inconclusive": (0.5, 1.5)}
    return {"perturbation": perturbation, "aspect": aspect, "verdict": "fail", "severities": [
        {"severity": f"0.{i + 1}", "test": {"verdict": v, "low": bounds[v][0],
                                            "high": bounds[v][1], "delta": 1.0}}
        for i, v in enumerate(verdicts)], **extra}


def test_a_claim_agrees_only_with_a_row_blind_at_its_heaviest_severity() -> None:
    # ROUGE-L on SummEval, truncation: blind at 0.1 only, undecided at 0.2 to 0.5
    light = graded("truncation", "rougeL", "blind", *["inconclusive"] * 4,
                   outcome="partly blind", blind_up_to="0.1", detects_from=None)
    got, why = claim_verdict(FAILS, {"rougeL-summeval": card(light)})
    assert got == PARTLY
    assert why.startswith("truncation (rougeL): partly blind, blind up to 0.1 (undecided "
                          "above); by severity: 0.1 blind (drop -0.2 to +0.3 against ±1), "
                          "0.2-0.5 inconclusive;")
    every = graded("truncation", "rougeL", *["blind"] * 5, outcome="blind")
    got, why = claim_verdict(FAILS, {"rougeL-summeval": card(every)})
    assert got == AGREE and "0.5 blind (drop -0.2 to +0.3" in why
    # "it detects truncation" is partly true of a row blind up to 0.1 and detecting from 0.3
    detects = Claim("002", "sec. 5.5", "Truncation lowers BLEU.", "bleu-wmt21", "truncation",
                    expect="detects")
    stop = graded("truncation", "bleu", "blind", "inconclusive", "detects", "detects",
                  outcome="partly blind", blind_up_to="0.1", detects_from="0.3")
    got, why = claim_verdict(detects, {"bleu-wmt21": card(stop)})
    assert got == PARTLY and "blind up to 0.1 (detects from 0.3)" in why
    # a reversal claim is not met by a row that is only blind
    rises = Claim("002", "App. D", "Truncation raises BLEU.", "bleu-wmt21", "truncation",
                  expect="reversed")
    assert claim_verdict(rises, {"bleu-wmt21": card(stop)})[0] == DISAGREE


def test_passes_every_test_is_partly_true_where_a_row_is_blind_at_light_damage_only() -> None:
    claim = Claim("002", "sec. 6", "BLEU passes every test.", "bleu-wmt21", None,
                  expect="detects")
    ok = graded("truncation", "bleu", "detects", "detects", outcome="detects")
    stop = graded("stopword-removal", "bleu", "blind", "inconclusive", "detects",
                  outcome="partly blind", blind_up_to="0.1", detects_from="0.3")
    got, why = claim_verdict(claim, {"bleu-wmt21": card(ok, stop)})
    assert got == PARTLY and why.startswith("no test fails at its heaviest severity; blind at "
                                            "light damage only: stopword-removal (bleu)")
    blind = graded("negation", "bleu", "blind", "blind", outcome="blind")
    assert claim_verdict(claim, {"bleu-wmt21": card(ok, stop, blind)})[0] == DISAGREE
    lines = claims_table({"bleu-wmt21": card(ok, stop)}, {"bleu-wmt21": "bleu"})
    assert any("[bleu-wmt21](#bleu) | **partly** |" in line for line in lines)
