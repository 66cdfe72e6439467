"""PRISM-style scoring (Thompson and Post 2020, as paper 002 reports it) on any local seq2seq.

PRISM scores a hypothesis as paraphrase likelihood under a multilingual NMT model: the mean
log-probability per target token (natural log, the end-of-sequence token included), the target
opened by a language tag whose own probability is left out. Here any local seq2seq checkpoint
stands in for PRISM's fairseq model; `lang_tag=<en>` opens every target with a tag, as PRISM
does, when the model was trained with one.

Aspects: `ref_hypo` = log p(hypothesis | reference), `hypo_ref` = log p(reference | hypothesis),
`ref` = their mean (PRISM-ref), `src` = log p(hypothesis | source) (PRISM-QE). Several
references: each score is the mean over them (paper 002's multi-reference scoring).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalstress.core import models
from evalstress.core.params import Param, declare_params, one_of, text, words
from evalstress.evaluators.base import Score, ScoreRequest, ScoreRow, evaluator
from evalstress.evaluators.seq2seq import SEQ2SEQ_PARAMS, Seq2SeqMetric

PRISM_ASPECTS = ("ref", "ref_hypo", "hypo_ref", "src")


@evaluator("prism")
class PrismStyle(Seq2SeqMetric):
    """Mean token log-probability of paraphrasing reference <-> hypothesis (and source ->
    hypothesis) under a local seq2seq model."""

    description = "PRISM-style paraphrase log-probability (ref, QE) on any local seq2seq model"
    batch_size = 32
    PARAMS = declare_params(
        model=SEQ2SEQ_PARAMS["model"],
        variants=Param(words(one_of(PRISM_ASPECTS)), " ".join(PRISM_ASPECTS),
                       "the PRISM scores reported"),
        lang_tag=Param(text(empty=True), "", "a language tag opening every target, left out "
                       "of the mean (e.g. <en>)", short="tag"),
        batch_size=SEQ2SEQ_PARAMS["batch_size"],
        max_length=SEQ2SEQ_PARAMS["max_length"],
        device=SEQ2SEQ_PARAMS["device"])

    def __init__(self, /, **given: Any):
        values = self.take_model(given)
        self.variants = tuple(values["variants"].split())
        self.lang_tag = values["lang_tag"]
        self.params["variants"] = " ".join(self.variants)

    @property
    def aspects(self) -> tuple[str, ...]:
        return self.variants

    def _labels(self, text: str) -> tuple[list[int], int, int]:
        """Target ids (tag inserted after any leading special token) and the tag's span."""
        tokenizer = self.shared.tokenizer
        ids = list(tokenizer(text, max_length=self.max_length, truncation=True)["input_ids"])
        if not self.lang_tag:
            return ids, 0, 0
        special = set(tokenizer.all_special_ids)
        lead = 0
        while lead < len(ids) and ids[lead] in special and ids[lead] != tokenizer.eos_token_id:
            lead += 1
        tag = list(tokenizer(self.lang_tag, add_special_tokens=False)["input_ids"])
        return ids[:lead] + tag + ids[lead:], lead, lead + len(tag)

    def mean_logprob(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Mean log p(target token | source, previous tokens) over each target, tag excluded."""
        import torch

        model, tokenizer = self.shared.model, self.shared.tokenizer
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        out = [0.0] * len(pairs)
        for batch in models.sorted_batches(pairs, self.pairs_per_batch,
                                           lambda p: len(p[0]) + len(p[1])):
            src = self._encode([pairs[i][0] for i in batch])
            targets = [self._labels(pairs[i][1]) for i in batch]
            width = max(len(t[0]) for t in targets)
            labels = torch.full((len(batch), width), -100, dtype=torch.long)
            scored = torch.zeros((len(batch), width))
            for row, (ids, tag_start, tag_end) in enumerate(targets):
                labels[row, :len(ids)] = torch.tensor(ids)
                scored[row, :len(ids)] = 1.0
                scored[row, tag_start:tag_end] = 0.0
            decoder_in = _shift_right(labels, model, pad)
            with torch.no_grad():
                logits = model(input_ids=src["input_ids"].to(self.shared.device),
                               attention_mask=src["attention_mask"].to(self.shared.device),
                               decoder_input_ids=decoder_in.to(self.shared.device)).logits.float()
            logp = torch.log_softmax(logits.cpu(), dim=-1)
            picked = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            totals = (picked * scored).sum(dim=1) / scored.sum(dim=1)
            for row, i in enumerate(batch):
                out[i] = float(totals[row])
        return out

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        pairs: dict[tuple[str, str], int] = {}
        for request in requests:
            if any(v != "src" for v in self.variants):
                for reference in request.references:
                    pairs.setdefault((reference, request.text), len(pairs))
                    pairs.setdefault((request.text, reference), len(pairs))
            if "src" in self.variants and request.source:
                pairs.setdefault((request.source, request.text), len(pairs))
        ordered = list(pairs)
        values = dict(zip(ordered, self.mean_logprob(ordered), strict=True))
        rows: list[ScoreRow] = []
        for request in requests:
            row: ScoreRow = {}
            refs = request.references
            forward = [values[(r, request.text)] for r in refs if (r, request.text) in values]
            backward = [values[(request.text, r)] for r in refs if (request.text, r) in values]
            per = {"ref_hypo": forward, "hypo_ref": backward,
                   "ref": [(f + b) / 2 for f, b in zip(forward, backward, strict=True)]}
            for variant in self.variants:
                if variant == "src":
                    row[variant] = (Score(values[(request.source, request.text)],
                                          extra=models.truncation_extra(
                                              self._cut(request.source) or self._cut(request.text)))
                                    if request.source else Score.missing("no source for this "
                                                                         "example"))
                elif not refs:
                    row[variant] = Score.missing("no references for this example")
                else:
                    cut = any(self._cut(t) for t in (request.text, *refs))
                    row[variant] = Score(sum(per[variant]) / len(per[variant]),
                                         extra=models.truncation_extra(cut))
            rows.append(row)
        return rows


def _shift_right(labels: Any, model: Any, pad: int) -> Any:
    """Decoder inputs: the start token, then the labels shifted one step (pads for -100)."""
    import torch

    start = model.config.decoder_start_token_id
    if start is None:
        start = pad
    shifted = torch.full_like(labels, pad)
    shifted[:, 0] = int(start)
    shifted[:, 1:] = labels[:, :-1].clamp(min=0)
    shifted[:, 1:][labels[:, :-1] == -100] = pad
    return shifted

