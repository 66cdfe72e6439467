"""Probes of paper 002 aimed at metric design choices: repetition, positioned errors, injection."""

from __future__ import annotations

import random

from evalstress.perturb.base import Perturbation, PerturbContext, Severity, Skip, perturbation


@perturbation("repetition")
class Repetition(Perturbation):
    family = "probe"
    level = "word"
    damages = ("fluency", "readability", "overall")
    preserves = ("non-hallucination", "non-contradiction", "informativeness")
    severity_param = "k"
    grid = (10, 20, 30)
    description = "Append k copies of the last 4-gram (rep-k), the degeneration LMs fall into."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        words = ctx.text.split()
        n = int(self.params.get("n", 4))
        if len(words) < n:
            return Skip(f"fewer than {n} words, so no last {n}-gram")
        gram = " ".join(words[-n:])
        return " ".join([ctx.text.rstrip(), *([gram] * int(severity))])
