"""The card's figures name both axes of every panel and keep the text of a heat-map cell
readable on the cell's own colour, trusted (red-blue) or not (greys)."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from evalstress.card.figures import (
    draw_blindspot,
    draw_confusion,
    draw_discernment,
    draw_sensitivity,
)
from evalstress.report.chart import INK
from tests.card.test_html import ROWS, card_of

SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> dict[str, str]:
    """Each <text> of a figure (its lines joined by a space) with its fill."""
    root = ElementTree.fromstring(svg)
    return {" ".join(t.itertext()): t.get("fill", INK) for t in root.iter(f"{SVG}text")}


def test_every_card_figure_names_both_axes() -> None:
    card = card_of(ROWS)
    blindspot = list(texts(draw_blindspot(card, {"rows": ROWS})))
    assert blindspot.count("severity") == 1 and "drop, % of score" in blindspot
    units = [{"level": "char", "severity": "minor", "d": 2.0, "n": 40},
             {"level": "sentence", "severity": "major", "d": 0.5, "n": 3}]
    discernment = texts(draw_discernment(card, {"units": units, "threshold": 1.0}))
    assert "D" in discernment and "error level and severity" in discernment
    assert "char minor" in discernment and "sentence major" in discernment
    aspects = [{"aspect": "m", "quality_aspect": q, "probed": True, "relative_change": c,
                "relative_ci_low": c - 0.05, "relative_ci_high": c + 0.05}
               for q, c in (("fluency", 0.3), ("coherence", 0.02))]
    sensitivity = texts(draw_sensitivity(card, {"sensitivity": {"aspects": aspects}}))
    assert "quality aspect" in sensitivity
    assert "drop of the score, % (heaviest severity)" in sensitivity


def confusion(effects: dict[str, float]) -> dict[str, Any]:
    cells = [{"perturbation": "typo", "affected": aspect, "rank_biserial": effect,
              "passed": True, "expected": "stay"} for aspect, effect in effects.items()]
    return {"mode": "confusion", "confusion": {"matrix": {
        "attacks": ["typo"], "affected": list(effects), "cells": cells}}}


def wcag_contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours '#rrggbb', from its definition."""
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
                   for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def cell_contrasts(svg: str) -> dict[str, float]:
    """Each heat-map cell's text against the fill of the cell drawn just before it."""
    fill, out = "#ffffff", {}
    for element in ElementTree.fromstring(svg):
        if element.tag == f"{SVG}rect" and element.get("fill", "none") != "none":
            fill = element.get("fill", "#ffffff")
        elif element.tag == f"{SVG}text" and "pass" in " ".join(element.itertext()):
            out[" ".join(element.itertext())] = wcag_contrast(fill, element.get("fill", INK))
    return out


def test_heat_map_text_reads_at_4_5_to_1_on_every_cell_colour() -> None:
    effects = {f"aspect {k}": k / 10 for k in range(-10, 11)}
    results = confusion(effects)
    for trusted in (True, False):
        svg = draw_confusion(card_of(ROWS, trusted=trusted), results)
        if trusted:
            assert "affected aspect (framed: the one the attack aims at)" in texts(svg)
            assert "attack" in texts(svg)
        measured = cell_contrasts(svg)
        assert len(measured) == 21
        low = {text: round(ratio, 2) for text, ratio in measured.items() if ratio < 4.5}
        assert low == {}, (trusted, low)
    # greys run from white at -1 to black at 1: at -0.9 a near-white cell, where white text
    # (the old rule: white beyond |effect| 0.55) could not be read at all
    untrusted = texts(draw_confusion(card_of(ROWS, trusted=False), results))
    assert untrusted["-0.90 pass"] == INK and untrusted["+0.90 pass"] == "#ffffff"
