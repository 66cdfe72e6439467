"""Consistency noise of paper 002: break order, logic or agreement with the source."""

from __future__ import annotations

import random

from evalstress.perturb.base import Perturbation, PerturbContext, Severity, Skip, perturbation


@perturbation("sentence-switching")
class SentenceSwitching(Perturbation):
    family = "consistency"
    level = "sentence"
    damages = ("coherence", "readability", "overall")
    preserves = ("fluency", "grammaticality", "informativeness", "non-hallucination")
    severity_param = "pairs"
    grid = (1, 2, 3, 4)
    description = "Switch several random pairs of sentences, breaking temporal and logical order."
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        sentences = ctx.parsed.sentence_texts()
        movable = len(sentences) - 1 if self.params.get("keep_last") else len(sentences)
        if movable < 2:
            return Skip("fewer than two sentences that may move")
        order = list(range(len(sentences)))
        for _ in range(int(severity)):
            i, j = rng.sample(range(movable), 2)
            order[i], order[j] = order[j], order[i]
        if order == sorted(order):  # an even number of swaps may restore the order
            i, j = rng.sample(range(movable), 2)
            order[i], order[j] = order[j], order[i]
        return " ".join(sentences[k] for k in order)
