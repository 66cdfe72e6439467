"""Evaluators with planted defects, and their clean control: the known answers that the
evaluator card is checked against (`evalstress calibrate`, docs/calibration.md).

`planted:defect=none` is the control: a lexical overlap score that every perturbation of the
blind-spot suite moves by construction (it counts word and punctuation tokens, in order, in
uni-, bi- and trigrams, against the references). Each other defect changes that one score in
one known way, so the card should report exactly that defect and nothing the control lacks.
Every score is a pure function of the request (the random one is seeded by its `seed` and the
text), cheap enough that a card of each takes seconds.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalstress.core.params import Param, declare_params, one_of, real, whole_number
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

#: a token: a run of letters and digits, or one punctuation mark
TOKEN = re.compile(r"\w+|[^\w\s]")
#: the n-gram orders the control counts
ORDERS = (1, 2, 3)
#: enters the signature, so cached scores follow a change to any defect's score function
VERSION = "2"


def tokens(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens, in order."""
    return TOKEN.findall(text.lower())


def words(toks: Sequence[str]) -> list[str]:
    """The tokens that hold a letter or digit (punctuation marks left out)."""
    return [t for t in toks if any(ch.isalnum() for ch in t)]


def ngram_f1(hyp: Sequence[str], ref: Sequence[str]) -> float:
    """The mean over orders 1-3 of the clipped n-gram F1 of `hyp` against `ref`, 0-1 (orders
    longer than both texts left out, so a two-word text equal to its reference scores 1)."""
    total, counted = 0.0, 0
    for n in ORDERS:
        if n > max(len(hyp), len(ref)):
            break
        counted += 1
        h = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
        r = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
        match = sum((h & r).values())
        if match:
            precision, recall = match / sum(h.values()), match / sum(r.values())
            total += 2 * precision * recall / (precision + recall)
    return total / counted if counted else 0.0


def overlap(text: str, references: Sequence[str],
            prepare: Callable[[list[str]], list[str]] = list) -> float:
    """The control's score, 0-100: the best n-gram F1 over the references, each side's
    tokens passed through `prepare` first (how a planted defect makes itself blind)."""
    hyp = prepare(tokens(text))
    return 100.0 * max((ngram_f1(hyp, prepare(tokens(ref))) for ref in references),
                       default=0.0)


def control(request: ScoreRequest, settings: PlantedSettings) -> float:
    """No defect. Truncation, token-drop and article-removal take matched n-grams away;
    repeated-token and repetition add unmatched ones; local-swap and sentence-switching break
    the bi- and trigrams across the moved tokens; noised-punctuation changes punctuation
    tokens, which the control counts. So each perturbation lowers it on texts that share
    n-grams with a reference."""
    return overlap(request.text, request.references)


def characters(text: str) -> Counter[str]:
    """The lower-cased characters of a text, spaces left out, as a bag."""
    return Counter(ch for ch in text.lower() if not ch.isspace())


def order_blind(request: ScoreRequest, settings: PlantedSettings) -> float:
    """Blind to order: 100 x the F1 of the bags of characters (spaces left out) against the
    best reference, so any reordering of a text's tokens (local-swap, sentence-switching)
    scores exactly as the text did, however a tokenizer split them (a swap inside "200m"
    moves "m" before "200": a bag of words would see two new words, a bag of characters
    nothing). Deleting, adding or replacing characters moves it. Bag-of-words metrics
    (ROUGE-1, unigram BLEU) share the defect."""
    hyp = characters(request.text)
    best = 0.0
    for ref in request.references:
        theirs = characters(ref)
        match = sum((hyp & theirs).values())
        if match:
            best = max(best, 2 * match / (sum(hyp.values()) + sum(theirs.values())))
    return 100.0 * best


def punctuation_blind(request: ScoreRequest, settings: PlantedSettings) -> float:
    """Blind to punctuation: the control with every punctuation token removed from both
    sides, so noised-punctuation (marks swapped for others) leaves the score exactly as it
    was. Metrics that tokenize punctuation away share it."""
    return overlap(request.text, request.references, words)


def length_only(request: ScoreRequest, settings: PlantedSettings) -> float:
    """Reads nothing but length: the number of words. Damage that keeps the words
    (local-swap, sentence-switching, noised-punctuation) leaves it exactly unchanged, and
    damage that adds words (repeated-token, repetition) raises it: the verbosity bias of
    judges that prefer longer answers, taken to its end."""
    return float(len(words(tokens(request.text))))


def constant(request: ScoreRequest, settings: PlantedSettings) -> float:
    """The same number for every text: the degenerate evaluator the sanity gate exists for
    (a judge that answers 5 to everything, a parse that always falls back)."""
    return 50.0


def random_score(request: ScoreRequest, settings: PlantedSettings) -> float:
    """A uniform draw on 0-100, seeded by `seed` and the text (the same text always gets the
    same number, so caches and reruns agree): an evaluator with no signal at all."""
    digest = hashlib.sha256(f"{settings.seed}\x00{request.text}".encode()).digest()
    return 100.0 * int.from_bytes(digest[:8], "big") / 2**64


def deletion_rewarding(request: ScoreRequest, settings: PlantedSettings) -> float:
    """Rewards deleted content: the control minus `brevity` x the text's length in words as
    a share of the reference's (the shortest one). Deleting k of a text's L tokens costs the
    control at most 100 x (1 + 2 + 3) / 3 x k / L (each deleted token breaks at most one
    unigram, two bigrams and three trigrams), so with the default brevity of 300 the reward
    outweighs the loss: truncation, token-drop and article-removal raise the score, and
    additions lower it more than the control alone does. Precision-only scores lean so."""
    length = len(words(tokens(request.text)))
    shortest = min((len(words(tokens(ref))) for ref in request.references), default=0)
    return control(request, settings) - settings.brevity * length / max(shortest, 1)


def saturating(request: ScoreRequest, settings: PlantedSettings) -> float:
    """Saturates at a ceiling: the control capped at `cap`, so every text at least that close
    to a reference gets the same full mark and light damage that keeps a text above the cap
    changes nothing. A judge that gives the top rating to anything passable behaves so."""
    return min(control(request, settings), settings.cap)


@dataclass(frozen=True)
class PlantedSettings:
    """The planted evaluator's parameters that shape a score."""

    seed: int
    brevity: float
    cap: float


@dataclass(frozen=True)
class Defect:
    """One planted defect: its score function, its direction and range."""

    score: Callable[[ScoreRequest, PlantedSettings], float]
    higher_is_better: bool = True
    score_range: tuple[float, float] | None = (0.0, 100.0)


#: every planted defect by name; "none" is the clean control
DEFECTS: dict[str, Defect] = {
    "none": Defect(control),
    "order-blind": Defect(order_blind),
    "punctuation-blind": Defect(punctuation_blind),
    "length-only": Defect(length_only, score_range=None),
    "constant": Defect(constant),
    "random": Defect(random_score),
    "deletion-rewarding": Defect(deletion_rewarding, score_range=None),
    "saturating": Defect(saturating),
}


@evaluator("planted")
class Planted(Evaluator):
    """An evaluator with one planted defect (or none: the control), for checking the card
    against known answers. Its docstring per defect (in `DEFECTS`) says what it is blind to
    and why; `evalstress calibrate` runs a card of each."""

    description = "a lexical overlap score with one planted defect (none: the clean control)"
    needs_references = True
    cpu_bound = True  # pure Python: the runner may score it in worker processes
    batch_size = 256
    label_param = "defect"
    PARAMS = declare_params(
        defect=Param(one_of(list(DEFECTS)), "none", "the planted defect (none: the control)",
                     short="defect"),
        seed=Param(whole_number(0), 0, "the seed of the random defect's draws", short="seed"),
        brevity=Param(real(0), 300.0, "deletion-rewarding: the penalty for each reference "
                      "length of text"),
        cap=Param(real(0, 100), 50.0, "saturating: the ceiling of the score (half of "
                  "what a text scores against itself)"))

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        self.defect = DEFECTS[values["defect"]]
        self.values = PlantedSettings(values["seed"], float(values["brevity"]),
                                      float(values["cap"]))

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("score",)

    def higher_is_better(self, aspect: str) -> bool:
        return self.defect.higher_is_better

    def score_range(self, aspect: str) -> tuple[float, float] | None:
        return self.defect.score_range

    def versions(self) -> dict[str, str]:
        return {"planted": VERSION}

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        return [{"score": Score(self.defect.score(r, self.values))} for r in requests]
