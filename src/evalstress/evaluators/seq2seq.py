"""Seq2seq-likelihood metrics: BARTScore and a UniEval-style boolean QA scorer.

BARTScore (Yuan et al. 2021, as paper 002 uses it) scores x -> y as the log-likelihood a seq2seq
model gives y's tokens (special tokens included) given x, averaged over y's length; the
non-averaged sum (`*_noavg`, paper 002 appendix D) is reported beside it. Variants: precision
(reference -> hypothesis), recall (hypothesis -> reference), f (their arithmetic mean, as the
BARTScore paper defines F), faithfulness (source -> hypothesis). Several references: each
reference is scored and the best (`agg=max`) or mean is kept per aspect. Inputs beyond the window
(1024 tokens by default) are cut as BARTScore's code does, and flagged.

Boolean QA (UniEval's recipe): a question with the text (and source / reference) goes to a
seq2seq model; the score is P(yes) / (P(yes) + P(no)) at the first decoded position.
No seq2seq weights ship offline: both take model=PATH.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from evalstress.evaluators import models
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

BART_ASPECTS = ("precision", "recall", "f", "faithfulness")


def _require(model: str | None, name: str) -> str:
    if not model:
        raise ValueError(f"{name} needs model=PATH (or hub name) of a seq2seq model, e.g. a "
                         "BART or T5 checkpoint; no seq2seq weights ship with any package")
    return model


class _Seq2SeqMetric(Evaluator):
    def __init__(self, model: str, device: str, batch_size: int, max_length: int, **params: Any):
        super().__init__(model=model, max_length=max_length, **params)
        self.model_name = model
        self.device = device
        self.pairs_per_batch = int(batch_size)
        self.max_length = int(max_length)

    def versions(self) -> dict[str, str]:
        return {**models.library_versions(), **models.model_metadata(self.model_name)}

    @cached_property
    def shared(self) -> models.Loaded:
        return models.load("seq2seq", self.model_name, self.device)

    def _encode(self, texts: Sequence[str]) -> Any:
        return self.shared.tokenizer(list(texts), max_length=self.max_length, truncation=True,
                                     padding=True, return_tensors="pt")

    def _cut(self, text: str) -> bool:
        return models.token_count(self.shared.tokenizer, text) > self.max_length


@evaluator("bartscore")
class BartScore(_Seq2SeqMetric):
    """BARTScore P/R/F/faithfulness, length-averaged and summed log-likelihood."""

    description = "BARTScore P/R/F/faithfulness (+ _noavg sums), any local seq2seq model"
    batch_size = 32

    def __init__(self, model: str | None = None, variants: str = "precision recall f faithfulness",
                 agg: str = "max", batch_size: int = 4, max_length: int = 1024,
                 device: str = "auto"):
        chosen = tuple(variants.split())
        unknown = set(chosen) - set(BART_ASPECTS)
        if unknown or not chosen:
            raise ValueError(f"bartscore variants must be among {BART_ASPECTS}, got {variants!r}")
        if agg not in ("max", "mean"):
            raise ValueError("bartscore agg= must be max or mean")
        super().__init__(_require(model, "bartscore"), device, batch_size, max_length,
                         variants=" ".join(chosen), agg=agg)
        self.variants = chosen
        self.agg = agg

    @property
    def aspects(self) -> tuple[str, ...]:
        return (*self.variants, *(f"{v}_noavg" for v in self.variants))

    def pair_scores(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float]]:
        """(mean, sum) log-likelihood of each target given its source, batched by length."""
        import torch

        tokenizer, model = self.shared.tokenizer, self.shared.model
        pad = tokenizer.pad_token_id
        out: list[tuple[float, float]] = [(0.0, 0.0)] * len(pairs)
        for batch in models.sorted_batches(pairs, self.pairs_per_batch,
                                           lambda p: len(p[0]) + len(p[1])):
            src = self._encode([pairs[i][0] for i in batch])
            tgt = self._encode([pairs[i][1] for i in batch])
            labels = tgt["input_ids"].to(self.shared.device)
            with torch.no_grad():
                logits = model(input_ids=src["input_ids"].to(self.shared.device),
                               attention_mask=src["attention_mask"].to(self.shared.device),
                               labels=labels).logits.float()
            logp = torch.log_softmax(logits, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
            keep = (labels != pad).to(logp.dtype)
            total = (logp * keep).sum(dim=1)
            length = tgt["attention_mask"].sum(dim=1).to(total.device)
            for row, i in enumerate(batch):
                out[i] = (float(total[row] / length[row]), float(total[row]))
        return out

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        pairs: dict[tuple[str, str], int] = {}

        def need(src: str, tgt: str) -> None:
            pairs.setdefault((src, tgt), len(pairs))

        wants_refs = any(v in self.variants for v in ("precision", "recall", "f"))
        for request in requests:
            if wants_refs:
                for reference in request.references:
                    need(reference, request.text)
                    need(request.text, reference)
            if "faithfulness" in self.variants and request.source:
                need(request.source, request.text)
        ordered = list(pairs)
        values = dict(zip(ordered, self.pair_scores(ordered), strict=True))
        lengths: dict[str, bool] = {}

        def cut(*texts: str) -> bool:
            for text in texts:
                if text not in lengths:
                    lengths[text] = self._cut(text)
            return any(lengths[t] for t in texts)

        pick = max if self.agg == "max" else (lambda xs: sum(xs) / len(xs))
        rows = []
        for request in requests:
            row: ScoreRow = {}
            refs = request.references
            for avg, suffix in ((0, ""), (1, "_noavg")):
                per_ref = {
                    "precision": [values[(r, request.text)][avg] for r in refs],
                    "recall": [values[(request.text, r)][avg] for r in refs],
                }
                per_ref["f"] = [(p + r) / 2 for p, r in zip(per_ref["precision"],
                                                             per_ref["recall"], strict=True)]
                for variant in self.variants:
                    if variant == "faithfulness":
                        if not request.source:
                            row[variant + suffix] = Score.missing("no source for this example")
                            continue
                        extra = models.truncation_extra(cut(request.source, request.text))
                        row[variant + suffix] = Score(values[(request.source, request.text)][avg],
                                                      extra=extra)
                    elif not refs:
                        row[variant + suffix] = Score.missing("no references for this example")
                    else:
                        extra = models.truncation_extra(cut(request.text, *refs))
                        row[variant + suffix] = Score(float(pick(per_ref[variant])), extra=extra)
            rows.append(row)
        return rows


#: Questions in the spirit of UniEval's summarization dimensions, in our own words.
QUESTIONS = {
    "coherence": "question: Are the sentences of this summary well connected and logically "
                 "ordered? </s> summary: {text} </s> document: {source}",
    "consistency": "question: Is every claim in this summary supported by the document? "
                   "</s> summary: {text} </s> document: {source}",
    "fluency": "question: Is this text fluent, grammatical English? </s> text: {text}",
    "relevance": "question: Does this summary keep the main points of the reference? "
                 "</s> summary: {text} </s> reference: {reference}",
}


@evaluator("boolean-qa")
class BooleanQA(_Seq2SeqMetric):
    """P(yes) / (P(yes) + P(no)) of a seq2seq model asked a yes/no question (UniEval-style)."""

    description = "UniEval-style boolean QA: P(Yes) from a local seq2seq model (model=PATH)"
    batch_size = 32

    def __init__(self, model: str | None = None, dimensions: str = "coherence consistency "
                 "fluency relevance", question: str | None = None, aspect: str = "yes",
                 yes: str = "Yes", no: str = "No", batch_size: int = 8, max_length: int = 1024,
                 device: str = "auto"):
        if question:
            templates = {aspect: question}
        else:
            names = dimensions.split()
            unknown = set(names) - set(QUESTIONS)
            if unknown or not names:
                raise ValueError(f"boolean-qa dimensions must be among {sorted(QUESTIONS)} "
                                 "(or give question='... {text} ...')")
            templates = {n: QUESTIONS[n] for n in names}
        super().__init__(_require(model, "boolean-qa"), device, batch_size, max_length,
                         templates=templates, yes=yes, no=no)
        self.templates = templates
        self.yes, self.no = yes, no

    @property
    def aspects(self) -> tuple[str, ...]:
        return tuple(self.templates)

    def _answer_id(self, word: str) -> int:
        ids = self.shared.tokenizer(word, add_special_tokens=False)["input_ids"]
        if not ids:
            raise models.ModelError(f"boolean-qa: '{word}' is not in the tokenizer's vocabulary")
        return int(ids[0])

    def prompt(self, template: str, request: ScoreRequest) -> str | None:
        if "{source}" in template and not request.source:
            return None
        if "{reference}" in template and not request.references:
            return None
        return template.format(text=request.text, source=request.source,
                               reference=request.references[0] if request.references else "")

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        import torch

        model = self.shared.model
        start = model.config.decoder_start_token_id
        if start is None:
            start = self.shared.tokenizer.pad_token_id
        yes_id, no_id = self._answer_id(self.yes), self._answer_id(self.no)
        out = [0.0] * len(prompts)
        for batch in models.sorted_batches(prompts, self.pairs_per_batch, len):
            enc = self._encode([prompts[i] for i in batch])
            decoder = torch.full((len(batch), 1), int(start), dtype=torch.long)
            with torch.no_grad():
                logits = model(input_ids=enc["input_ids"].to(self.shared.device),
                               attention_mask=enc["attention_mask"].to(self.shared.device),
                               decoder_input_ids=decoder.to(self.shared.device)).logits.float()
            probs = torch.softmax(logits[:, 0], dim=-1)
            for row, i in enumerate(batch):
                p_yes, p_no = float(probs[row, yes_id]), float(probs[row, no_id])
                out[i] = p_yes / (p_yes + p_no)
        return out

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        jobs: list[tuple[int, str, str]] = []
        rows: list[ScoreRow] = [{} for _ in requests]
        for i, request in enumerate(requests):
            for aspect, template in self.templates.items():
                text = self.prompt(template, request)
                if text is None:
                    rows[i][aspect] = Score.missing("the question needs a source or reference "
                                                    "this example lacks")
                else:
                    jobs.append((i, aspect, text))
        probabilities = self.yes_probability([text for _, _, text in jobs])
        for (i, aspect, text), value in zip(jobs, probabilities, strict=True):
            rows[i][aspect] = Score(value, extra=models.truncation_extra(self._cut(text)))
        return rows
