"""Lexical metrics: sacreBLEU's sentence BLEU, chrF and TER, rouge-score's ROUGE, rep-n.

Multiple references: sacreBLEU metrics take all references at once, as sacreBLEU defines them.
ROUGE compares with each reference separately and keeps the best score of each ROUGE type (the
maximum over references), the convention of multi-reference summarization papers.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cached_property
from importlib.metadata import version
from typing import Any

from evalstress.core.lightimport import importing_without
from evalstress.core.params import (
    BOOLEAN,
    Param,
    declare_params,
    one_of,
    optional,
    real,
    text,
    whole_number,
    words,
)
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

# Preprocessed references kept per evaluator. The runner also calls `end_chunk()` after each
# chunk of examples, which empties the memos: a chunk's references are never needed again, and
# a chrF entry (six n-gram tables per reference) is large, so memory stays that of one chunk.
REFERENCE_MEMO = 1024


def _bleu_tokenizers() -> list[str]:
    from sacrebleu.metrics import BLEU

    return list(BLEU.TOKENIZERS)


def _smoothing_methods() -> list[str]:
    from sacrebleu.metrics import BLEU

    return list(BLEU.SMOOTH_DEFAULTS)


_LOWERCASE = Param(BOOLEAN, False, "lowercase texts and references before matching",
                   signed="given")


class _SacreBleuMetric(Evaluator):
    """A sacreBLEU metric scored per sentence through its public API.

    Every variant of an example is compared with the same references, so each distinct
    reference tuple gets one metric object built with `references=` (sacreBLEU's documented way
    to preprocess references once); a variant's score is that object's `corpus_score` of the one
    hypothesis, which is its sentence score.
    """

    needs_references = True
    cpu_bound = True  # the runner may score it in worker processes
    batch_size = 256
    metric_name = ""
    library = "sacrebleu"

    def __init__(self, /, **given: Any):
        """The settings are sacreBLEU's own keywords (`tests/evaluators/test_params.py` holds
        the declarations to sacreBLEU's signatures); only those a spec gives are handed on and
        enter `params`, since the resolved ones, defaults included, are in `resolved()`."""
        self.take_params(given)

    def build(self, references: Sequence[Sequence[str]] | None = None) -> Any:
        """The sacreBLEU metric object with the user's settings."""
        raise NotImplementedError

    @cached_property
    def metric(self) -> Any:
        return self.build()

    @cached_property
    def _probe(self) -> Any:
        """A metric that has seen one reference: sacreBLEU resolves its signature only then."""
        return self.build([["x"]])

    @property
    def aspects(self) -> tuple[str, ...]:
        return (self.metric_name,)

    def resolved(self) -> dict[str, Any]:
        """The resolved settings that change the numbers, defaults included."""
        signature = self._probe.get_signature()
        signature.update("nrefs", None)  # per example here, not one number for the run
        return {"metric": self._probe.corpus_score(["x"], None).name,
                "sacrebleu_signature": signature.format(),
                "references": "all at once (sacreBLEU's multi-reference sentence score)"}

    def signature(self) -> dict[str, Any]:
        return {**super().signature(), "settings": self.resolved()}

    def versions(self) -> dict[str, str]:
        return {"sacrebleu": version("sacrebleu")}

    def scorer_for(self, references: tuple[str, ...]) -> Any:
        """The metric with these references preprocessed, memoized: variants share them."""
        memo = self.__dict__.setdefault("_ref_memo", {})
        scorer = memo.get(references)
        if scorer is None:
            if len(memo) >= REFERENCE_MEMO:  # a chunk's references fit many times over
                memo.clear()
            scorer = memo[references] = self.build([[r] for r in references])
        return scorer

    def end_chunk(self) -> None:
        """The runner finished a chunk of examples: their references are not needed again."""
        self.__dict__.pop("_ref_memo", None)
        self._forget_lines()

    def _forget_lines(self) -> None:
        """Empty the tokenizations sacreBLEU memoizes per line (up to 65,536 lines, input and
        output kept, class-wide, in each tokenizer stage): each distinct text is scored once
        and the references are kept preprocessed in `scorer_for`, so the memo only held a
        chunk's variants, ~120 MB for 64 WikiText paragraphs' 28,000 variants."""
        tokenizer = getattr(self.metric, "tokenizer", None)
        # 13a and zh hand their output to a regexp tokenizer with a memo of its own
        for stage in (tokenizer, getattr(tokenizer, "_post_tokenizer", None)):
            clear = getattr(type(stage).__call__, "cache_clear", None) if stage else None
            if callable(clear):
                clear()

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        rows: list[ScoreRow] = [{self.metric_name: Score(float(
                    self.scorer_for(r.references).corpus_score([r.text], None).score))}
                for r in requests]
        self._forget_lines()
        return rows


@evaluator("bleu")
class Bleu(_SacreBleuMetric):
    """Sentence BLEU (0-100) with effective order, as sacreBLEU recommends per sentence."""

    description = "sacreBLEU sentence BLEU, effective order, all references at once"
    metric_name = "bleu"
    PARAMS = declare_params(
        lowercase=_LOWERCASE,
        force=Param(BOOLEAN, False, "score text that looks tokenized already without a warning",
                    signed="given"),
        tokenize=Param(optional(one_of(_bleu_tokenizers)), None, "sacreBLEU's tokenizer",
                       signed="given", short="tok",
                       default_note="13a, or the target language's (zh, ja-mecab, ko-mecab)"),
        smooth_method=Param(one_of(_smoothing_methods), "exp", "sacreBLEU's smoothing method",
                            signed="given", short="smooth"),
        smooth_value=Param(optional(real(0)), None, "the smoothing constant (floor, add-k)",
                           signed="given", default_note="the method's own: floor 0.1, add-k 1"),
        max_ngram_order=Param(whole_number(1), 4, "the longest n-gram counted",
                              signed="given"),
        trg_lang=Param(text(empty=True), "", "the target language code, for its tokenizer",
                       signed="given"))

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (0.0, 100.0)

    def build(self, references: Sequence[Sequence[str]] | None = None) -> Any:
        from sacrebleu.metrics import BLEU

        return BLEU(**{"effective_order": True, **self.params}, references=references)

    def resolved(self) -> dict[str, Any]:
        metric = self.metric
        smooth_value = metric.smooth_value
        if smooth_value is None:  # sacreBLEU's default for the method
            smooth_value = type(metric).SMOOTH_DEFAULTS[metric.smooth_method]
        return {**super().resolved(), "tokenize": metric.tokenizer_signature,
                "lowercase": metric.lowercase, "smooth_method": metric.smooth_method,
                "smooth_value": smooth_value, "max_ngram_order": metric.max_ngram_order,
                "effective_order": metric.effective_order}

    def shown_settings(self) -> dict[str, Any]:
        """The tokenizer and smoothing as sacreBLEU's own signature prints them (`13a`,
        `floor[0.10]`), the language's tokenizer where trg_lang picks it."""
        theirs = dict(part.split(":", 1)
                      for part in self.resolved()["sacrebleu_signature"].split("|"))
        return {**self.settings, "tokenize": theirs["tok"], "smooth_method": theirs["smooth"]}


@evaluator("chrf")
class Chrf(_SacreBleuMetric):
    """Sentence chrF as sacreBLEU defines it by default: character 6-grams, beta 2 and no word
    n-grams (word_order=0). chrF++ adds word uni- and bigrams: `chrf:word_order=2`. The
    resolved orders are in the signature, so the two never share cached scores."""

    description = ("sacreBLEU sentence chrF: character 6-grams, word_order=0 "
                   "(chrF++ is chrf:word_order=2)")
    metric_name = "chrf"
    PARAMS = declare_params(
        char_order=Param(whole_number(1), 6, "the longest character n-gram", signed="given",
                         short="nc"),
        word_order=Param(whole_number(0), 0, "the longest word n-gram (0: none; chrF++ is 2)",
                         signed="given", short="nw"),
        beta=Param(real(0), 2, "recall's weight against precision", signed="given"),
        lowercase=_LOWERCASE,
        whitespace=Param(BOOLEAN, False, "keep whitespace in character n-grams",
                         signed="given"),
        eps_smoothing=Param(BOOLEAN, False, "smooth zero n-gram matches with a small epsilon "
                            "(chrF++.py's way) instead of dropping the order", signed="given"))

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (0.0, 100.0)

    def build(self, references: Sequence[Sequence[str]] | None = None) -> Any:
        from sacrebleu.metrics import CHRF

        return CHRF(**self.params, references=references)

    def resolved(self) -> dict[str, Any]:
        metric = self.metric
        return {**super().resolved(), "char_order": metric.char_order,
                "word_order": metric.word_order, "beta": metric.beta,
                "lowercase": metric.lowercase, "whitespace": metric.whitespace,
                "eps_smoothing": metric.eps_smoothing}

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
    PARAMS = declare_params(
        normalized=Param(BOOLEAN, False, "normalise punctuation and tokenize as tercom -N",
                         signed="given"),
        no_punct=Param(BOOLEAN, False, "remove punctuation", signed="given"),
        asian_support=Param(BOOLEAN, False, "split Asian characters into words",
                            signed="given"),
        case_sensitive=Param(BOOLEAN, False, "tell upper from lower case", signed="given",
                             short="case"))

    def build(self, references: Sequence[Sequence[str]] | None = None) -> Any:
        from sacrebleu.metrics import TER

        return TER(**self.params, references=references)

    def resolved(self) -> dict[str, Any]:
        metric = self.metric
        return {**super().resolved(), "tokenize": metric.tokenizer_signature,
                "case_sensitive": metric.case_sensitive, "normalized": metric.normalized,
                "no_punct": metric.no_punct, "asian_support": metric.asian_support}

    def higher_is_better(self, aspect: str) -> bool:
        return False


class _Analysed:
    """A text's rouge-score tokens and, on demand, its n-gram counts."""

    __slots__ = ("_ngrams", "tokens")

    def __init__(self, tokens: tuple[str, ...]):
        self.tokens = tokens
        self._ngrams: dict[int, Counter[tuple[str, ...]]] = {}

    def ngrams(self, n: int) -> Counter[tuple[str, ...]]:
        counts = self._ngrams.get(n)
        if counts is None:
            tokens = self.tokens
            counts = self._ngrams[n] = Counter(
                tokens[i:i + n] for i in range(len(tokens) - n + 1))
        return counts


def ngram_overlap(reference: Counter[tuple[str, ...]],
                  prediction: Counter[tuple[str, ...]]) -> tuple[float, float]:
    """ROUGE-N precision and recall as rouge-score defines them: clipped n-gram matches over the
    prediction's (precision) and the reference's (recall) n-gram count, each at least 1."""
    matches = sum(min(count, prediction[gram]) for gram, count in reference.items())
    return (matches / max(sum(prediction.values()), 1),
            matches / max(sum(reference.values()), 1))


class _MemoStemmer:
    """Porter stemming memoized per word: variants of one text share almost all their words.
    nltk loads at the first word, not when the evaluator is built (a pooled run starts its
    helper processes right after building its evaluators), and without scipy and
    scikit-learn, which it imports for collocation tests and classifiers (most of its import
    time)."""

    def __init__(self) -> None:
        self._stem: Callable[[str], Any] | None = None

    def stem(self, word: str) -> str:
        if self._stem is None:
            with importing_without("nltk", "scipy", "sklearn"):
                from nltk.stem import porter

            self._stem = functools.lru_cache(maxsize=200_000)(porter.PorterStemmer().stem)
        return str(self._stem(word))


#: rouge-score's n-gram types (up to 9-grams) and the longest common subsequence
ROUGE_TYPES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL")


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
    library = "rouge-score"
    PARAMS = declare_params(
        measure=Param(one_of(("fmeasure", "precision", "recall")), "fmeasure",
                      "which of rouge-score's numbers is the score", short="m"),
        use_stemmer=Param(BOOLEAN, True, "Porter-stem words of over 3 letters before matching",
                          short="stem"),
        types=Param(words(one_of(ROUGE_TYPES)), "rouge1 rouge2 rougeL",
                    "the ROUGE types reported", short="types"))

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        self.measure = values["measure"]
        self.types = tuple(values["types"].split())
        self._stemmer = _MemoStemmer() if values["use_stemmer"] else None
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

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (0.0, 1.0)  # precision, recall and F of n-gram or LCS matches

    def versions(self) -> dict[str, str]:
        found = {"rouge-score": version("rouge-score")}
        if self._stemmer is not None:  # the Porter stemmer is nltk's
            found["nltk"] = version("nltk")
        return found

    def signature(self) -> dict[str, Any]:
        settings = {"tokenizer": "rouge-score default (lowercase, runs of [a-z0-9])",
                    "stemmer": "nltk Porter, words over 3 characters" if self._stemmer
                    else "none",
                    "references": "maximum over references, per ROUGE type and measure"}
        return {**super().signature(), "settings": settings}

    def _pair(self, reference: _Analysed, prediction: _Analysed, kind: str) -> float:
        from rapidfuzz.distance import LCSseq
        from rouge_score import scoring

        if kind == "rougeL":
            ref, pred = reference.tokens, prediction.tokens
            if not ref or not pred:
                return 0.0
            lcs = LCSseq.similarity(ref, pred)
            precision, recall = lcs / len(pred), lcs / len(ref)
        else:
            n = int(kind[5:])
            precision, recall = ngram_overlap(reference.ngrams(n), prediction.ngrams(n))
        result = scoring.Score(precision, recall, scoring.fmeasure(precision, recall))
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
    PARAMS = declare_params(
        orders=Param(words(whole_number(1)), "2 3 4", "the n-gram lengths, one rep-n each",
                     short="n"))

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        self.orders = tuple(int(n) for n in values["orders"].split())

    @property
    def aspects(self) -> tuple[str, ...]:
        return tuple(f"rep-{n}" for n in self.orders)

    def higher_is_better(self, aspect: str) -> bool:
        return False

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (0.0, 1.0)  # a share of n-grams

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
