"""Victim and gold scores on 0-100: declared ranges, judge scales, min-max, flips, clipping."""

from __future__ import annotations

import pytest

from evalstress.evaluators.base import create_evaluator
from evalstress.studies.attack.normalise import Scale, choose_scale, parse_range
from evalstress.studies.attack.scoring import Victim

from .conftest import example


def test_declared_ranges_of_lexical_metrics_and_judges() -> None:
    bleu = choose_scale(create_evaluator("bleu"), "bleu", [])
    rouge = choose_scale(create_evaluator("rouge"), "rougeL", [])
    judge = choose_scale(create_evaluator("judge:model=m,base_url=http://127.0.0.1:9/v1,"
                                          "scale=1-5,cache=false"), "overall", [])
    assert (bleu.how, bleu(37.5)) == ("declared", 37.5)
    assert rouge(0.3) == pytest.approx(30.0)
    assert judge(4) == pytest.approx(75.0)  # (4 - 1) / (5 - 1) * 100
    assert judge(1) == 0.0 and judge(5) == 100.0


def test_min_max_over_the_originals_when_nothing_is_declared() -> None:
    ter = create_evaluator("ter")  # lower is better, no declared range
    scale = choose_scale(ter, "ter", [40.0, 80.0, 60.0])
    assert (scale.low, scale.high, scale.how, scale.higher_is_better) == (40, 80, "min-max", False)
    assert scale(50.0) == pytest.approx(75.0)  # flipped: (80 - 50) / 40 * 100
    assert scale(100.0) == 0.0 and scale.clips(100.0) and not scale.clips(60.0)
    with pytest.raises(ValueError, match="--range ter=LO:HI"):
        choose_scale(ter, "ter", [50.0, 50.0])


def test_a_given_range_wins_and_is_parsed() -> None:
    scale = choose_scale(create_evaluator("bleu"), "bleu", [], given=(10.0, 30.0))
    assert scale.how == "given" and scale(20.0) == 50.0
    assert parse_range("0.5:1") == (0.5, 1.0) and parse_range("0-100") == (0.0, 100.0)
    assert parse_range("-1:1") == (-1.0, 1.0)
    with pytest.raises(ValueError, match="LO:HI"):
        parse_range("wide")
    with pytest.raises(ValueError, match="high > low"):
        Scale(1.0, 1.0)


def test_victim_calibrates_min_max_on_originals_and_counts_clips() -> None:
    victim = Victim(create_evaluator("rouge:types=rougeL"), cache=None)
    victim.scale = None
    examples = [example(0), example(1, "Shops fear the closure of the bridge.")]
    # a victim without a declared range: use TER through the same path
    ter = Victim(create_evaluator("ter"), cache=None)
    scale = ter.calibrate(examples)
    raw = [ter.raw(e, [e.hypothesis])[0].value for e in examples]
    assert scale.how == "min-max" and {scale.low, scale.high} == {min(raw), max(raw)}
    scores = ter.score(examples[0], ["bridge", examples[0].hypothesis])
    assert scores[1].value in (0.0, 100.0)
    assert ter.clipped == (1 if ter.scale and ter.scale.clips(scores[0].raw or 0) else 0)
    assert victim.calibrate(examples).how == "declared"


def test_victim_aspect_is_required_for_multi_aspect_evaluators() -> None:
    with pytest.raises(ValueError, match="rouge@rougeL"):
        Victim(create_evaluator("rouge"))
    with pytest.raises(ValueError, match="no aspect 'rouge9'"):
        Victim.from_spec("rouge@rouge9")
    assert Victim.from_spec("rouge@rougeL").label == "rouge@rougeL"
    assert Victim.from_spec("bleu").label == "bleu"


def test_min_max_refuses_originals_that_all_score_alike() -> None:
    ter = create_evaluator("ter")
    with pytest.raises(ValueError, match="needs them to differ"):
        choose_scale(ter, "ter", [1.0, 1.0 + 1e-12])
