"""The report's figures carry their finding in words (their aria-label), worked out by hand."""

from __future__ import annotations

import re

from evalstress.report.plots import curves_alt, curves_svg, discernment_alt


def curve(perturbation: str, gold: float, means: list[float], verdict: str) -> dict[str, object]:
    ratios = [0.25, 0.5][:len(means)]
    return {"perturbation": perturbation, "gold": gold, "verdict": verdict, "tolerance": 0.01,
            "points": [{"noise_ratio": r, "mean": m, "std": 0.0, "delta": m - gold}
                       for r, m in zip(ratios, means, strict=True)]}


def test_curves_say_how_far_the_score_moves_at_the_strongest_noise() -> None:
    rows = [curve("truncation", 0.50, [0.45, 0.33], "pass"),   # (0.33 - 0.5) / 0.5 = -34%
            curve("char-typo", 0.40, [0.40, 0.401], "fail"),   # +0.25%: level
            curve("repetition", 0.20, [0.25, 0.30], "fail"),   # +50%
            curve("empty", 0.0, [0.1], "fail")]
    said = curves_alt(rows, "rougeL")
    assert said.startswith("rougeL against noise ratio")
    assert "truncation: score drops 34% at noise ratio 0.50 (pass)" in said
    assert "char-typo: score stays level at noise ratio 0.50 (fail)" in said
    assert "repetition: score rises 50% at noise ratio 0.50 (fail)" in said
    assert "empty: score goes from 0 to 0.1 at noise ratio 0.25 (fail)" in said


def test_the_curves_svg_carries_its_words_as_an_aria_label() -> None:
    svg = curves_svg([curve("truncation", 0.50, [0.45, 0.33], "pass")], ylabel="bleu <b>")
    opening = svg[:svg.index(">") + 1]
    assert 'role="img"' in opening
    label = re.search(r'aria-label="([^"]*)"', opening)
    assert label and "bleu &lt;b&gt; against" in label[1] and "drops 34%" in label[1]


def test_discernment_counts_the_perturbations_that_reach_d_of_one() -> None:
    units = [{"perturbation": "char-typo", "severity": "minor", "d": 3.7},
             {"perturbation": "truncation", "severity": "major", "d": 0.996},
             {"perturbation": "swap", "severity": "major", "d": None}]
    said = discernment_alt(units, "bleu")
    assert said.startswith("Discernment of bleu: 1 of 3 perturbations reach D of 1 or more")
    assert "truncation@major: D 1.00" in said and "swap@major: D 0.00" in said
