"""BERT-Attack (Li et al. 2020) as paper 004 adapts it: masked-LM substitution over subwords,
aimed at a regression score in either direction (the greedy search: `substitution`).

- Importance: each content word is replaced by the mask token in turn, and the victim scores
  the masked text.
- Candidates come from one pass of the masked LM over the start text, unmasked, split word by
  word into subword pieces: a word of one piece gets the top-`top` tokens predicted at its
  position (whole words, letters only, not the word itself); a word of several pieces (up to
  `max_pieces`) gets the combinations of the top-`per_piece` tokens at each of its positions,
  ranked by the mean log-probability of their pieces (the perplexity of the combination under
  that same pass), best `top` kept, each joined back into a word.
- Changes stop at `max_changed` of the words (TextAttack's recipe: 40%); the sentence
  similarity floor `sim` (TextAttack's 0.2 with the Universal Sentence Encoder) uses MiniLM.

No masked-LM weights ship offline: give `model=PATH` (or EVALSTRESS_MASKED_LM); a model without
a trained masked-LM head is refused (its predictions would be random).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from evalstress.core.text import ParsedText, rebuild_parsed
from evalstress.studies.attack.greedy import load_masked_lm
from evalstress.studies.attack.substitution import GreedySubstitution

METHOD = "bert-attack"


@dataclass
class BertAttack(GreedySubstitution):
    """Settings: `model` (masked LM), `top` (K candidates per word, the paper's 48),
    `per_piece` and `max_pieces` (subword combinations), `max_changed`, `sim`, `start`."""

    model: str = ""
    top: int = 48
    per_piece: int = 4
    max_pieces: int = 3
    max_changed: float = 0.4
    sim: float = 0.2
    start: str = "random"
    device: str = "auto"

    def __post_init__(self) -> None:
        self.method = METHOD
        self.model = self.model or os.environ.get("EVALSTRESS_MASKED_LM", "")
        if not self.model:
            raise ValueError("bert-attack needs a masked LM: bert-attack:model=PATH (or "
                             "EVALSTRESS_MASKED_LM); no masked-LM weights ship offline")
        if not 0 < float(self.max_changed) <= 1:
            raise ValueError(f"max_changed must be a share in (0, 1], got {self.max_changed}")
        for name in ("top", "per_piece", "max_pieces"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        self._predicted: dict[int, list[str]] = {}

    def importance_text(self, parsed: ParsedText, i: int) -> str:
        tokenizer, _ = load_masked_lm(self.model, True)
        return rebuild_parsed(parsed, {i: str(tokenizer.mask_token)})

    def pieces(self, words: list[str]) -> tuple[list[int], list[tuple[int, int]]]:
        """Input ids of the words, piece by piece, with [CLS]/[SEP], and each word's span."""
        tokenizer, _ = load_masked_lm(self.model, True)
        ids = [int(tokenizer.cls_token_id)]
        spans = []
        for word in words:
            found = tokenizer(word, add_special_tokens=False)["input_ids"]
            spans.append((len(ids), len(ids) + len(found)))
            ids.extend(int(i) for i in found)
        ids.append(int(tokenizer.sep_token_id))
        return ids, spans

    def predict(self, words: list[str]) -> dict[int, list[str]]:
        """Candidate words for each word index, from one masked-LM pass over the words."""
        import torch

        tokenizer, model = load_masked_lm(self.model, True)
        ids, spans = self.pieces(words)
        limit = int(getattr(model.config, "max_position_embeddings", 512))
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids[:limit]])).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        special = set(tokenizer.all_special_ids)
        out: dict[int, list[str]] = {}
        for w, (start, end) in enumerate(spans):
            word = words[w].lower()
            if end > min(limit, len(ids)) or end - start > self.max_pieces or end == start:
                out[w] = []
                continue
            if end - start == 1:
                found: list[str] = []
                for token_id in torch.argsort(logprobs[start], descending=True).tolist():
                    if token_id in special:
                        continue
                    piece = tokenizer.convert_ids_to_tokens(token_id)
                    if piece.startswith("##") or not piece.isalpha() or piece.lower() == word:
                        continue
                    found.append(piece)
                    if len(found) == self.top:
                        break
                out[w] = found
                continue
            tops = [torch.topk(logprobs[p], self.per_piece) for p in range(start, end)]
            combos = []
            for choice in itertools.product(range(self.per_piece), repeat=end - start):
                token_ids = [int(tops[k].indices[c]) for k, c in enumerate(choice)]
                if any(t in special for t in token_ids):
                    continue
                score = sum(float(tops[k].values[c]) for k, c in enumerate(choice)) / len(choice)
                text = tokenizer.convert_tokens_to_string(
                    tokenizer.convert_ids_to_tokens(token_ids)).replace(" ", "")
                if text.isalpha() and text.lower() != word:
                    combos.append((-score, text))
            ranked = dict.fromkeys(t for _, t in sorted(combos))
            out[w] = list(ranked)[:self.top]
        return out

    def prepare(self, parsed: ParsedText) -> None:
        predicted = self.predict([t.text for t in parsed.tokens])
        self._predicted = predicted

    def options(self, parsed: ParsedText, i: int) -> list[str]:
        return list(self._predicted.get(i, []))

    def describe(self) -> dict[str, Any]:
        return {"sim": self.sim, "model": self.model, "top": self.top,
                "max_changed": self.max_changed}
