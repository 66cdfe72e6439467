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

`forms=unieval` (or the `unieval` evaluator) asks a UniEval checkpoint its own input forms, per
task (`unieval_task`: summarization, dialogue, data2text, fact), scores the dimensions the way
UniEval does (summarization fluency and consistency, and fact consistency: the mean over the
text's sentences; dialogue engagingness: their sum) and adds `overall`, the mean of the
dimensions. Several references: relevance / informativeness is the mean over them (paper 002
ran UniEval once per reference and averaged). Sentences come from the spaCy parser (UniEval
splits with NLTK's punkt).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from evalstress.core import models
from evalstress.core.params import TEXT, Param, declare_params, one_of, optional, words
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

BART_ASPECTS = ("precision", "recall", "f", "faithfulness")


def require_model(model: str | None, name: str) -> str:
    """The model= a seq2seq metric was given, or why none ships; PRISM (evaluators.prism) too."""
    if not model:
        raise ValueError(f"{name} needs model=PATH (or hub name) of a seq2seq model, e.g. a "
                         "BART or T5 checkpoint; no seq2seq weights ship with any package")
    return model


#: the parameters every seq2seq metric takes
SEQ2SEQ_PARAMS = {"model": models.MODEL_PATH, "batch_size": models.model_batch(4),
                  "max_length": models.max_length(1024), "device": models.DEVICE}


class Seq2SeqMetric(Evaluator):
    """A metric read from a local seq2seq model: the base of BARTScore, boolean QA and PRISM."""

    library = "transformers"

    def take_model(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """`take_params` plus the model settings every seq2seq metric shares; `model=` is
        required (no seq2seq weights ship)."""
        values = self.take_params(given)
        self.model_name = require_model(values["model"], self.name)
        self.device = values["device"]
        self.pairs_per_batch = int(values["batch_size"])
        self.max_length = int(values["max_length"])
        return values

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
class BartScore(Seq2SeqMetric):
    """BARTScore P/R/F/faithfulness, length-averaged and summed log-likelihood."""

    description = "BARTScore P/R/F/faithfulness (+ _noavg sums), any local seq2seq model"
    batch_size = 32
    PARAMS = declare_params(
        model=SEQ2SEQ_PARAMS["model"],
        variants=Param(words(one_of(BART_ASPECTS)), " ".join(BART_ASPECTS),
                       "the BARTScore directions reported"),
        agg=Param(one_of(("max", "mean")), "max", "how the scores against several references "
                  "combine", short="agg"),
        batch_size=SEQ2SEQ_PARAMS["batch_size"],
        max_length=SEQ2SEQ_PARAMS["max_length"],
        device=SEQ2SEQ_PARAMS["device"])

    def __init__(self, /, **given: Any):
        values = self.take_model(given)
        self.variants = tuple(values["variants"].split())
        self.agg = values["agg"]
        self.params["variants"] = " ".join(self.variants)

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


#: UniEval's input forms (its released code), per task and dimension: the checkpoints were
#: trained on exactly these strings, so they are data, not prose of ours. {text}, {source},
#: {reference}, {context} are filled in; `unit` says whether a dimension is asked per sentence
#: and how the sentence scores combine.
UNIEVAL_FORMS: dict[str, dict[str, tuple[str, str]]] = {
    "summarization": {
        "coherence": ("question: Is this a coherent summary to the document? </s> summary: "
                      "{text} </s> document: {source}", "text"),
        "consistency": ("question: Is this claim consistent with the document? </s> claim: "
                        "{text} </s> document: {source}", "sentence-mean"),
        "fluency": ("question: Is this a fluent paragraph? </s> paragraph: {text}",
                    "sentence-mean"),
        "relevance": ("question: Is this summary relevant to the reference? </s> summary: "
                      "{text} </s> reference: {reference}", "text"),
    },
    "dialogue": {
        "naturalness": ("question: Is this a natural response in the dialogue? </s> response: "
                        "{text}", "text"),
        "coherence": ("question: Is this a coherent response given the dialogue history? </s> "
                      "response: {text} </s> dialogue history: {source}", "text"),
        "engagingness": ("question: Is this an engaging and informative response according to "
                         "the dialogue history and fact? </s> response: {text} </s> dialogue "
                         "history: {source} </s> fact: {context}", "sentence-sum"),
        "groundedness": ("question: Is this response consistent with knowledge in the fact? "
                         "</s> response: {text} </s> fact: {context}", "text"),
        "understandability": ("question: Is this an understandable response in the dialogue? "
                              "</s> response: {text}", "text"),
    },
    "data2text": {
        "naturalness": ("question: Is this a fluent utterance? </s> utterance: {text}", "text"),
        "informativeness": ("question: Is this sentence informative according to the "
                            "reference? </s> sentence: {text} </s> reference: {reference}",
                            "text"),
    },
    "fact": {
        "consistency": ("question: Is this claim consistent with the document? </s> claim: "
                        "{text} </s> document: {source}", "sentence-mean"),
    },
}
#: The dimensions UniEval reports by default per task (dialogue's engagingness and groundedness
#: need a fact, which a score request does not carry: ask for them with dimensions=...).
UNIEVAL_DEFAULT = {"summarization": "coherence consistency fluency relevance",
                   "dialogue": "naturalness coherence understandability",
                   "data2text": "naturalness informativeness", "fact": "consistency"}


_DIMENSIONS = Param(optional(words(TEXT)), None, "the dimensions asked about", signed="never",
                    default_note="coherence consistency fluency relevance, or UniEval's "
                    "default for the task")
_YES = Param(TEXT, "Yes", "the answer word whose probability is the score")
_NO = Param(TEXT, "No", "the answer word it is weighed against")


@evaluator("boolean-qa")
class BooleanQA(Seq2SeqMetric):
    """P(yes) / (P(yes) + P(no)) of a seq2seq model asked a yes/no question (UniEval-style)."""

    description = "UniEval-style boolean QA: P(Yes) from a local seq2seq model (model=PATH)"
    batch_size = 32
    PARAMS = declare_params(
        model=SEQ2SEQ_PARAMS["model"],
        dimensions=_DIMENSIONS,
        question=Param(optional(TEXT), None, "your own question, with {text} (and {source}, "
                       "{reference}), asked instead of the dimensions", signed="never"),
        aspect=Param(TEXT, "yes", "the name of your own question's score", signed="never"),
        yes=_YES,
        no=_NO,
        batch_size=models.model_batch(8),
        max_length=SEQ2SEQ_PARAMS["max_length"],
        device=SEQ2SEQ_PARAMS["device"],
        forms=Param(one_of(("evalstress", "unieval")), "evalstress", "our own questions, or "
                    "UniEval's input forms", signed="never", short="forms"),
        unieval_task=Param(one_of(tuple(UNIEVAL_FORMS)), "summarization", "the task whose "
                           "UniEval forms are asked (forms=unieval)", signed="never"))

    def __init__(self, /, **given: Any):
        values = self.take_model(given)
        self.ask(values["dimensions"], values["question"], values["aspect"], values["yes"],
                 values["no"], values["forms"], values["unieval_task"])

    def ask(self, dimensions: str | None, question: str | None, aspect: str, yes: str, no: str,
            forms: str, unieval_task: str) -> None:
        """Set the questions (templates), per dimension, and the answer words; they enter the
        signature (UniEval's forms with the task they belong to)."""
        self.forms = forms
        self.units: dict[str, str] = {}
        self.yes, self.no = yes, no
        if forms == "unieval":
            if question:
                raise ValueError("boolean-qa: question= and forms=unieval exclude each other")
            known = UNIEVAL_FORMS[unieval_task]
            names = (dimensions or UNIEVAL_DEFAULT[unieval_task]).split()
            strange = [n for n in names if n not in known]
            if strange:
                raise ValueError(f"boolean-qa: UniEval's {unieval_task} dimensions are "
                                 f"{', '.join(known)}; got {', '.join(strange)}")
            self.templates = {n: known[n][0] for n in names}
            self.units = {n: known[n][1] for n in names}
            self.params.update(templates=self.templates, forms=forms, unieval_task=unieval_task)
            return
        if question:
            self.templates = {aspect: question}
        else:
            names = (dimensions or "coherence consistency fluency relevance").split()
            if set(names) - set(QUESTIONS):
                raise ValueError(f"boolean-qa dimensions must be among {sorted(QUESTIONS)} "
                                 "(or give question='... {text} ...')")
            self.templates = {n: QUESTIONS[n] for n in names}
        self.params["templates"] = self.templates

    @property
    def aspects(self) -> tuple[str, ...]:
        if self.forms == "unieval":
            return (*self.templates, "overall")
        return tuple(self.templates)

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (0.0, 1.0)  # P(yes) / (P(yes) + P(no)), and means of it

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

    @cached_property
    def parser(self) -> Any:
        from evalstress.core.text import TextParser

        return TextParser()

    def unieval_prompts(self, dimension: str, request: ScoreRequest) -> list[list[str]] | str:
        """The prompts of one dimension, grouped by what is averaged: per reference (relevance,
        informativeness) or per sentence (the sentence-level dimensions); a reason if the
        request lacks what the form needs."""
        template = self.templates[dimension]
        if "{source}" in template and not request.source:
            return "the question needs a source this example lacks"
        if "{context}" in template:
            return "the question needs a fact (context) that a score request does not carry"
        references = list(request.references) if "{reference}" in template else [""]
        if not references:
            return "the question needs a reference this example lacks"
        texts = [request.text]
        if self.units[dimension] != "text":
            texts = [s for s in self.parser.parse(request.text).sentence_texts() if s] or [
                request.text]
        return [[template.format(text=t, source=request.source, reference=r) for t in texts]
                for r in references]

    def _score_unieval(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        plans: list[tuple[int, str, list[list[str]]]] = []
        rows: list[ScoreRow] = [{} for _ in requests]
        for i, request in enumerate(requests):
            for dimension in self.templates:
                prompts = self.unieval_prompts(dimension, request)
                if isinstance(prompts, str):
                    rows[i][dimension] = Score.missing(prompts)
                else:
                    plans.append((i, dimension, prompts))
        flat = list(dict.fromkeys(p for _, _, groups in plans for g in groups for p in g))
        value = dict(zip(flat, self.yes_probability(flat), strict=True))
        for i, dimension, groups in plans:
            combine = sum if self.units[dimension] == "sentence-sum" else _mean
            per_reference = [combine([value[p] for p in group]) for group in groups]
            cut = any(self._cut(p) for group in groups for p in group)
            rows[i][dimension] = Score(_mean(per_reference),
                                       extra=models.truncation_extra(cut))
        for row in rows:
            parts = [row[d] for d in self.templates]
            row["overall"] = (Score(_mean([float(p.value) for p in parts if p.value is not None]))
                              if all(p.ok for p in parts)
                              else Score.missing("a dimension of the overall score is missing"))
        return rows

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        if self.forms == "unieval":
            return self._score_unieval(requests)
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


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


@evaluator("unieval")
class UniEval(BooleanQA):
    """UniEval's own input forms and aggregation on a local UniEval-style checkpoint."""

    description = ("UniEval: its question forms per task, sentence-level averaging, overall "
                   "(model=PATH of a UniEval checkpoint)")
    PARAMS = declare_params(
        model=SEQ2SEQ_PARAMS["model"],
        dimensions=_DIMENSIONS,
        task=Param(one_of(tuple(UNIEVAL_FORMS)), "summarization", "the task whose UniEval "
                   "forms are asked", signed="never", short="task"),
        yes=_YES,
        no=_NO,
        batch_size=models.model_batch(8),
        max_length=SEQ2SEQ_PARAMS["max_length"],
        device=SEQ2SEQ_PARAMS["device"])

    def __init__(self, /, **given: Any):
        values = self.take_model(given)
        self.ask(values["dimensions"], None, "yes", values["yes"], values["no"], "unieval",
                 values["task"])
