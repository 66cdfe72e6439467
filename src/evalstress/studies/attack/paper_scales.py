"""Victim scores on 0-100 the way paper 004's released code puts them there (`--protocol paper`).

The code gives no range to its metrics: each one's `get_score` turns the metric's number into
the one that S and eq. 3 use, by a rule of its own. Under `--protocol paper` a victim the code
attacks gets that rule instead of our declared range, so that a raw BERTScore of 0.7 (85 on
the declared -1..1 range) does not make bad-direction successes come easy:

| victim                                  | the released code's rule                          |
|-----------------------------------------|---------------------------------------------------|
| `bertscore@f`, rescaled with a baseline | rescaled F1 x 100, to one decimal                 |
| `bleu`                                  | sentence BLEU (0-100) as it is, to one decimal    |
| `rouge@rouge2` (F-measure)              | ROUGE-2 F x 100, to one decimal                   |
| `bleurt`                                | BLEURT x 100, to one decimal                      |
| `bartscore@faithfulness`                | exp(mean log-likelihood of the text given the     |
|                                         | source) / 0.06 x 100, at most 150, to one decimal |
| `unieval@consistency` (summarization),  | P(yes) / (P(yes) + P(no)) x 100                   |
| `unieval@coherence` (dialogue)          |                                                   |
| a judge rating on 0-100                 | the mean rating as it is                          |

None of these maps clips: a rescaled BERTScore below its baseline stays negative and the
BARTScore map reaches 150, as in the code. A BERTScore F that is not rescaled has no such rule
(the code always rescales) and is an error unless the user gives `--range` or a named
`--scale-reference`; every other victim keeps the scale `normalise` chooses, and the run's
notes name it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evalstress.evaluators.base import Evaluator
from evalstress.evaluators.comet import Bleurt
from evalstress.evaluators.embedding import BertScore
from evalstress.evaluators.judge import JudgeEvaluator
from evalstress.evaluators.lexical import Bleu, Rouge
from evalstress.evaluators.seq2seq import BartScore, BooleanQA

#: The divisor of the code's BARTScore map (`bartscore.py`: exp(score) / 0.06 * 100).
BARTSCORE_DIVISOR = 0.06
#: The ceiling of the code's BARTScore map.
BARTSCORE_CEILING = 150.0
#: The UniEval dimension the code reads per task (`unieval.py`: consistency, coherence).
UNIEVAL_DIMENSION = {"summarization": "consistency", "dialogue": "coherence"}


@dataclass(frozen=True)
class PaperScale:
    """One victim's map onto the code's 0-100: optionally exp, times `factor`, capped at
    `ceiling`, rounded to `digits`; never clipped. Every victim the code attacks scores higher
    for better text."""

    rule: str
    factor: float = 100.0
    exponential: bool = False
    ceiling: float | None = None
    digits: int | None = 1

    @property
    def data_dependent(self) -> bool:
        return False

    def __call__(self, raw: float) -> float:
        value = (math.exp(raw) if self.exponential else raw) * self.factor
        if self.ceiling is not None:
            value = min(value, self.ceiling)
        return round(value, self.digits) if self.digits is not None else value

    def clips(self, raw: float) -> bool:
        """Never: the code keeps every value its rule gives."""
        return False

    def to_dict(self) -> dict[str, Any]:
        """`low` and `high`: the raw scores that map to 0 and 100 (none maps to 0 under exp)."""
        high = (math.log(100.0 / self.factor) if self.exponential else 100.0 / self.factor)
        return {"how": "paper-code", "rule": self.rule,
                "low": None if self.exponential else 0.0, "high": high,
                "higher_is_better": True, "data_dependent": False, "clipped_by_rule": False}


def paper_scale(evaluator: Evaluator, aspect: str, *, label: str = "") -> PaperScale | None:
    """The released code's map of this victim, or None where the code attacks no such metric.

    Raises for a BERTScore F without a baseline: the code's number is the rescaled one, and an
    unrescaled F times 100 would be another scale under the paper's name."""
    if isinstance(evaluator, BertScore) and aspect == "f":
        if evaluator.baseline_values is None:
            raise ValueError(
                f"{label or evaluator.label} under --protocol paper: paper 004's code scores "
                "BERTScore rescaled with a baseline, x 100; give the victim "
                "rescale_with_baseline=true with baseline_path=CSV or baseline='P R F' "
                "(bert-score ships CSVs for hub models in bert_score/rescale_baseline/), or "
                f"choose its map with --range {evaluator.name}=LO:HI")
        return PaperScale("rescaled BERTScore F x 100, to one decimal (paper 004's code)")
    if isinstance(evaluator, Bleu):
        return PaperScale("sentence BLEU as it is, to one decimal (paper 004's code)",
                          factor=1.0)
    if isinstance(evaluator, Rouge) and aspect == "rouge2" and evaluator.measure == "fmeasure":
        return PaperScale("ROUGE-2 F x 100, to one decimal (paper 004's code)")
    if isinstance(evaluator, Bleurt):
        return PaperScale("BLEURT x 100, to one decimal (paper 004's code)")
    if isinstance(evaluator, BartScore) and aspect == "faithfulness":
        return PaperScale("exp(BARTScore source -> text) / 0.06 x 100, at most 150, to one "
                          "decimal (paper 004's code)", factor=100.0 / BARTSCORE_DIVISOR,
                          exponential=True, ceiling=BARTSCORE_CEILING)
    if isinstance(evaluator, BooleanQA) and evaluator.params.get("forms") == "unieval" and \
            UNIEVAL_DIMENSION.get(str(evaluator.params.get("unieval_task"))) == aspect:
        return PaperScale(f"UniEval {aspect} x 100 (paper 004's code)", digits=None)
    if isinstance(evaluator, JudgeEvaluator) and tuple(evaluator.scale) == (0, 100):
        return PaperScale("the judge's mean 0-100 rating as it is (paper 004's code)",
                          factor=1.0, digits=None)
    return None
