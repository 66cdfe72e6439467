"""Lexical metrics: sacreBLEU's sentence BLEU, chrF and TER, rouge-score's ROUGE, rep-n.

Multiple references: sacreBLEU metrics take all references at once, as sacreBLEU defines them.
ROUGE compares with each reference separately and keeps the best score of each ROUGE type (the
maximum over references), the convention of multi-reference summarization papers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from functools import cached_property
from importlib.metadata import version
from typing import Any

from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

# Preprocessed references kept per evaluator. The runner also calls `end_chunk()` after each
# chunk of examples, which empties the memos: a chunk's references are never needed again, and
# a chrF entry (six n-gram tables per reference) is large, so memory stays that of one chunk.
REFERENCE_MEMO = 1024


class _SacreBleuMetric(Evaluator):
    needs_references = True
    cpu_bound = True  # the runner may score it in worker processes
    batch_size = 256
    metric_name = ""

    @cached_property
    def metric(self) -> Any:
        raise NotImplementedError

    @classmethod
    def accepted_params(cls) -> tuple[str, ...]:
        """Spec keys: the settings of sacreBLEU's metric class (BLEU's effective_order is ours)."""
        import inspect

        from sacrebleu.metrics import BLEU, CHRF, TER

        metric = {"bleu": BLEU, "chrf": CHRF, "ter": TER}[cls.metric_name]
        names = list(inspect.signature(metric).parameters)
        return tuple(n for n in names if n not in ("references", "effective_order"))

    @property
    def aspects(self) -> tuple[str, ...]:
        return (self.metric_name,)

    def versions(self) -> dict[str, str]:
        # sacreBLEU's own signature needs the reference count, known only after scoring
        return {"sacrebleu": version("sacrebleu"), "metric": type(self.metric).__name__}

    def _reference_info(self, references: tuple[str, ...]) -> Any:
        """sacreBLEU's preprocessed references, memoized: every variant of an example shares them."""
        memo = self.__dict__.setdefault("_ref_memo", {})
        if references not in memo:
            if len(memo) >= REFERENCE_MEMO:  # a chunk's references fit many times over
                memo.clear()
            memo[references] = self.metric._cache_references([[r] for r in references])[0]
        return memo[references]

    def end_chunk(self) -> None:
        """The runner finished a chunk of examples: their references are not needed again, nor
        are the tokenizations sacreBLEU memoizes per line (up to 65,536 lines, input and output
        kept, class-wide), since each distinct text is scored once."""
        self.__dict__.pop("_ref_memo", None)
        tokenizer = getattr(self.__dict__.get("metric"), "tokenizer", None)
        clear = getattr(type(tokenizer).__call__, "cache_clear", None) if tokenizer else None
        if callable(clear):
            clear()

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        # the steps of sacreBLEU's sentence_score, with the reference preprocessing memoized
        metric = self.metric
        rows = []
        for request in requests:
            hyp = metric._preprocess_segment(request.text)
            stats = [metric._compute_segment_statistics(hyp, self._reference_info(request.references))]
            rows.append({self.metric_name: Score(float(metric._aggregate_and_compute(stats).score))})
        return rows


@evaluator("bleu")
class Bleu(_SacreBleuMetric):
    """Sentence BLEU (0-100) with effective order, as sacreBLEU recommends per sentence."""

    description = "sacreBLEU sentence BLEU, effective order, all references at once"
    metric_name = "bleu"

    @cached_property
    def metric(self) -> Any:
        from sacrebleu.metrics import BLEU

        return BLEU(effective_order=True, **self.params)


@evaluator("chrf")
class Chrf(_SacreBleuMetric):
    description = "sacreBLEU sentence chrF (character 6-grams; chrF++ with word_order=2)"
    metric_name = "chrf"

    @cached_property
    def metric(self) -> Any:
        from sacrebleu.metrics import CHRF

        return CHRF(**self.params)

    @cached_property
    def _fast(self) -> Any:
        """fastchrf (Rust) when installed and the settings are ones it computes: character
        n-grams only (word_order 0), no lowercasing. Its sentence chrF equals sacreBLEU's to the
        last bit (tested); with several references sacreBLEU keeps the best-scoring one, which
        is the maximum of the pairwise scores."""
        metric = self.metric
        if metric.word_order != 0 or metric.lowercase:
            return None
        try:
            import fastchrf
        except ImportError:
            return None
        return fastchrf

    def versions(self) -> dict[str, str]:
        found = super().versions()
        if self._fast is not None:
            found["fastchrf"] = version("fastchrf")
        return found

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        if self._fast is None:
            return super().score_batch(requests)
        metric = self.metric
        scores = self._fast.pairwise_chrf(
            [[r.text] for r in requests], [list(r.references) for r in requests],
            char_order=metric.char_order, beta=float(metric.beta),
            remove_whitespace=not metric.whitespace, eps_smoothing=metric.eps_smoothing)
        return [{"chrf": Score(float(max(row[0])))} for row in scores]


@evaluator("ter")
class Ter(_SacreBleuMetric):
    description = "sacreBLEU sentence TER (edit rate, lower is better)"
    metric_name = "ter"

    @cached_property
    def metric(self) -> Any:
        from sacrebleu.metrics import TER

        return TER(**self.params)

    def higher_is_better(self, aspect: str) -> bool:
        return False


class _Analysed:
    """A text's rouge-score tokens and, on demand, its n-gram counts."""

    __slots__ = ("_ngrams", "tokens")

    def __init__(self, tokens: tuple[str, ...]):
        self.tokens = tokens
        self._ngrams: dict[int, Any] = {}

    def ngrams(self, n: int) -> Any:
        counts = self._ngrams.get(n)
        if counts is None:
            from rouge_score import rouge_scorer

            counts = self._ngrams[n] = rouge_scorer._create_ngrams(self.tokens, n)
        return counts


class _MemoStemmer:
    """Porter stemming memoized per word: variants of one text share almost all their words."""

    def __init__(self) -> None:
        from nltk.stem import porter

        self._stem = functools.lru_cache(maxsize=200_000)(porter.PorterStemmer().stem)

    def stem(self, word: str) -> str:
        return str(self._stem(word))


@evaluator("rouge")
class Rouge(Evaluator):
    """ROUGE-1/2/L F-measure (or precision/recall), maximum over references, Porter stemming.

    Numbers are rouge-score's: its tokenizer, its n-gram scoring and F formula. Two things make it
    fast on many variants of one text: tokenized references are memoized, and the LCS length
    comes from rapidfuzz (the same quantity rouge-score computes with a Python table).
    """

    description = "rouge-score ROUGE-1/2/L, max over references"
    needs_references = True
    cpu_bound = True
    batch_size = 256

    def __init__(self, measure: str = "fmeasure", use_stemmer: bool = True,
                 types: str = "rouge1 rouge2 rougeL"):
        if measure not in ("fmeasure", "precision", "recall"):
            raise ValueError("measure must be fmeasure, precision or recall")
        super().__init__(measure=measure, use_stemmer=use_stemmer, types=types)
        self.measure = measure
        self.types = tuple(types.split())
        for kind in self.types:
            if kind != "rougeL" and not (kind.startswith("rouge") and kind[5:].isdigit()):
                raise ValueError(f"unsupported ROUGE type '{kind}': use rouge1..rouge9, rougeL")
        self._stemmer = _MemoStemmer() if use_stemmer else None
        # Only references are memoized: every variant of an example is compared with the same
        # ones, while each distinct prediction is scored once. The bound keeps memory flat on
        # any dataset size; a chunk's references fit in it many times over.
        self._reference = functools.lru_cache(maxsize=REFERENCE_MEMO)(self._analyse)

    def end_chunk(self) -> None:
        """The runner finished a chunk of examples: their references are not needed again."""
        self._reference.cache_clear()

    def _analyse(self, text: str) -> _Analysed:
        from rouge_score import tokenize

        return _Analysed(tuple(tokenize.tokenize(text, self._stemmer)))

    @property
    def aspects(self) -> tuple[str, ...]:
        return self.types

    def versions(self) -> dict[str, str]:
        return {"rouge-score": version("rouge-score")}

    def _pair(self, reference: _Analysed, prediction: _Analysed, kind: str) -> float:
        from rapidfuzz.distance import LCSseq
        from rouge_score import rouge_scorer, scoring

        if kind == "rougeL":
            ref, pred = reference.tokens, prediction.tokens
            if not ref or not pred:
                return 0.0
            lcs = LCSseq.similarity(ref, pred)
            precision, recall = lcs / len(pred), lcs / len(ref)
            result = scoring.Score(precision, recall, scoring.fmeasure(precision, recall))
        else:
            n = int(kind[5:])
            result = rouge_scorer._score_ngrams(reference.ngrams(n), prediction.ngrams(n))
        return float(getattr(result, self.measure))

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        rows = []
        for request in requests:
            prediction = self._analyse(request.text)  # scored once: not worth a memo entry
            references = [self._reference(ref) for ref in request.references]
            rows.append({kind: Score(max(self._pair(ref, prediction, kind) for ref in references))
                         for kind in self.types})
        return rows


def rep_n(text: str, n: int) -> float | None:
    """Welleck et al.'s rep-n: the share of repeated n-grams, 1 - distinct / total."""
    words = text.lower().split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return None
    return 1.0 - len(set(grams)) / len(grams)


@evaluator("rep")
class Repetition(Evaluator):
    """Diversity as rep-n (lower is better): reference-free, catches degenerate repetition."""

    description = "rep-2/3/4: share of repeated n-grams (lower is better)"
    batch_size = 1024
    # a diversity measure: it is meant to catch repetition, not truncation or swapped sentences
    meant_for = ("repetition", "repeated-token")
    cpu_bound = True

    def __init__(self, orders: str = "2 3 4"):
        super().__init__(orders=orders)
        self.orders = tuple(int(n) for n in orders.split())

    @property
    def aspects(self) -> tuple[str, ...]:
        return tuple(f"rep-{n}" for n in self.orders)

    def higher_is_better(self, aspect: str) -> bool:
        return False

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        rows = []
        for request in requests:
            row = {}
            for n in self.orders:
                value = rep_n(request.text, n)
                row[f"rep-{n}"] = Score(value) if value is not None else Score.missing(
                    f"fewer than {n} words")
            rows.append(row)
        return rows
