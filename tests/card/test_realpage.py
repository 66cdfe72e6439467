"""The real-data atlas's page: a pure function of the committed cards, with the D ceilings,
the models that ran and the cards not yet made."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalstress.card.realatlas import EXAMPLES, REAL_ATLAS
from evalstress.card.realpage import d_ceiling, read_real_atlas, real_page

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "atlas-real"
PAGE = ROOT / "docs" / "atlas-real.md"


def test_d_ceilings_by_hand() -> None:
    assert d_ceiling(100) == pytest.approx(23.1378, abs=1e-4)  # 100 ln 2 / ln 20
    assert d_ceiling(12) == pytest.approx(2.7765, abs=1e-4)
    assert d_ceiling(100, 3) == pytest.approx((100 * math.log(2) + math.log(3)) / math.log(20))


def test_the_committed_page_is_what_the_command_writes_from_the_committed_cards() -> None:
    cards = read_real_atlas(PUBLISHED)
    assert cards, "no real-data card is committed"
    assert PAGE.read_text(encoding="utf-8") == real_page(cards, "atlas-real")


def test_every_committed_card_ran_on_real_data_with_at_least_100_examples() -> None:
    text = PAGE.read_text(encoding="utf-8")
    made = {entry.name for entry, _ in read_real_atlas(PUBLISHED)}
    for entry, card in read_real_atlas(PUBLISHED):
        assert card["data"]["source"].endswith(entry.data.file)
        assert card["data"]["examples"] == EXAMPLES
        assert card["budget"]["protocol"] == "paper"
        assert card["evaluator"]["spec"] == entry.metric.spec
        assert {p.name for p in (PUBLISHED / entry.name).iterdir()} <= {"card.json", "figures"}
    for entry in REAL_ATLAS:  # every card not made is listed with why
        if entry.name not in made:
            assert f"| {entry.name} |" in text and (entry.pending or "not made yet") in text
    committed = sum(p.stat().st_size for p in PUBLISHED.rglob("*") if p.is_file())
    assert committed < 8_000_000


def test_the_summeval_table_shows_each_cards_holm_corrected_agreement() -> None:
    """The page's correlation table quotes the interval each card's verdict is read from (the
    Holm-corrected one), not an uncorrected 95% interval beside it."""
    cards = read_real_atlas(PUBLISHED)
    page = real_page(cards, "atlas-real")
    table = page.split("## Human correlation on SummEval")[1].split("\n## ")[0]
    card = next(c for e, c in cards if e.name == "bleu-summeval")
    rows = card["methods"]["correlation"]["results"]["agreement"]["rows"]
    coherence = next(r for r in rows if r["human"] == "coherence" and r["level"] == "system"
                     and r["statistic"] == "tau_b")
    assert coherence["conf"] > 0.95  # corrected for four aspects: wider than 95%
    line = next(li for li in table.splitlines() if li.startswith("| bleu-summeval | bleu | "
                                                                   "coherence |"))
    system = line.split(" | ")[4]
    assert f"{coherence['low']:.2f} to {coherence['high']:.2f}" in system
    assert f"{coherence['conf'] * 100:.4g}%" in system and coherence["verdict"] in system


def test_a_card_made_before_the_agreement_block_is_named_not_shown_with_old_numbers() -> None:
    cards = read_real_atlas(PUBLISHED)
    entry, card = next((e, c) for e, c in cards if e.name == "bleu-summeval")
    older = {**card, "methods": {**card["methods"], "correlation": {
        **card["methods"]["correlation"],
        "results": {k: v for k, v in card["methods"]["correlation"]["results"].items()
                    if k != "agreement"}}}}
    page = real_page([(entry, older)], "atlas-real")
    assert "Made before the agreement block (make them again to show it): bleu-summeval." in page
    assert "| bleu-summeval | bleu | coherence |" not in page
