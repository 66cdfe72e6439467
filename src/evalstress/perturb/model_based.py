"""Perturbations that need a model: BERT-diverge of paper 002 (Table 16).

BERT-diverge replaces a portion of the words one at a time: mask one word at a random position,
let a masked LM predict it from the (already partly replaced) text, and draw the replacement from
its top-10 whole-word predictions in proportion to their probabilities. With no access to the
source, the meaning drifts step by step. The masked LM comes from `model=PATH` (or the
EVALSTRESS_MASKED_LM environment variable); no masked-LM weights ship offline.
"""

from __future__ import annotations

import os
import random
import string
from typing import Any

from evalstress.core.params import TEXT, declare, whole_number
from evalstress.core.wordpieces import Vocabulary
from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    perturbation,
    sample_count,
)

_EDGE = string.punctuation + "“”‘’"


def split_word(word: str) -> tuple[str, str, str]:
    """Leading punctuation, word, trailing ('(Boston).' -> '(', 'Boston', ').'); greedy attacks too."""
    core = word.strip(_EDGE)
    if not core:
        return word, "", ""
    start = word.index(core)
    return word[:start], core, word[start + len(core):]


@perturbation("bert-diverge")
class BertDiverge(Perturbation):
    PARAMS = declare(model=TEXT, top_k=whole_number(1), device=TEXT)
    family = "consistency"
    level = "word"
    method = "model"
    damages = ("faithfulness", "non-hallucination", "adequacy", "overall")
    preserves = ("fluency",)
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = ("Replace a portion of the words one by one with a masked LM's top-10 "
                   "predictions (needs model=PATH of a masked LM).")
    source_papers = ("002",)

    def __init__(self, model: str | None = None, top_k: int = 10, device: str = "auto",
                 **params: Any):
        super().__init__(model=model, top_k=top_k, device=device, **params)
        self.model_name = model or os.environ.get("EVALSTRESS_MASKED_LM", "")
        self.top_k = int(top_k)
        self.device = device

    def unmet(self) -> str | None:
        if self.model_name:
            return None
        return ("bert-diverge needs a masked LM: give model=PATH in the suite (perturbations: "
                "{bert-diverge: {model: PATH}}) or set EVALSTRESS_MASKED_LM; no masked-LM "
                "weights ship offline")

    def _loaded(self) -> Any:
        from evalstress.core import models

        missing = self.unmet()
        if missing is not None:
            raise ValueError(missing)
        return models.load("masked-lm", self.model_name, self.device)

    def candidates(self, words: list[str], position: int) -> list[tuple[str, float]]:
        """Top-k whole-word predictions for the word at `position`, with their probabilities."""
        import torch

        loaded = self._loaded()
        tokenizer, model = loaded.tokenizer, loaded.model
        before, core, after = split_word(words[position])
        masked = [*words[:position], before + tokenizer.mask_token + after, *words[position + 1:]]
        enc = tokenizer(" ".join(masked), truncation=True, return_tensors="pt")
        where = (enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()
        if len(where) == 0:  # the mask fell beyond the model window
            return []
        with torch.no_grad():
            logits = model(**{k: v.to(loaded.device) for k, v in enc.items()}).logits[0]
        probs = torch.softmax(logits[int(where[0, 0])].float(), dim=-1)
        vocabulary = Vocabulary(tokenizer)
        found: list[tuple[str, float]] = []
        for token_id in torch.argsort(probs, descending=True).tolist():
            word = vocabulary.whole_word(token_id)
            if word is None or word.lower() == core.lower():
                continue
            found.append((word, float(probs[token_id])))
            if len(found) == self.top_k:
                break
        return found

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        words = ctx.text.split()
        editable = [i for i, w in enumerate(words) if split_word(w)[1].isalpha()]
        if not editable:
            return Skip("no alphabetic words to replace")
        count = sample_count(len(editable), float(severity), rng)
        replaced = 0
        for position in rng.sample(editable, count):
            options = self.candidates(words, position)
            if not options:
                continue
            total = sum(p for _, p in options)
            pick, acc = rng.random() * total, 0.0
            choice = options[-1][0]
            for word, p in options:
                acc += p
                if pick < acc:
                    choice = word
                    break
            before, core, after = split_word(words[position])
            if core[:1].isupper():
                choice = choice[:1].upper() + choice[1:]
            words[position] = before + choice + after
            replaced += 1
        if not replaced:
            return Skip("the masked LM offered no whole-word replacement")
        return " ".join(words)

