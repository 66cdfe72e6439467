"""Paper 002's appendix-J attack, on any metric: noise the text greedily while the metric stays up.

Each step tries, at every word of the current text, (1) deleting it and (2) replacing it by each
of a candidate set: the masked LM's top-k1 whole words at that position (the word masked) and
the k2 nearest whole-word tokens to it in the masked LM's input-embedding table (k1 = k2 = 8 in
the paper). Replacements that differ only by case or are punctuation are left out, and so are
pieces that continue a word; a word-start piece enters the text as its word (`Ġcar` -> `car`,
`▁car` -> `car`), whatever the vocabulary (`core.wordpieces`). The victim
scores every trial and the step applies the one it scores highest. Steps repeat until the noise
ratio against the start (paper 002 eq. 1) reaches the target, or the budget is spent (then the
best trial of the unfinished step is applied). The record keeps the whole score path.

Every step moves towards the target: a trial takes part only when its noise ratio is above the
current text's, so no text is visited twice in a search. The paper says each step perturbs the
hypothesis and that steps repeat "until the desired noise-ratio is reached", but not what a step
may not do; taken literally, a victim that compares with the original (BERTScore(s, h', h))
scores putting an earlier edit back highest, and the search undoes and redoes one edit until its
budget ends (or walks among texts one edit away). The rule leaves out exactly the trials that
undo an edit or trade it for another at the same noise, and they are never scored.

Paper 002 gives the search no query budget: it ends at the noise target. Each step raises the
word-level distance to the start by one or more, so a search of an n-word text takes at most
ceil(noise * n) steps of at most n * (1 + k1 + k2) trials; with no `--budget` given
(`AttackParams.budget` None) that bound is its budget (`queries_needed`), and a given budget caps
it as it caps every method.

The result is a `bad` attack: noised text the victim still rates high. Success uses eq. 3 with
the gold judge's score of the final text, like every other method, so the ASR table compares
them; the relative victim change and the reached noise ratio are reported beside it. No
masked-LM weights ship offline: give `model=PATH` (or EVALSTRESS_MASKED_LM). A model without a
trained masked-LM head (a sentence encoder such as the shipped MiniLM) is refused unless
`mlm_top=0`, which keeps only the embedding neighbours.
"""

from __future__ import annotations

import functools
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any

from evalstress.core.text import noise_ratio
from evalstress.core.wordpieces import Vocabulary
from evalstress.perturb.base import derive_seed
from evalstress.perturb.model_based import split_word
from evalstress.studies.attack.base import AttackRecord, AttackSetup, finish
from evalstress.studies.attack.embeddings import EmbeddingNeighbours
from evalstress.studies.attack.trajectory import Trajectory

METHOD = "appendix-j"


@functools.lru_cache(maxsize=4)
def load_masked_lm(path: str, require_head: bool) -> tuple[Any, Any]:
    """(tokenizer, model) in eval mode; refuses a model whose MLM head would be random."""
    import transformers

    from evalstress.core import models

    resolved = models.resolve_model(path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(resolved)
    model, info = transformers.AutoModelForMaskedLM.from_pretrained(
        resolved, output_loading_info=True)
    if require_head and info.get("missing_keys"):
        raise ValueError(f"{path} has no trained masked-LM head (missing "
                         f"{len(info['missing_keys'])} weights such as "
                         f"{sorted(info['missing_keys'])[0]}): its top-k predictions would be "
                         "random; give a masked LM, or mlm_top=0 to use its embeddings only")
    return tokenizer, model.eval()


@dataclass
class AppendixJ:
    """Settings: `model` (masked LM path), `noise` (target noise ratio), `mlm_top` (k1),
    `neighbours` (k2), `positions` (words tried per step; 0 = all, as in the paper)."""

    model: str = ""
    noise: float = 0.2
    mlm_top: int = 8
    neighbours: int = 8
    positions: int = 0
    _table: EmbeddingNeighbours | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.model = self.model or os.environ.get("EVALSTRESS_MASKED_LM", "")
        if not self.model:
            raise ValueError("appendix-j needs a masked LM: appendix-j:model=PATH (or "
                             "EVALSTRESS_MASKED_LM); no masked-LM weights ship offline")
        if not 0 < float(self.noise) <= 1:
            raise ValueError(f"noise must be a ratio in (0, 1], got {self.noise}")

    def applies(self, direction: str) -> bool:
        return direction == "bad"

    def _loaded(self) -> tuple[Any, Any, EmbeddingNeighbours]:
        tokenizer, model = load_masked_lm(self.model, self.mlm_top > 0)
        if self._table is None:
            self._table = EmbeddingNeighbours(model, tokenizer)
        return tokenizer, model, self._table

    def _mlm(self, words: list[str], positions: list[int]) -> dict[int, list[str]]:
        """Top whole-word predictions at each position, the word masked (one batch)."""
        if self.mlm_top <= 0 or not positions:
            return {p: [] for p in positions}
        import torch

        tokenizer, model, _ = self._loaded()
        texts = []
        for p in positions:
            before, _, after = split_word(words[p])
            texts.append(" ".join([*words[:p], before + tokenizer.mask_token + after,
                                   *words[p + 1:]]))
        enc = tokenizer(texts, truncation=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits
        vocabulary = Vocabulary(tokenizer)
        out: dict[int, list[str]] = {}
        for row, p in enumerate(positions):
            where = (enc["input_ids"][row] == tokenizer.mask_token_id).nonzero()
            found: list[str] = []
            if len(where):
                core = split_word(words[p])[1].lower()
                for token_id in torch.argsort(logits[row, int(where[0, 0])],
                                              descending=True).tolist():
                    word = vocabulary.whole_word(token_id)
                    if word is None or word.lower() == core:
                        continue
                    found.append(word)
                    if len(found) == self.mlm_top:
                        break
            out[p] = found
        return out

    def trials(self, words: list[str], positions: list[int]) -> list[tuple[str, int, str, str]]:
        """(text, position, old word, new word or '' for a deletion) for each operation."""
        _, _, table = self._loaded()
        predicted = self._mlm(words, positions)
        out = []
        for p in positions:
            before, core, after = split_word(words[p])
            rest = words[:p] + words[p + 1:]
            if rest:
                out.append((" ".join(rest), p, words[p], ""))
            if not core.isalpha():
                continue
            options = dict.fromkeys(predicted[p])
            for neighbour, _ in table.neighbours(core.lower(), self.neighbours):
                options.setdefault(neighbour, None)
            for option in options:
                if option.lower() == core.lower():
                    continue
                new = option[:1].upper() + option[1:] if core[:1].isupper() else option
                out.append((" ".join([*words[:p], before + new + after, *words[p + 1:]]), p,
                            words[p], before + new + after))
        return out

    def queries_needed(self, length: int) -> int:
        """Victim queries that let a search of a `length`-word text always reach the target:
        the start, then ceil(noise * length) steps (each adds at least one word of distance)
        of one deletion and up to k1 + k2 replacements at each word tried."""
        steps = math.ceil(float(self.noise) * length - 1e-9)
        tried = min(self.positions, length) if self.positions > 0 else length
        return 1 + steps * tried * (1 + self.mlm_top + self.neighbours)

    @staticmethod
    def forward(start: str, ratio: float, trials: list[tuple[str, int, str, str]]
                ) -> list[tuple[tuple[str, int, str, str], float]]:
        """The trials a step may take, each with its noise ratio against `start`: those that lie
        farther from it than the current text (`ratio`), each text once. Along a search the
        ratio only rises, so no text is visited twice and none of these was visited before."""
        out, seen = [], set()
        for trial in trials:
            if trial[0] in seen:
                continue
            seen.add(trial[0])
            reached = noise_ratio(start, trial[0])
            if reached > ratio:
                out.append((trial, reached))
        return out

    def run(self, setup: AttackSetup) -> AttackRecord:
        text = setup.example.hypothesis
        words = text.split()
        setup.bound_budget(self.queries_needed(len(words)))
        trajectory = Trajectory(setup.evaluate([text], 0, ["original"]))
        if not trajectory.items:
            return finish(setup, METHOD, trajectory, start="original", start_text=text,
                          stop="original-unscored", iterations=0, rule="final-text")
        first = trajectory.items[0]
        value, raw = first.victim, first.victim_raw
        path: list[dict[str, Any]] = [{"step": 0, "op": "start", "noise_ratio": 0.0,
                                       "victim": value, "victim_raw": raw}]
        rng = random.Random(derive_seed(setup.params.seed, setup.example.id, METHOD))
        ratio, stop, step = 0.0, "", 0
        while ratio < self.noise:
            if setup.budget.exhausted:
                stop = "budget"
                break
            if not words:
                stop = "empty"
                break
            positions = list(range(len(words)))
            if 0 < self.positions < len(positions):
                positions = sorted(rng.sample(positions, self.positions))
            trials = self.forward(text, ratio, self.trials(words, positions))
            if not trials:
                stop = "no-trials"
                break
            scores = setup.victim_scores([t[0] for t, _ in trials])
            scored = [(t, r, m) for (t, r), m in zip(trials, scores, strict=False)
                      if m.value is not None]
            if not scored:
                stop = "no-trials"
                break
            step += 1
            (new_text, position, old, new), ratio, best = max(
                scored, key=lambda trm: trm[2].value or 0.0)
            words = new_text.split()
            value, raw = best.value or 0.0, best.raw
            path.append({"step": step, "op": "substitute" if new else "delete",
                         "position": position, "old": old, "new": new, "noise_ratio": ratio,
                         "victim": value, "victim_raw": raw, "text": new_text,
                         "complete": len(scores) == len(trials)})
        stop = stop or "noise"
        final = " ".join(words) if step else text
        result = None
        if final != text:
            result = setup.judge_final(final, step, value, raw, f"noise ratio {ratio:.3f}")
            if result is not None:
                trajectory.add(result)
        change = ((raw - first.victim_raw) / abs(first.victim_raw)
                  if raw is not None and first.victim_raw else None)
        return finish(setup, METHOD, trajectory, start="original", start_text=text, stop=stop,
                      iterations=step, result=result, rule="final-text",
                      extra={"path": path, "noise_target": self.noise, "noise_ratio": ratio,
                             "final_text": final, "relative_victim_change": change,
                             "mlm_top": self.mlm_top, "neighbours": self.neighbours,
                             "positions": self.positions, "query_budget": setup.budget.total})
