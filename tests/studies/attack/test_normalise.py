"""Victim and gold scores on 0-100: declared ranges, judge scales, reference sets, min-max,
flips, clipping, and the warning a data-dependent scale brings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.evaluators.base import create_evaluator
from evalstress.studies.attack.normalise import Scale, choose_scale, parse_range
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim
from evalstress.studies.attack.setup import parse_scale_references

from .conftest import TableVictim, example


def test_declared_ranges_of_lexical_metrics_and_judges() -> None:
    bleu = choose_scale(create_evaluator("bleu"), "bleu", [])
    rouge = choose_scale(create_evaluator("rouge"), "rougeL", [])
    judge = choose_scale(create_evaluator("judge:model=m,base_url=http://127.0.0.1:9/v1,"
                                          "scale=1-5,cache=false"), "overall", [])
    assert (bleu.how, bleu(37.5)) == ("declared", 37.5)
    assert not bleu.clips(100.00000000000004) and bleu.clips(100.1)  # rounding is no clip
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


@pytest.mark.parametrize(("spec", "aspect", "raw", "expected"), [
    ("chrf", "chrf", 42.0, 42.0),
    ("rouge", "rouge2", 0.25, 25.0),
    ("rep", "rep-2", 0.25, 75.0),  # lower is better: (1 - 0.25) * 100
    ("bertscore", "f", 0.5, 75.0),  # a cosine: (0.5 + 1) / 2 * 100
    ("embedding-similarity", "cosine", -0.5, 25.0),
    ("moverscore", "moverscore", 0.2, 80.0),  # 1 - EMD, EMD in 0..4: (0.2 + 3) / 4 * 100
    ("boolean-qa:model=unused", "fluency", 0.9, 90.0),  # a probability
    ("unieval:model=unused", "overall", 0.9, 90.0),
])
def test_every_bounded_builtin_declares_its_range(spec: str, aspect: str, raw: float,
                                                  expected: float) -> None:
    # the same number on 0-100 whatever originals were attacked (none given here)
    scale = choose_scale(create_evaluator(spec), aspect, [])
    assert scale.how == "declared" and not scale.data_dependent
    assert scale(raw) == pytest.approx(expected)


def test_bertscore_rescaled_with_a_baseline_declares_the_rescaled_bounds() -> None:
    # rescaled = (x - b) / (1 - b); x in -1..1 with b = 0.8 gives -9..1
    bert = create_evaluator("bertscore:rescale_with_baseline=true,baseline=0.8 0.8 0.8")
    scale = choose_scale(bert, "f", [])
    assert (scale.low, scale.high) == pytest.approx((-9.0, 1.0))
    assert scale(0.0) == pytest.approx(90.0)  # unrelated texts (x = b) land at 9/10


def test_unbounded_scores_declare_nothing() -> None:
    for spec, aspect in (("ter", "ter"), ("gpt-ppl", "neg_ppl"),
                         ("bartscore:model=unused", "f"), ("prism:model=unused", "ref")):
        evaluator = create_evaluator(spec)
        assert evaluator.score_range(aspect) is None, spec


def ter_reference(tmp_path: Path) -> Path:
    """Five pairs whose TER is 0, 25, 50, 75 and 100 by hand (no shift helps: distinct words)."""
    reference = "alpha beta gamma delta"
    hypotheses = ["alpha beta gamma delta", "alpha beta gamma omega", "alpha beta psi omega",
                  "alpha chi psi omega", "phi chi psi omega"]
    path = tmp_path / "reference.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", "hypothesis": h,
                                        "references": [reference]}) + "\n"
                            for i, h in enumerate(hypotheses)))
    return path


def test_a_reference_set_fixes_an_unbounded_scale_at_its_percentiles(tmp_path: Path) -> None:
    path = ter_reference(tmp_path)
    [shared] = parse_scale_references([str(path)], percentiles="25:75").values()
    ter = Victim(create_evaluator("ter"), cache=None)
    # the 25th and 75th percentiles of 0, 25, 50, 75, 100 are 25 and 75; TER is flipped
    scale = ter.calibrate([example(0)], shared=shared)
    assert (scale.how, scale.low, scale.high) == ("reference", 25.0, 75.0)
    assert scale(30.0) == pytest.approx(90.0)  # (75 - 30) / 50 * 100
    assert scale.to_dict()["reference"]["file"] == str(path)
    assert scale.to_dict()["reference"]["percentiles"] == [25.0, 75.0]
    assert len(scale.to_dict()["reference"]["sha256"]) == 64
    # a bare file leaves declared ranges alone; NAME=FILE overrides them for that victim
    bleu = Victim(create_evaluator("bleu"), cache=None)
    assert bleu.calibrate([example(0)], shared=shared).how == "declared"
    named = parse_scale_references([f"bleu={path}"])["bleu"]
    assert bleu.calibrate([example(0)], named=named).how == "reference"
    with pytest.raises(ValueError, match="no such file"):
        parse_scale_references([str(tmp_path / "none.jsonl")])


def test_a_fixed_scale_keeps_a_victims_scores_whatever_is_attacked(tmp_path: Path) -> None:
    one = [example(0), example(1, "Shops fear the closure of the bridge.")]
    two = [example(0), example(2, "The bridge closes in May.")]
    fitted = [Victim(create_evaluator("ter"), cache=None).calibrate(s) for s in (one, two)]
    assert fitted[0] != fitted[1] and all(s.how == "min-max" for s in fitted)
    [shared] = parse_scale_references([str(ter_reference(tmp_path))]).values()
    fixed = [Victim(create_evaluator("ter"), cache=None).calibrate(s, shared=shared)
             for s in (one, two)]
    assert fixed[0] == fixed[1]


def test_the_result_warns_about_a_data_dependent_scale() -> None:
    examples = [example(0), example(1, "Shops fear the closure of the bridge.")]
    gold = Gold([TableVictim(default=80.0)])
    attacker = Attacker(examples, [Victim(create_evaluator("ter")),
                                   Victim(create_evaluator("bleu"))], gold, [], ["good"],
                        AttackParams())
    attacker.run()
    result = attacker.result([])
    [warning] = [n for n in result.notes if "data-dependent" in n]
    assert "ter" in warning and "bleu" not in warning
    scales = {v["label"]: v["scale"] for v in result.info["victims"]}
    assert scales["ter"]["data_dependent"] and not scales["bleu"]["data_dependent"]


def test_a_plugin_declares_its_own_range() -> None:
    assert choose_scale(TableVictim(), "score", []).how == "declared"
