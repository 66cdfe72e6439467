"""MAUVE (mauve-text): how far a set of texts is, as a distribution, from the gold set.

Features are the last layer's hidden state at each text's final token, as mauve-text's own
featurizer computes them, from any local model (GPT-2-, RoBERTa-, ELECTRA-like; offline default:
the shipped MiniLM). The quantization (k-means, `num_buckets='auto'` = n/10 clusters, 500
iterations, scaling c=5: paper 002 appendix A) takes its seed from `seed`.

Corpus level: the runner calls `score_sets(gold, candidates)` once per gold / noised set. The
reference distribution P is the gold set (`against=gold`: the gold set itself scores 1.0), the
examples' references (`against=references`), or a separate set of texts from a file
(`reference_set=FILE`: .txt one text per line, or .jsonl with `reference_field`, default "text",
and optionally `reference_where=FIELD=VALUE`). Paper 002 (appendix A) draws P from a separate set
of the same distribution, never the gold set: the paper protocol refuses `against=gold`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from evalstress.core import models
from evalstress.core.params import (
    TEXT,
    Param,
    declare_params,
    either,
    one_of,
    optional,
    path,
    real,
    whole_number,
)
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator


@evaluator("mauve")
class Mauve(Evaluator):
    """MAUVE between a reference set and each scored set, from local-model features."""

    description = "MAUVE (mauve-text), features of any local model; distribution-level"
    level = "corpus"
    library = "mauve-text"
    PARAMS = declare_params(
        model=models.EMBEDDING_MODEL,
        seed=Param(whole_number(0), 25, "the k-means seed", short="seed"),
        against=Param(optional(one_of(("gold", "references", "file"))), None, "the reference "
                      "distribution P: the gold set, the examples' references, or "
                      "reference_set", short="vs", default_note="file with a reference_set, "
                      "else gold"),
        num_buckets=Param(either(one_of(("auto",)), whole_number(1)), "auto", "k-means "
                          "clusters (auto: a tenth of the texts)"),
        kmeans_num_redo=Param(whole_number(1), 5, "k-means restarts"),
        kmeans_max_iter=Param(whole_number(1), 500, "k-means iterations"),
        scaling=Param(real(0, above=True), 5.0, "MAUVE's scaling constant c"),
        max_text_length=models.max_length(1024, "tokens a text is cut to"),
        batch_size=models.model_batch(16),
        device=models.DEVICE,
        reference_set=Param(optional(path()), None, "a separate reference set: .txt, one text "
                            "a line, or .jsonl", signed="never"),
        reference_field=Param(TEXT, "text", "the .jsonl field holding the text",
                              signed="never"),
        reference_where=Param(optional(TEXT), None, "FIELD=VALUE: the .jsonl records to keep",
                              signed="never"))

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        reference_set = values["reference_set"]
        against = values["against"] or ("file" if reference_set else "gold")
        if (against == "file") != bool(reference_set):
            raise ValueError("mauve: reference_set=FILE goes with against=file (the default when "
                             "a reference set is given)")
        model = values["model"]
        name = models.DEFAULT_EMBEDDING_MODEL if model in ("default", "") else model
        self.params.update(model=name, against=against)
        if reference_set:
            field, where = values["reference_field"], values["reference_where"]
            self.separate = _read_reference_set(reference_set, field, where)
            self.params.update(reference_set=reference_set, reference_field=field,
                               reference_where=where,
                               reference_sha256=models.file_sha256(reference_set))
        self.settings["against"] = against
        self.model_name = name
        self.seed = int(values["seed"])
        self.against = against
        self.num_buckets = values["num_buckets"]
        self.feature_batch = int(values["batch_size"])
        self.device = values["device"]
        self._features: dict[str, Any] = {}
        self.truncated_texts = 0

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("mauve",)

    @property
    def compares_with_gold(self) -> bool:
        """True when P is the gold set itself (the paper protocol refuses it)."""
        return self.against == "gold"

    def versions(self) -> dict[str, str]:
        return {**models.library_versions("mauve-text", "scikit-learn", "faiss-cpu"),
                **models.model_metadata(self.model_name)}

    @cached_property
    def shared(self) -> models.Loaded:
        return models.load("base", self.model_name, self.device)

    def tokenize(self, text: str) -> tuple[list[int], bool]:
        tokenizer = self.shared.tokenizer
        limit = min(int(self.params["max_text_length"]),
                    models.window(tokenizer, self.shared.model))
        ids = tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        return list(ids[:limit]), len(ids) > limit

    def features(self, texts: Sequence[str]) -> Any:
        """Final-token features of each text; each distinct text is featurized once per run."""
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self._features]
        encoded = [self.tokenize(t) for t in todo]
        self.truncated_texts += sum(cut for _, cut in encoded)
        for batch in models.sorted_batches(encoded, self.feature_batch, lambda e: len(e[0])):
            lengths = [len(encoded[i][0]) for i in batch]
            states = models.hidden_states(self.shared.model, self.shared.device,
                                          [encoded[i][0] for i in batch])
            last = states[-1].float().cpu()
            for row, i in enumerate(batch):
                self._features[todo[i]] = last[row, lengths[row] - 1].numpy()
        return np.stack([self._features[t] for t in texts])

    def reference_texts(self, gold: Sequence[ScoreRequest]) -> list[str]:
        if self.against == "gold":
            return [r.text for r in gold]
        if self.against == "file":
            return list(self.separate)
        return list(dict.fromkeys(ref for r in gold for ref in r.references))

    def score_sets(self, gold: Sequence[ScoreRequest],
                   candidates: Sequence[ScoreRequest]) -> ScoreRow:
        import mauve

        p_texts = self.reference_texts(gold)
        q_texts = [r.text for r in candidates]
        if len(p_texts) < 2 or len(q_texts) < 2:
            return {"mauve": Score.missing(
                f"MAUVE needs at least 2 texts per set (got {len(p_texts)} and {len(q_texts)})")}
        before = self.truncated_texts
        p, q = self.features(p_texts), self.features(q_texts)
        buckets = self.num_buckets if self.num_buckets == "auto" else int(self.num_buckets)
        out = mauve.compute_mauve(
            p_features=p, q_features=q, num_buckets=buckets, seed=self.seed,
            kmeans_num_redo=int(self.params["kmeans_num_redo"]),
            kmeans_max_iter=int(self.params["kmeans_max_iter"]),
            mauve_scaling_factor=float(self.params["scaling"]), verbose=False)
        extra: dict[str, Any] = {"num_buckets": int(out.num_buckets), "p": len(p_texts),
                                 "q": len(q_texts)}
        if self.truncated_texts > before:
            extra["truncated"] = True
            extra["truncated_texts"] = self.truncated_texts - before
        return {"mauve": Score(float(out.mauve), extra=extra)}

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        raise NotImplementedError("mauve is distribution-level: the runner calls score_sets")


def _read_reference_set(path: str, field: str, where: str | None) -> list[str]:
    """Texts of a separate reference set: .txt (one per line) or .jsonl (`field`, `where`)."""
    from evalstress.core.data import read_text_corpus

    texts = read_text_corpus(path, "mauve: reference_set", field=field, where=where)
    if len(texts) < 2:
        raise ValueError(f"mauve: reference_set '{path}' holds {len(texts)} text(s); MAUVE needs "
                         "at least 2")
    return texts
