"""The criteria section of an aspect-aware evaluator: intended against affected aspects, each
attack at its heaviest severity, as card.json holds it and card.md shows it."""

from __future__ import annotations

from typing import Any

from evalstress.card.markdown import matrix_lines
from evalstress.card.sections import confusion_matrix


def item(perturbation: str, severity: str, aspect: str, test: str, r: float,
         passed: bool) -> dict[str, Any]:
    return {"perturbation": perturbation, "severity": severity, "aspect": aspect,
            "quality_aspect": aspect, "intended": {"sentence-exchange": "coherence",
                                                   "word-exchange": "grammaticality"}[perturbation],
            "test": test, "rank_biserial": r, "change": r / 2, "ci_low": None, "ci_high": None,
            "passed": passed}


ITEMS = [item("sentence-exchange", "1", "fluency", "invariance", 0.1, True),
         item("sentence-exchange", "2", "fluency", "invariance", 0.8, False),
         item("sentence-exchange", "2", "coherence", "directional", 0.9, True),
         item("word-exchange", "5", "fluency", "directional", 0.2, False),
         item("word-exchange", "1", "fluency", "directional", 0.6, True)]
# severity ranks as the run orders them: "2" is heavier than "1" for sentence-exchange, and
# "5" heavier than "1" for word-exchange
RANKS = {("sentence-exchange", "1"): 0, ("sentence-exchange", "2"): 1,
         ("word-exchange", "1"): 0, ("word-exchange", "5"): 2}


def test_each_attack_keeps_its_heaviest_severity() -> None:
    matrix = confusion_matrix(ITEMS, RANKS)
    assert matrix["attacks"] == ["sentence-exchange", "word-exchange"]
    assert matrix["affected"] == ["coherence", "fluency"]
    cells = {(c["perturbation"], c["affected"]): c for c in matrix["cells"]}
    assert set(cells) == {("sentence-exchange", "fluency"), ("sentence-exchange", "coherence"),
                          ("word-exchange", "fluency")}
    confused = cells[("sentence-exchange", "fluency")]
    assert (confused["severity"], confused["expected"], confused["passed"]) == ("2", "stay",
                                                                              False)
    assert cells[("word-exchange", "fluency")]["severity"] == "5"


def test_the_markdown_shows_what_each_aspect_should_do_and_did() -> None:
    lines = matrix_lines(confusion_matrix(ITEMS, RANKS))
    header = next(line for line in lines if line.startswith("| attack"))
    assert header == "| attack | intended | coherence | fluency |"
    row = next(line for line in lines if line.startswith("| sentence-exchange"))
    assert row == ("| sentence-exchange @2 | coherence | move: pass, r +0.90 | "
                   "stay: FAIL, r +0.80 |")
    word = next(line for line in lines if line.startswith("| word-exchange"))
    assert word.endswith("| – | move: FAIL, r +0.20 |")  # no coherence test for it here
