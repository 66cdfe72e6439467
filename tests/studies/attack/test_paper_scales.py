"""`--protocol paper` puts each victim that paper 004's released code attacks on 0-100 with the
code's own rule (`src/evaluator/*.py`, `get_score`); the expected numbers below are those rules
worked by hand, e.g. BERTScore: round(rescaled F * 100, 1)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from evalstress.engine.scoring import open_cache
from evalstress.evaluators.base import Score, ScoreRequest, ScoreRow, create_evaluator
from evalstress.evaluators.comet import Bleurt
from evalstress.evaluators.embedding import BertScore
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.methods import AdvEvalMethod
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.paper_scales import paper_scale
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim, gold_evaluator

from .conftest import ORIGINAL, TableVictim, example, generator_spec, judge_spec

REWRITE = "Twelve million euros buy the harbour a new bridge from May."
RESCALED = "bertscore:rescale_with_baseline=true,baseline=0.8 0.8 0.8"


class ScriptedBertScore(BertScore):
    """BERTScore whose (already rescaled) P, R and F for a text come from a table: the number
    bert-score would hand the code, without a model."""

    def __init__(self, table: Mapping[str, float], **given: Any):
        super().__init__(**given)
        self.table = dict(table)

    def score_parts(self, requests: Sequence[ScoreRequest]) -> Iterator[list[ScoreRow]]:
        yield [{aspect: Score(self.table[r.text]) for aspect in self.aspects}
               for r in requests]


def rescaled_bertscore(table: Mapping[str, float]) -> ScriptedBertScore:
    return ScriptedBertScore(table, rescale_with_baseline=True, baseline="0.8 0.8 0.8")


def paper_params(**extra: Any) -> AttackParams:
    return AttackParams(**{"stop_rule": "highest-feedback", "patience": 1, "gold_samples": 1,
                           "candidates": 1, "max_iterations": 1, "protocol": "paper", **extra})


def test_a_rescaled_bertscore_victim_scores_f_times_100_in_a_paper_search(
        scripted: Callable[..., Any]) -> None:
    # the generator writes REWRITE; gold 60 for the original, 75 for REWRITE; towards good.
    # By hand, the code's rule round(F * 100, 1): original 0.9 -> 90.0, REWRITE 0.23456 ->
    # 23.5; S = 75 - 23.5 = 51.5, and 75 > 70 with a gap of 51.5 >= 40: a success. The declared
    # range of F rescaled with b = 0.8 (-9..1) would give (0.23456 + 9) / 10 * 100 = 92.3 and
    # no success.
    server, _ = scripted(lambda seed: f"<text>{REWRITE}</text>",
                         lambda text: 75.0 if text == REWRITE else 60.0)
    cache = open_cache()
    bert = Victim(rescaled_bertscore({ORIGINAL: 0.9, REWRITE: 0.23456}), "f", cache=cache)
    table = Victim(TableVictim({ORIGINAL: 40.0, REWRITE: 20.0}), cache=cache)
    attacker = Attacker([example(0)], [bert, table],
                        Gold([gold_evaluator(judge_spec(server), 1)], cache=cache),
                        [AdvEvalMethod(TextGenerator.from_spec(generator_spec(server)))],
                        ["good"], paper_params())
    records = attacker.run()
    [on_bert] = [r for r in records if r.victim == "bertscore@f"]
    assert (on_bert.text, on_bert.victim_original, on_bert.victim_score) == (REWRITE, 90.0, 23.5)
    assert (on_bert.feedback, on_bert.success) == (51.5, True)
    notes = attacker.result(records).notes
    assert any("paper 004's code's 0-100 map: bertscore@f (rescaled BERTScore F x 100" in n
               for n in notes), notes
    # a victim the code has no rule for keeps its declared range, and the notes say so
    assert any("keep our scale" in n and "table-victim (declared)" in n for n in notes), notes
    assert bert.describe()["scale"]["how"] == "paper-code"


@pytest.mark.parametrize(("spec", "aspect", "raw", "expected"), [
    (RESCALED, "f", 0.23456, 23.5),  # round(0.23456 * 100, 1)
    (RESCALED, "f", -0.0734, -7.3),  # below the baseline: negative, not clipped
    ("bleu", "bleu", 37.26, 37.3),  # sentence BLEU as it is, one decimal
    ("rouge", "rouge2", 0.1234, 12.3),  # round(0.1234 * 100, 1)
    ("bleurt", "score", 1.0712, 107.1),  # x 100, not clipped
    ("bartscore:model=unused", "faithfulness", math.log(0.03), 50.0),  # 0.03 / 0.06 * 100
    ("bartscore:model=unused", "faithfulness", math.log(0.0123), 20.5),  # 0.0123 / 0.06 * 100
    ("bartscore:model=unused", "faithfulness", -1.0, 150.0),  # e^-1 / 0.06 * 100 = 613: cap
    ("unieval:model=unused", "consistency", 0.8125, 81.25),  # x 100, not rounded
    ("unieval:model=unused,task=dialogue", "coherence", 0.8125, 81.25),
    ("judge:model=m,base_url=http://127.0.0.1:9/v1,scale=0-100,cache=false", "overall",
     63.4, 63.4),  # the mean rating as it is
])
def test_the_code_map_of_each_victim_it_attacks(spec: str, aspect: str, raw: float,
                                                expected: float) -> None:
    # BLEURT's port may be absent here: its class needs nothing to be built
    evaluator = Bleurt(model="unused") if spec == "bleurt" else create_evaluator(spec)
    scale = paper_scale(evaluator, aspect)
    assert scale is not None and not scale.data_dependent and not scale.clips(raw)
    assert scale(raw) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("spec", "aspect"), [
    (RESCALED, "precision"),  # the code reads F1 only
    ("rouge", "rougeL"),  # the code attacks ROUGE-2
    ("rouge:measure=precision", "rouge2"),
    ("bartscore:model=unused", "f"),  # the code scores source -> text only
    ("unieval:model=unused", "fluency"),
    ("unieval:model=unused,task=dialogue", "consistency"),
    ("judge:model=m,base_url=http://127.0.0.1:9/v1,scale=1-5,cache=false", "overall"),
    ("chrf", "chrf"),
    ("ter", "ter"),
])
def test_victims_the_code_does_not_attack_have_no_code_map(spec: str, aspect: str) -> None:
    assert paper_scale(create_evaluator(spec), aspect) is None


def test_an_unrescaled_bertscore_victim_is_refused_under_the_paper_protocol() -> None:
    def attacker(params: AttackParams, ranges: Mapping[str, tuple[float, float]] | None = None
                 ) -> Attacker:
        victim = Victim(create_evaluator("bertscore"), "f")
        gold = Gold([TableVictim()])
        return Attacker([example(0)], [victim], gold, [], ["good"], params, ranges=ranges)

    with pytest.raises(ValueError, match="rescale_with_baseline=true"):
        attacker(paper_params())
    # the user's own range wins over the protocol, and our default protocol is unchanged
    chosen = attacker(paper_params(), {"bertscore": (0.0, 1.0)})
    assert chosen.paper_scales == [None]
    assert attacker(AttackParams()).paper_scales == [None]
