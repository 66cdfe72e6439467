"""Fluency noise of paper 002 (Table 16): damage grammaticality at a controllable ratio."""

from __future__ import annotations

import math
import random

from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    perturbation,
    sample_count,
)
from evalstress.perturb.common import is_word, match_case, word_indices
from evalstress.text import ParsedText, Token, rebuild_parsed

FLUENCY_DAMAGES = ("fluency", "grammaticality", "readability", "overall")
MEANING_KEPT = ("faithfulness", "non-hallucination", "non-contradiction")

ARTICLES = frozenset({"a", "an", "the"})
NOISY_PUNCTUATION = (",", ".", "?", "!", ":")
PUNCTUATION_SWAP = {",": ".", ".": ","}


def _word_indices(ctx: PerturbContext) -> list[int]:
    return word_indices(ctx.parsed)


@perturbation("truncation")
class Truncation(Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "informativeness", "adequacy", "coherence")
    preserves = ("non-hallucination", "non-contradiction")
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = "Remove a portion of the words at the end of the text."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        words = ctx.text.split()
        if len(words) < 2:
            return Skip("fewer than two words to truncate")
        keep = max(1, len(words) - max(1, math.floor(len(words) * float(severity))))
        return " ".join(words[:keep])


@perturbation("token-drop")
class TokenDrop(Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "informativeness")
    preserves = MEANING_KEPT
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = "Remove a random portion of the word tokens."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        words = _word_indices(ctx)
        if len(words) < 2:
            return Skip("fewer than two word tokens")
        count = min(sample_count(len(words), float(severity), rng), len(words) - 1)
        return rebuild_parsed(ctx.parsed, drop=rng.sample(words, count))


@perturbation("repeated-token")
class RepeatedToken(Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = "Repeat a random portion of the word tokens once (went -> went went)."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        words = _word_indices(ctx)
        if not words:
            return Skip("no word tokens")
        tokens = ctx.parsed.tokens
        chosen = rng.sample(words, sample_count(len(words), float(severity), rng))
        return rebuild_parsed(ctx.parsed, {i: f"{tokens[i].text} {tokens[i].text}" for i in chosen})


@perturbation("local-swap")
class LocalSwap(Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.1, 0.2, 0.3, 0.4)  # beyond 0.4 the word-level noise ratio saturates
    description = "Swap a random portion of the tokens with the token to their right."
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        tokens = ctx.parsed.tokens
        n = len(tokens)
        distinct = ctx.parsed.memo("local_swap", lambda p: any(
            tokens[i].text != tokens[i + 1].text for i in range(n - 1)))
        if not distinct:
            return Skip("no two adjacent distinct tokens to swap")
        # a uniform set of non-overlapping pairs (i, i+1): each token moves at most once, so
        # swaps never undo each other and the amount of noise keeps growing with the ratio
        # (picking pairs one by one and skipping overlaps saturates near 40% of the tokens)
        wanted = min(sample_count(n - 1, float(severity), rng), n // 2)
        starts = [s + k for k, s in enumerate(sorted(rng.sample(range(n - wanted), wanted)))]
        order = list(range(n))
        for i in starts:
            if tokens[i].text != tokens[i + 1].text:
                order[i], order[i + 1] = order[i + 1], order[i]
        if order == list(range(n)):
            i = next(i for i in range(n - 1) if tokens[i].text != tokens[i + 1].text)
            order[i], order[i + 1] = i + 1, i
        # keep the whitespace pattern of the positions, move only the token texts
        return "".join(tokens[src].text + tokens[pos].ws for pos, src in enumerate(order)).strip()


@perturbation("article-removal")
class ArticleRemoval(Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness", "coherence")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Remove a random portion of the articles (a, an, the)."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        articles = ctx.parsed.memo("articles", lambda p: [
            i for i, t in enumerate(p.tokens) if t.text.lower() in ARTICLES and t.pos == "DET"])
        if not articles:
            return Skip("no article (a, an, the) in the text")
        return _remove(ctx.parsed, articles, float(severity), rng)


@perturbation("noised-punctuation")
class NoisedPunctuation(Perturbation):
    family = "fluency"
    level = "char"
    damages = (*FLUENCY_DAMAGES, "coherence")
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Replace a random portion of , . ? ! : marks (commas become periods and back)."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        tokens = ctx.parsed.tokens
        marks = ctx.parsed.memo("noisy_marks", lambda p: [
            i for i, t in enumerate(p.tokens) if t.text in NOISY_PUNCTUATION])
        if not marks:
            return Skip("no , . ? ! : punctuation in the text")
        chosen = rng.sample(marks, sample_count(len(marks), float(severity), rng))
        replacements = {}
        for i in chosen:
            mark = tokens[i].text
            replacements[i] = PUNCTUATION_SWAP.get(mark) or rng.choice(
                [m for m in NOISY_PUNCTUATION if m != mark])
        return rebuild_parsed(ctx.parsed, replacements)


def _remove(parsed: ParsedText, candidates: list[int], ratio: float, rng: random.Random) -> str:
    """Drop a random portion of the candidate tokens; re-capitalise a text whose start went."""
    drop = rng.sample(candidates, sample_count(len(candidates), ratio, rng))
    text = rebuild_parsed(parsed, drop=drop)
    return text[:1].upper() + text[1:] if 0 in drop else text


@perturbation("preposition-removal")
class PrepositionRemoval(Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Remove a random portion of the prepositions (went to work -> went work)."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        found = ctx.parsed.memo("prepositions", lambda p: [
            i for i, t in enumerate(p.tokens) if t.pos == "ADP" and is_word(t)])
        if not found:
            return Skip("no preposition in the text")
        return _remove(ctx.parsed, found, float(severity), rng)


@perturbation("stopword-removal")
class StopwordRemoval(Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "coherence")
    preserves = ("non-hallucination", "non-contradiction")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Remove a random portion of the stop-words (spaCy's English stop list)."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        found = ctx.parsed.memo("stopwords", lambda p: [
            i for i, t in enumerate(p.tokens) if t.is_stop and is_word(t)])
        if not found:
            return Skip("no stop-word in the text")
        return _remove(ctx.parsed, found, float(severity), rng)


def _lemmatizable(token: Token) -> bool:
    # contractions ('s, 're, n't) have no standalone lemma form that reads as a word
    return (token.pos in ("VERB", "AUX") and token.is_alpha and bool(token.lemma)
            and token.lemma.lower() != token.text.lower())


@perturbation("verb-lemmatization")
class VerbLemmatization(Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness", "coherence")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Replace a random portion of the inflected verbs by their lemma (went -> go)."
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        tokens = ctx.parsed.tokens
        verbs = ctx.parsed.memo("lemmatizable_verbs", lambda p: [
            i for i, t in enumerate(p.tokens) if _lemmatizable(t)])
        if not verbs:
            return Skip("no inflected verb in the text")
        chosen = rng.sample(verbs, sample_count(len(verbs), float(severity), rng))
        return rebuild_parsed(ctx.parsed, {
            i: match_case(tokens[i].lemma, tokens[i].text) for i in chosen})


def _sentence_body(parsed: ParsedText, start: int, end: int) -> tuple[int, int]:
    """The token range of a sentence without its surrounding punctuation and whitespace."""
    tokens = parsed.tokens
    while start < end and not is_word(tokens[start]):
        start += 1
    while end > start and not is_word(tokens[end - 1]):
        end -= 1
    return start, end


@perturbation("middle-swap")
class MiddleSwap(Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "coherence")
    preserves = ("non-hallucination", "informativeness")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = ("Swap the left and right halves of a random portion of the sentences "
                   "(a wrong subject-verb-object order).")
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        parsed = ctx.parsed
        bodies = parsed.memo("middle_swap", lambda p: [
            b for s, e in p.sentences if (b := _sentence_body(p, s, e))[1] - b[0] >= 2])
        if not bodies:
            return Skip("no sentence with two or more tokens")
        tokens = parsed.tokens
        chosen = rng.sample(bodies, sample_count(len(bodies), float(severity), rng))
        pieces = list(parsed.pieces)
        for start, end in chosen:
            cut = start + (end - start) // 2
            order = [*range(cut, end), *range(start, cut)]
            for offset, src in enumerate(order):
                pos = start + offset
                text = tokens[src].text
                if pos == start and tokens[start].text[:1].isupper():
                    text = text[:1].upper() + text[1:]
                elif src == start and tokens[src].pos != "PROPN" and text != "I" \
                        and not text.isupper():
                    text = text[:1].lower() + text[1:]
                if pos == end - 1:
                    ws = tokens[end - 1].ws  # the sentence keeps its closing spacing
                else:
                    nxt = order[offset + 1]
                    # tokens glued in the original (do|n't) stay glued; others get a space
                    ws = tokens[src].ws if nxt == src + 1 else (tokens[src].ws or " ")
                pieces[pos] = text + ws
        return "".join(pieces).strip()
