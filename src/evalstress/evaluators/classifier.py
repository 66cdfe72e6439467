"""Any local Hugging Face sequence-classification or regression model as a scorer.

A regression head (one output) gives its raw value; a classifier gives the softmax probability of
one label (`label=` name or index; default: the last label, usually the "good" class). With
`pair=references` or `pair=source` the model reads (text, other) as a sentence pair; several
references keep the best. Inputs beyond the window are cut and flagged.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from evalstress.core import models
from evalstress.core.params import TEXT, Param, declare_params, either, one_of, optional, whole_number
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator


@evaluator("hf-classifier")
class HFClassifier(Evaluator):
    """Score = regression output, or the probability of one class, of a local HF model."""

    description = "any local HF sequence classification/regression model (model=PATH)"
    batch_size = 64
    library = "transformers"
    PARAMS = declare_params(
        model=models.MODEL_PATH,
        label=Param(optional(either(whole_number(0), TEXT)), None, "the class whose "
                    "probability is the score, by index or name", short="label",
                    default_note="the last class"),
        pair=Param(one_of(("none", "references", "source")), "none", "read the text alone, or "
                   "as a pair with each reference (best kept) or the source", short="pair"),
        aspect=Param(TEXT, "score", "the name of the score", signed="never"),
        batch_size=models.model_batch(16),
        max_length=models.max_length(None),
        device=models.DEVICE)

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        if not values["model"]:
            raise ValueError("hf-classifier needs model=PATH (or hub name) of a sequence "
                             "classification or regression model")
        self.model_name = values["model"]
        self.pair = values["pair"]
        self.aspect = values["aspect"]
        self.rows_per_batch = int(values["batch_size"])
        self.device = values["device"]
        self.max_length = values["max_length"]

    @property
    def aspects(self) -> tuple[str, ...]:
        return (self.aspect,)

    def score_range(self, aspect: str) -> tuple[float, float] | None:
        """0-1 for a class probability; None for a regression head (its outputs are unbounded)."""
        return None if self.label_index is None else (0.0, 1.0)

    def versions(self) -> dict[str, str]:
        return {**models.library_versions(), **models.model_metadata(self.model_name)}

    @cached_property
    def shared(self) -> models.Loaded:
        return models.load("seq-cls", self.model_name, self.device)

    @cached_property
    def label_index(self) -> int | None:
        """None for a regression head, else the class whose probability is the score."""
        config = self.shared.model.config
        if config.num_labels == 1:
            return None
        wanted = self.params["label"]
        if wanted is None:
            return int(config.num_labels - 1)
        if isinstance(wanted, int):
            if not 0 <= wanted < config.num_labels:
                raise ValueError(f"hf-classifier label={wanted} is outside "
                                 f"0..{config.num_labels - 1}")
            return wanted
        by_name = {str(v).lower(): int(k) for k, v in config.id2label.items()}
        if str(wanted).lower() not in by_name:
            raise ValueError(f"hf-classifier label='{wanted}' is not one of "
                             f"{sorted(config.id2label.values())}")
        return by_name[str(wanted).lower()]

    @cached_property
    def limit(self) -> int:
        full = models.window(self.shared.tokenizer, self.shared.model)
        return min(full, self.max_length) if self.max_length else full

    def predict(self, inputs: Sequence[tuple[str, str | None]]) -> list[tuple[float, bool]]:
        """Score each (text, pair-or-None); length-sorted batches; flags inputs that were cut."""
        import torch

        tokenizer, model = self.shared.tokenizer, self.shared.model
        out: list[tuple[float, bool]] = [(0.0, False)] * len(inputs)
        for batch in models.sorted_batches(inputs, self.rows_per_batch,
                                           lambda x: len(x[0]) + len(x[1] or "")):
            firsts = [inputs[i][0] for i in batch]
            seconds = [inputs[i][1] for i in batch]
            args: list[Any] = [firsts] if self.pair == "none" else [firsts, seconds]
            full = tokenizer(*args, truncation=False, verbose=False)["input_ids"]
            enc = tokenizer(*args, truncation=True, max_length=self.limit, padding=True,
                            return_tensors="pt")
            with torch.no_grad():
                logits = model(**{k: v.to(self.shared.device) for k, v in enc.items()}
                               ).logits.float()
            if self.label_index is None:
                values = logits[:, 0]
            else:
                values = torch.softmax(logits, dim=-1)[:, self.label_index]
            for row, i in enumerate(batch):
                out[i] = (float(values[row]), len(full[row]) > self.limit)
        return out

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        jobs: list[tuple[int, tuple[str, str | None]]] = []
        rows: list[ScoreRow] = [{} for _ in requests]
        for i, request in enumerate(requests):
            if self.pair == "none":
                jobs.append((i, (request.text, None)))
            elif self.pair == "source":
                if request.source:
                    jobs.append((i, (request.text, request.source)))
            else:
                jobs.extend((i, (request.text, ref)) for ref in request.references)
        results = self.predict([job for _, job in jobs])
        best: dict[int, tuple[float, bool]] = {}
        for (i, _), (value, cut) in zip(jobs, results, strict=True):
            old = best.get(i)
            best[i] = (max(value, old[0]), cut or old[1]) if old else (value, cut)
        for i in range(len(requests)):
            if i in best:
                value, cut = best[i]
                rows[i][self.aspect] = Score(value, extra=models.truncation_extra(cut))
            else:
                rows[i][self.aspect] = Score.missing(f"no {self.pair} for this example")
        return rows
