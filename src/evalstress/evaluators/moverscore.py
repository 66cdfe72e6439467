"""MoverScore (Zhao et al. 2019) as paper 002's code computes it, on any local encoder.

Each text becomes contextual token embeddings; the score of a hypothesis against a reference is
`1 - EMD` between the two bags of embeddings, with idf weights as the masses and squared
Euclidean distances between unit vectors as the ground cost (the released MoverScore code):

- tokens kept: not punctuation, not word pieces ('##', with `remove_subwords`), not stop-words;
  [CLS] and [SEP] stay, as in the released code;
- embeddings: `layers=5` (default) is MoverScore v1's pooling, used by paper 002: each of the
  last five hidden layers normalised, then their element-wise min, mean and max concatenated;
  `layers=1` takes the last layer only (MoverScore v2);
- masses: idf from `idf_corpus` (one text per line; log((N+1)/(df+1)), unseen ids log(N+1)), or
  1 for every token without a corpus (the released code's default idf dictionary);
- several references: the mean over them (paper 002's multi-reference scoring).

The earth mover's distance comes from POT (`ot.emd2`). Offline default model: the shipped
MiniLM; paper 002 used BERT fine-tuned on MNLI (`model=PATH`).
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from evalstress.core import models
from evalstress.core.params import BOOLEAN, Param, declare_params, either, one_of, optional, path
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

_PUNCTUATION = frozenset(string.punctuation)


@evaluator("moverscore")
class MoverScore(Evaluator):
    """1 - EMD between idf-weighted contextual token embeddings (MoverScore, n-gram 1)."""

    description = "MoverScore: word mover distance on a local encoder's embeddings (POT)"
    needs_references = True
    batch_size = 32
    library = "pot"
    PARAMS = declare_params(
        model=models.EMBEDDING_MODEL,
        layers=Param(one_of((5, 1)), 5, "5: v1's pooling of the last five layers (paper 002); "
                     "1: the last layer (v2)", short="layers"),
        idf_corpus=Param(optional(path()), None, "a text file, one text per line, for the idf "
                         "weights", default_note="none: every token weighs 1"),
        stopwords=Param(either(one_of(("none", "spacy")), path()), "none", "words left out: "
                        "none, spaCy's list, or a file of whitespace-separated words",
                        short="stop"),
        remove_subwords=Param(BOOLEAN, True, "leave out word pieces (##)"),
        max_length=models.max_length(512),
        device=models.DEVICE)

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        model = values["model"]
        name = models.DEFAULT_EMBEDDING_MODEL if model in ("default", "") else model
        self.params["model"] = name
        for key in ("idf_corpus", "stopwords"):
            file = values[key]
            if file and Path(file).is_file():
                self.params[f"{key}_sha256"] = models.file_sha256(file)
        self.model_name = name
        self.layers = int(values["layers"])
        self.device = values["device"]
        self._embedded: dict[str, tuple[Any, list[str], list[int]]] = {}
        self._truncated: set[str] = set()

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("moverscore",)

    def score_range(self, aspect: str) -> tuple[float, float]:
        """1 - EMD with squared distances between unit vectors (0..4) as the cost: -3..1."""
        return (-3.0, 1.0)

    def versions(self) -> dict[str, str]:
        return {**models.library_versions("pot"), **models.model_metadata(self.model_name)}

    @cached_property
    def shared(self) -> models.Loaded:
        return models.load("base", self.model_name, self.device)

    @cached_property
    def stop_words(self) -> frozenset[str]:
        choice = str(self.params["stopwords"])
        if choice == "none":
            return frozenset()
        if choice == "spacy":
            from spacy.lang.en.stop_words import STOP_WORDS

            return frozenset(STOP_WORDS)
        return frozenset(Path(choice).read_text(encoding="utf-8").split())

    @cached_property
    def idf(self) -> tuple[dict[int, float], float]:
        """(idf per token id, idf of an unseen id); all ones without a corpus."""
        corpus = self.params["idf_corpus"]
        if not corpus:
            return {}, 1.0
        lines = [line for line in Path(corpus).read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        counts: Counter[int] = Counter()
        for line in lines:
            counts.update(set(self._encode(line)[0]))
        n = len(lines)
        return {i: math.log((n + 1) / (c + 1)) for i, c in counts.items()}, math.log(n + 1)

    def _encode(self, text: str) -> tuple[list[int], bool]:
        tokenizer = self.shared.tokenizer
        limit = min(int(self.params["max_length"]), models.window(tokenizer, self.shared.model))
        ids = tokenizer(text, truncation=False, verbose=False)["input_ids"]
        if len(ids) <= limit:
            return list(ids), False
        return [*ids[:limit - 1], ids[-1]], True  # keep the closing special token

    def embed(self, texts: Sequence[str]) -> None:
        """Token embeddings of each new text (pooled as `layers` says), kept for the run."""
        import torch

        todo = [t for t in dict.fromkeys(texts) if t not in self._embedded]
        encoded = [self._encode(t) for t in todo]
        for batch in models.sorted_batches(encoded, 16, lambda e: len(e[0])):
            lengths = [len(encoded[i][0]) for i in batch]
            states = models.hidden_states(self.shared.model, self.shared.device,
                                          [encoded[i][0] for i in batch])
            hidden = torch.stack(states[-self.layers:]).float().cpu()
            hidden = hidden / hidden.norm(dim=-1, keepdim=True)
            if self.layers == 1:
                pooled = hidden[0]
            else:
                pooled = torch.cat([hidden.min(0).values, hidden.mean(0), hidden.max(0).values],
                                   dim=-1)
            for row, i in enumerate(batch):
                tokens = self.shared.tokenizer.convert_ids_to_tokens(encoded[i][0])
                self._embedded[todo[i]] = (pooled[row, :lengths[row]].numpy(), tokens,
                                           encoded[i][0])
        self._truncated |= {t for t, (_, cut) in zip(todo, encoded, strict=True) if cut}

    def _bag(self, text: str) -> tuple[Any, Any]:
        """Kept token vectors and their masses (normalised idf) for one text."""
        import numpy as np

        vectors, tokens, ids = self._embedded[text]
        idf, unseen = self.idf
        keep = [k for k, tok in enumerate(tokens)
                if tok not in _PUNCTUATION and tok not in self.stop_words
                and not (self.params["remove_subwords"] and "##" in tok)]
        weights = np.array([idf.get(ids[k], unseen) for k in keep], dtype=np.float64)
        return vectors[keep], weights

    def pair_score(self, hypothesis: str, reference: str) -> float:
        import numpy as np
        import ot

        ref_vec, ref_w = self._bag(reference)
        hyp_vec, hyp_w = self._bag(hypothesis)
        if not len(ref_w) or not len(hyp_w) or ref_w.sum() <= 0 or hyp_w.sum() <= 0:
            raise ValueError("no token is left to move once punctuation, word pieces and "
                             "stop-words are out")
        raw = np.concatenate([ref_vec, hyp_vec]).astype(np.float64)
        raw = raw / (np.linalg.norm(raw, axis=-1, keepdims=True) + 1e-6)
        squared = (raw ** 2).sum(1)
        cost = np.clip(squared[:, None] + squared[None, :] - 2.0 * raw @ raw.T, 0.0, None)
        c1 = np.concatenate([ref_w / ref_w.sum(), np.zeros(len(hyp_w))])
        c2 = np.concatenate([np.zeros(len(ref_w)), hyp_w / hyp_w.sum()])
        return float(1.0 - ot.emd2(c1, c2, cost))

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        self.embed([t for r in requests for t in (r.text, *r.references)])
        rows: list[ScoreRow] = []
        for request in requests:
            try:
                values = [self.pair_score(request.text, ref) for ref in request.references]
            except ValueError as exc:
                rows.append({"moverscore": Score.missing(str(exc))})
                continue
            cut = any(t in self._truncated for t in (request.text, *request.references))
            rows.append({"moverscore": Score(sum(values) / len(values),
                                             extra=models.truncation_extra(cut))})
        return rows
