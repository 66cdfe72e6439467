"""The grid's text colour: white or black, whichever keeps WCAG's 4.5:1 on a cell's tint."""

from __future__ import annotations

import pytest

from evalstress.report.common import VERDICT_RGB, luminance, white_text_on


def contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def test_luminance_matches_wcag_reference_values() -> None:
    assert luminance((255, 255, 255)) == pytest.approx(1.0)
    assert luminance((0, 0, 0)) == 0.0
    # #777777 is the classic grey at 4.48:1 on white (WCAG's worked examples)
    assert contrast(luminance((0x77, 0x77, 0x77)), 1.0) == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("verdict", ["pass", "fail"])
def test_the_chosen_text_keeps_4_5_to_1_on_every_tint(verdict: str) -> None:
    rgb = VERDICT_RGB[verdict]
    assert not white_text_on(rgb, 0.3)  # a pale tint takes black text
    assert white_text_on(rgb, 1.0)  # the full colour takes white text
    for step in range(31, 101):
        alpha = step / 100
        tint = luminance([c * alpha + 255 * (1 - alpha) for c in rgb])
        text = 1.0 if white_text_on(rgb, alpha) else 0.0
        assert contrast(tint, text) >= 4.5, (verdict, alpha)
    # and the badge's text, the colour itself on its 14% tint, reads too
    badge = luminance([c * 0.14 + 255 * 0.86 for c in rgb])
    assert contrast(luminance(rgb), badge) >= 4.5
