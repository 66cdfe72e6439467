"""The report's figures carry their finding in words (their aria-label), worked out by hand, name
both axes of every panel, merge the points they would otherwise pile up, and draw the same bytes
for the same results."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from evalstress.report.plots import (
    curve_spots,
    curves_alt,
    curves_svg,
    discernment_alt,
    discernment_svg,
)

SVG = "{http://www.w3.org/2000/svg}"


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


def svg_texts(svg: str) -> list[str]:
    """Every <text> of a figure, its lines joined by a space."""
    root = ElementTree.fromstring(svg)
    return [" ".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def severity_curve(perturbation: str, ratios: list[float], means: list[float]
                   ) -> dict[str, object]:
    return {"perturbation": perturbation, "gold": 16.3, "verdict": "fail", "tolerance": 0.1,
            "points": [{"severity": str(i + 1), "noise_ratio": r, "mean": m, "std": 0.05,
                        "delta": m - 16.3}
                       for i, (r, m) in enumerate(zip(ratios, means, strict=True))]}


# a quickstart run's sentence-switching row: four severities between noise ratio 0.29 and 0.35
SWITCHING = severity_curve("sentence-switching", [0.2921, 0.331, 0.3207, 0.3453],
                           [16.244, 16.281, 16.257, 16.227])


def test_every_panel_names_both_axes() -> None:
    rows = [curve(name, 0.5, [0.45, 0.33], "pass") for name in ("a", "b", "c", "d")]
    svg = curves_svg(rows, ylabel="rougeL", columns=3)
    texts = svg_texts(svg)
    assert texts.count("noise ratio") == 4  # under every panel
    assert texts.count("rougeL") == 2  # beside each row of panels (they share the y scale)
    bars = discernment_svg([{"perturbation": "typo", "severity": "minor", "d": 2.0, "d_ew": 1.5},
                            {"perturbation": "cut", "severity": "major", "d": 0.5}],
                           evaluator="bleu")
    texts = svg_texts(bars)
    assert texts.count("perturbation") == 2
    assert sum(t.startswith("D = log_0.05(p)") for t in texts) == 2


def test_severities_at_nearly_the_same_noise_ratio_are_drawn_as_one_mean_with_its_range() -> None:
    spots = curve_spots(SWITCHING)
    assert [s.severities for s in spots] == [("gold",), ("1", "3", "2", "4")]
    merged = spots[1]
    # by hand: (16.244 + 16.281 + 16.257 + 16.227) / 4, (0.2921 + 0.3207 + 0.331 + 0.3453) / 4
    assert merged.y == pytest.approx(16.25225) and merged.x == pytest.approx(0.322275)
    assert (merged.low, merged.high) == pytest.approx((16.177, 16.331))  # 16.227 - .05, 16.281 + .05
    svg = curves_svg([SWITCHING], ylabel="bleu")
    root = ElementTree.fromstring(svg)
    tips = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert len(tips) == 1 and tips[0].startswith("severities 1, 3, 2, 4 merged")
    assert "×4" in svg_texts(svg)
    assert len(list(root.iter(f"{SVG}circle"))) == 1  # the gold point alone stays a dot


def test_spread_out_severities_stay_apart() -> None:
    spread = severity_curve("truncation", [0.09, 0.19, 0.29, 0.39, 0.49],
                            [14.7, 14.6, 13.8, 12.7, 10.7])
    assert [s.severities for s in curve_spots(spread)][1:] == [("1",), ("2",), ("3",), ("4",),
                                                               ("5",)]
    # twelve evenly spaced severities (8% of the range apart) merge at most three at a time
    even = severity_curve("many", [k / 12 for k in range(1, 13)], [16.0 - k for k in range(12)])
    assert max(len(s.severities) for s in curve_spots(even)) <= 3


def test_the_same_results_draw_the_same_bytes_and_figures_share_a_page() -> None:
    rows = [curve("truncation", 0.50, [0.45, 0.33], "pass"), SWITCHING]
    assert curves_svg(rows, ylabel="bleu") == curves_svg(rows, ylabel="bleu")
    page = curves_svg(rows, ylabel="bleu") + curves_svg(rows[:1], ylabel="chrf")
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_drawing_the_report_loads_no_plotting_library() -> None:
    """The figures are written directly: matplotlib's import alone took a third of a second."""
    src = Path(__file__).resolve().parents[2] / "src"
    row = {**SWITCHING, "evaluator": "bleu", "aspect": "bleu"}
    code = ("import sys; from evalstress.report.html import render_html; "
            "page = render_html({'analyses': {'blindspot': {'rows': [" + repr(row) + "]}}}); "
            "print(page.count('<polyline'), "
            "sorted(m for m in ('matplotlib', 'PIL') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(src)}, check=True)
    assert done.stdout.strip() == "1 []"  # the curve drawn, no plotting library loaded
