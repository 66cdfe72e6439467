"""A DHP fixture: SummEval highlights under the dhp suite, scored by a rule-based stand-in for a
judge on a 1-5 scale (two aspects), so the sequential design can be checked against the full one.

- fluency: the share of words found in the vocabulary of the clean texts (character damage lowers
  it), cubed, with hash-seeded noise of +-0.7 before rounding: strong and weak effects;
- informativeness: the word count against a noisy per-text target (deleted spans lower it).
Both are blind to sentence order: those units are true nulls.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from evalstress.core.data import Example
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow

WORD = re.compile(r"[A-Za-z]+")


def _noise(text: str, salt: str) -> float:
    digest = hashlib.sha256((salt + text).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 - 0.5


class RuleJudge(Evaluator):
    """Counts the texts it is asked to score, like the calls of an LLM judge."""

    name = "rule-judge"
    batch_size = 64

    def __init__(self, examples: Sequence[Example]):
        super().__init__()
        self.vocabulary = {w.lower() for e in examples for w in WORD.findall(e.hypothesis)}
        self.texts = 0

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("fluency", "informativeness")

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        rows = []
        for request in requests:
            self.texts += 1
            words = WORD.findall(request.text)
            known = sum(w.lower() in self.vocabulary for w in words) / max(1, len(words))
            fluency = 1 + 4 * known ** 3 + 1.4 * _noise(request.text, "f")
            target = 45 + 30 * _noise(request.source, "len")
            info = 1 + 4 * min(1.0, len(words) / target) + 1.4 * _noise(request.text, "i")
            rows.append({"fluency": Score(float(min(5, max(1, round(fluency))))),
                         "informativeness": Score(float(min(5, max(1, round(info)))))})
        return rows
