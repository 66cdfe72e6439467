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
from evalstress.text import rebuild

FLUENCY_DAMAGES = ("fluency", "grammaticality", "readability", "overall")
MEANING_KEPT = ("faithfulness", "non-hallucination", "non-contradiction")

ARTICLES = frozenset({"a", "an", "the"})
NOISY_PUNCTUATION = (",", ".", "?", "!", ":")
PUNCTUATION_SWAP = {",": ".", ".": ","}


def _word_indices(ctx: PerturbContext) -> list[int]:
    return [i for i, t in enumerate(ctx.parsed.tokens) if not t.is_punct and not t.text.isspace()]


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
        return rebuild(ctx.parsed.tokens, drop=rng.sample(words, count))


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
        return rebuild(tokens, {i: f"{tokens[i].text} {tokens[i].text}" for i in chosen})


@perturbation("local-swap")
class LocalSwap(Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = "Swap a random portion of the tokens with the token to their right."
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        tokens = ctx.parsed.tokens
        n = len(tokens)
        candidates = [i for i in range(n - 1) if tokens[i].text != tokens[i + 1].text]
        if not candidates:
            return Skip("no two adjacent distinct tokens to swap")
        order = list(range(n))
        used: set[int] = set()
        rng.shuffle(candidates)
        wanted = sample_count(len(candidates), float(severity), rng)
        for i in candidates:
            if wanted == 0:
                break
            if i in used or i + 1 in used:
                continue  # each token moves at most once, so swaps do not undo each other
            order[i], order[i + 1] = order[i + 1], order[i]
            used.update((i, i + 1))
            wanted -= 1
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
        tokens = ctx.parsed.tokens
        articles = [i for i, t in enumerate(tokens) if t.text.lower() in ARTICLES and t.pos == "DET"]
        if not articles:
            return Skip("no article (a, an, the) in the text")
        drop = rng.sample(articles, sample_count(len(articles), float(severity), rng))
        text = rebuild(tokens, drop=drop)
        return text[:1].upper() + text[1:] if 0 in drop else text


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
        marks = [i for i, t in enumerate(tokens) if t.text in NOISY_PUNCTUATION]
        if not marks:
            return Skip("no , . ? ! : punctuation in the text")
        chosen = rng.sample(marks, sample_count(len(marks), float(severity), rng))
        replacements = {}
        for i in chosen:
            mark = tokens[i].text
            replacements[i] = PUNCTUATION_SWAP.get(mark) or rng.choice(
                [m for m in NOISY_PUNCTUATION if m != mark])
        return rebuild(tokens, replacements)
