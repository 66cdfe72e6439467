"""COMET / COMET-QE (unbabel-comet) and BLEURT (the PyTorch port) from local checkpoints.

Both libraries are optional: `pip install unbabel-comet` (its pins clash with transformers 5,
so it often lives in its own environment) and `pip install bleurt-pytorch` (0.0.1 imports
helpers that transformers 5 removed, so it needs transformers 4). Checkpoints come from
a local path (`model=/path/to/checkpoints/model.ckpt` for COMET, a folder for BLEURT); nothing is
downloaded. With several references, each is scored and the best kept.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from evalstress.core import models
from evalstress.core.params import declare_params
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator


def _import(module: str, install: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this evaluator needs the '{install}' package: pip install {install} "
                          f"({exc})") from exc


class _CometBase(Evaluator):
    uses_reference = True
    batch_size = 64
    library = "unbabel-comet"
    PARAMS = declare_params(model=models.MODEL_PATH, batch_size=models.model_batch(16),
                            device=models.DEVICE)

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        if not values["model"]:
            raise ValueError(f"{self.name} needs model=PATH of a local COMET checkpoint "
                             "(checkpoints/model.ckpt); nothing is downloaded")
        self.model_name = values["model"]
        self.rows_per_batch = int(values["batch_size"])
        self.device = values["device"]

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("score",)

    def versions(self) -> dict[str, str]:
        return {**models.library_versions("unbabel-comet"),
                **models.model_metadata(self.model_name)}

    @cached_property
    def model(self) -> Any:
        comet = _import("comet", "unbabel-comet")
        return comet.load_from_checkpoint(models.resolve_model(self.model_name))

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        data: list[dict[str, str]] = []
        owner: list[int] = []
        rows: list[ScoreRow] = [{} for _ in requests]
        for i, request in enumerate(requests):
            if not request.source:
                rows[i]["score"] = Score.missing("COMET needs the source text")
                continue
            if self.uses_reference:
                if not request.references:
                    rows[i]["score"] = Score.missing("no references for this example")
                    continue
                for reference in request.references:
                    data.append({"src": request.source, "mt": request.text, "ref": reference})
                    owner.append(i)
            else:
                data.append({"src": request.source, "mt": request.text})
                owner.append(i)
        if data:
            gpus = 1 if models.choose_device(self.device).startswith("cuda") else 0
            output = self.model.predict(data, batch_size=self.rows_per_batch, gpus=gpus,
                                        progress_bar=False)
            best: dict[int, float] = {}
            for i, value in zip(owner, output.scores, strict=True):
                best[i] = max(float(value), best.get(i, float("-inf")))
            for i, value in best.items():
                rows[i]["score"] = Score(value)
        return rows


@evaluator("comet")
class Comet(_CometBase):
    """Reference-based COMET from a local checkpoint (source, hypothesis, reference)."""

    description = "COMET (unbabel-comet) from a local checkpoint, best reference"
    uses_reference = True


@evaluator("comet-qe")
class CometQE(_CometBase):
    """Reference-free COMET-QE from a local checkpoint (source, hypothesis)."""

    description = "COMET-QE (unbabel-comet), reference-free, local checkpoint"
    uses_reference = False


@evaluator("bleurt")
class Bleurt(Evaluator):
    """BLEURT through the bleurt-pytorch port, from a local checkpoint folder."""

    description = "BLEURT via bleurt-pytorch, local checkpoint folder, best reference"
    needs_references = True
    batch_size = 64
    library = "bleurt-pytorch"
    PARAMS = declare_params(model=models.MODEL_PATH, batch_size=models.model_batch(16),
                            device=models.DEVICE, max_length=models.max_length(512))

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        if not values["model"]:
            raise ValueError("bleurt needs model=PATH of a local BLEURT PyTorch checkpoint")
        self.model_name = values["model"]
        self.rows_per_batch = int(values["batch_size"])
        self.device = values["device"]
        self.max_length = int(values["max_length"])

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("score",)

    def versions(self) -> dict[str, str]:
        return {**models.library_versions("bleurt-pytorch"),
                **models.model_metadata(self.model_name)}

    @cached_property
    def loaded(self) -> tuple[Any, Any, str]:
        port = _import("bleurt_pytorch", "bleurt-pytorch")
        path = models.resolve_model(self.model_name)
        device = models.choose_device(self.device)
        model = port.BleurtForSequenceClassification.from_pretrained(path).to(device).eval()
        return model, port.BleurtTokenizer.from_pretrained(path), device

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        import torch

        model, tokenizer, device = self.loaded
        pairs = [(i, ref, r.text) for i, r in enumerate(requests) for ref in r.references]
        best: dict[int, tuple[float, bool]] = {}
        for batch in models.sorted_batches(pairs, self.rows_per_batch,
                                           lambda p: len(p[1]) + len(p[2])):
            refs = [pairs[j][1] for j in batch]
            cands = [pairs[j][2] for j in batch]
            full = tokenizer(refs, cands, truncation=False)["input_ids"]
            enc = tokenizer(refs, cands, padding="longest", truncation=True,
                            max_length=self.max_length, return_tensors="pt")
            with torch.no_grad():
                values = model(**{k: v.to(device) for k, v in enc.items()}).logits.flatten()
            for row, j in enumerate(batch):
                i = pairs[j][0]
                cut = len(full[row]) > self.max_length
                old = best.get(i)
                best[i] = (max(float(values[row]), old[0]), cut or old[1]) if old \
                    else (float(values[row]), cut)
        return [{"score": Score(best[i][0], extra=models.truncation_extra(best[i][1]))}
                for i in range(len(requests))]
