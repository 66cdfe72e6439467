"""The criteria section of an aspect-aware evaluator: intended against affected aspects, each
attack at its heaviest severity, as card.json holds it and card.md shows it."""

from __future__ import annotations

from typing import Any

from evalstress.card.markdown import discernment_lines, matrix_lines
from evalstress.card.sections import confusion_matrix, discernment_summary, too_few


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


def dhp_unit(task: str, severity: str, n: int, d: float, aspect: str = "bleu") -> dict[str, Any]:
    return {"task": task, "perturbation": "char-typo", "severity": severity, "level": "char",
            "aspect": aspect, "n": n, "d": d}


def test_units_too_few_to_reach_d_1_are_counted_apart_from_the_failures() -> None:
    # 12 examples can reach D = 2.78, 3 examples only 0.69: the 3-example units are neither
    # failures nor successes
    units = [dhp_unit("story", "minor", 12, 2.5), dhp_unit("story", "major", 12, 0.3),
             dhp_unit("qa", "minor", 3, 0.2), dhp_unit("qa", "major", 3, 0.69)]
    line = discernment_summary(units)
    assert line.startswith("1 of 2 units reach D >= 1; below: char-typo (major, story); 2 more "
                           "units are too few examples: their n <= 4 allows no D >= 1 "
                           "(D = 1 needs 5 examples, D = 2 needs 9)")
    assert too_few(units)["units"] == 2
    # every unit too small: no "0 of 2" count at all
    line = discernment_summary(units[2:])
    assert "0 of" not in line and line.startswith("no unit has the examples to reach D >= 1")
    assert discernment_summary([]) == "no unit was tested"


def test_the_unit_table_shows_each_unit_s_ceiling_of_d() -> None:
    lines = "\n".join(discernment_lines({"threshold": 1.0, "units": [
        dhp_unit("story", "minor", 12, 2.5), dhp_unit("qa", "minor", 3, 0.2)]}))
    assert "max D for n" in lines
    assert "| 2.78 |" in lines and "0.69: too few examples" in lines


def test_several_aspects_are_named_in_the_list_of_failures() -> None:
    units = [dhp_unit("story", "major", 12, 0.3, "f"), dhp_unit("story", "major", 12, 1.5, "p")]
    assert discernment_summary(units).startswith("1 of 2 units reach D >= 1; below: char-typo "
                                                 "(major, story, f)")
