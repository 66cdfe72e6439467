"""The card's agreement block in words and tables: claims read off the Holm-corrected interval,
the tables of card.md and card.html, and the agreement row of `evalstress compare`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.agreement import agreement
from evalstress.analyses.correlation import human_correlation
from evalstress.card.agreement import claims, compare_cells
from evalstress.card.findings import correlation_findings
from evalstress.card.markdown import correlation_lines


def frames(metric: np.ndarray, human: dict[str, np.ndarray]) -> tuple[pd.DataFrame, pd.DataFrame]:
    docs, systems = metric.shape
    cells = [(f"d{d:03d}", f"s{s:03d}") for d in range(docs) for s in range(systems)]
    scores = pd.DataFrame({"doc_id": [c[0] for c in cells], "system_id": [c[1] for c in cells],
                           "evaluator": "m", "aspect": "score", "score": metric.ravel()})
    table = pd.DataFrame({"doc_id": [c[0] for c in cells], "system_id": [c[1] for c in cells],
                          **{h: v.ravel() for h, v in human.items()}})
    return scores, table


def weak_on_one_of_four() -> dict[str, Any]:
    """30 items x 4 systems, four human aspects of noise, the metric weakly tied to one: its
    95% interval at item level clears 0, the interval corrected for 4 aspects does not."""
    rng = np.random.default_rng(16)
    human = {f"a{k}": rng.integers(1, 6, (30, 4)).astype(float) for k in range(4)}
    scores, table = frames(rng.normal(size=(30, 4)) + 0.25 * human["a0"], human)
    rows = human_correlation(scores, table, methods=("kendall",), levels=("segment-doc",),
                             n_boot=500).to_dict()["rows"]
    block = agreement(scores, table, n_boot=500).to_dict()
    return {"results": {"rows": rows, "agreement": block}, "files": {}}


def test_the_best_of_four_aspects_is_not_claimed_without_the_correction() -> None:
    section = weak_on_one_of_four()
    a0 = next(r for r in section["results"]["agreement"]["rows"]
              if (r["human"], r["level"], r["statistic"]) == ("a0", "item", "tau_b"))
    assert a0["ci_low"] > 0  # uncorrected, a0 would pass
    assert a0["conf"] == 1 - 0.05 / 4 and a0["low"] <= 0  # Holm with nothing rejected
    legacy = {"results": {"rows": section["results"]["rows"]}, "files": {}}
    assert correlation_findings(legacy, lambda *a: None)[0].text.startswith(
        "Follows human a0")  # the old reading: the best of four, uncorrected
    found = correlation_findings(section, lambda *a: None)
    item = next(f for f in found if "at item level" in f.text)
    assert item.kind == "inconclusive"
    assert item.text.startswith("Undecided whether it agrees with human a0 ratings")
    assert "98.75% CI" in item.text and "Holm over 4 aspects" in item.text
    assert item.interval["level"] == 1 - 0.05 / 4


def block_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"items": 100, "systems": 16, "rows": rows, "pairs": [], "human_human": [],
            "human_human_note": "not available", "method": {}}


def row(human: str, level: str, statistic: str, value: float, low: float, high: float,
        verdict: str) -> dict[str, Any]:
    return {"evaluator": "m", "aspect": "score", "human": human, "level": level,
            "statistic": statistic, "value": value, "ci_low": low, "ci_high": high,
            "low": low, "high": high, "conf": 0.975, "verdict": verdict, "n": 100,
            "pvalue": 0.001, "n_to_settle": None, "items": 100}


def test_a_claim_names_the_aspect_its_interval_and_alpha_beside_it() -> None:
    block = block_of([row("relevance", "item", "tau_b", 0.31, 0.24, 0.38, "agrees"),
                      row("relevance", "item", "alpha", 0.29, 0.20, 0.37, "agrees"),
                      row("fluency", "item", "tau_b", 0.40, -0.02, 0.70, "inconclusive"),
                      row("coherence", "system", "tau_b", -0.5, -0.8, -0.2, "disagrees")])
    item, system = claims(block)
    assert item.kind == "human correlation"  # the decided one, not the larger undecided one
    assert item.text.startswith("Agrees with human relevance ratings at item level")
    assert "Kendall tau-b 0.31 (97.5% CI 0.24 to 0.38, Holm over 2 aspects; " \
           "Krippendorff alpha 0.29, CI 0.20 to 0.37; 100 items resampled; the raters among " \
           "themselves: not available)" in item.text
    assert system.kind == "reversed" and system.text.startswith(
        "Ranks against human coherence ratings at system level")


def test_card_md_shows_the_block_and_compare_colours_it() -> None:
    section = weak_on_one_of_four()
    lines = "\n".join(correlation_lines(section["results"]))
    assert "**Agreement with the human raters**" in lines
    assert "Krippendorff alpha (ordinal, on ranks)" in lines and "98.75%" in lines
    assert "Agreement among the human raters: not available: the data gives one (averaged) " \
           "score per output." in lines
    strong = block_of([row("relevance", "item", "tau_b", 0.31, 0.24, 0.38, "agrees")])
    cells = compare_cells([strong, section["results"]["agreement"], None],
                          ["score", "score", "score"])
    by_test = {test: (c, v) for test, c, v in cells}
    cell, verdicts = by_test["agreement with human relevance, item level"]
    assert cell[0] == "tau-b 0.31 (0.24 to 0.38)" and cell[1] is None and cell[2] is None
    assert verdicts[0] == "pass"
    assert by_test["agreement with human a0, item level"][1][1] is None  # undecided: no colour


def test_card_html_anchors_the_rows_the_findings_rest_on() -> None:
    from evalstress.card.html import agreement_html, evidence_target

    section = weak_on_one_of_four()
    ids: set[str] = set()
    page = agreement_html(section["results"]["agreement"], ids)
    assert "t-agreement" in page and "98.75%" in page
    finding = correlation_findings(section, lambda *a: None)[0].to_dict()
    ident, words = evidence_target(finding, ids)
    assert ident in ids and words.startswith("correlation table, row score / a0 / item")


def test_compare_of_two_cards_shows_the_agreement_rows(tmp_path: Any) -> None:
    import evalstress
    from evalstress.card.compare import compare_cards, compare_html, compare_markdown
    from tests.card.test_systems import WORDS, summeval_like

    data = summeval_like(tmp_path / "s.jsonl")
    card = evalstress.card(WORDS, data, mapping=["hypothesis=highlight"],
                           task="summarization", budget="small", out=tmp_path / "card",
                           cache_dir=tmp_path / "cache").to_dict()
    block = card["methods"]["correlation"]["results"]["agreement"]
    tau = next(r for r in block["rows"] if (r["human"], r["level"], r["statistic"]) ==
               ("coherence", "item", "tau_b"))
    comparison = compare_cards([card, card], ["a", "b"])
    table = compare_markdown(comparison)
    assert "agreement with humans: tau-b (Holm-corrected CI), alpha" in table
    cell = f"tau-b {tau['value']:.2f} ({tau['low']:.2f} to {tau['high']:.2f})"
    assert f"| agreement with human coherence, item level | {cell}" in table
    assert "agreement with human coherence, system level" in compare_html(comparison)
