"""Fluency noise of paper 002 (Table 16): damage grammaticality at a controllable ratio."""

from __future__ import annotations

import math
import random

from evalstress.core.text import ParsedText, Token, rebuild_parsed
from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    perturbation,
    sample_count,
)
from evalstress.perturb.common import (
    PaperRule,
    choose,
    follows_paper,
    is_word,
    match_case,
    sentence_starts_after,
    whitespace_ceil,
    word_indices,
)

FLUENCY_DAMAGES = ("fluency", "grammaticality", "readability", "overall")
MEANING_KEPT = ("faithfulness", "non-hallucination", "non-contradiction")

ARTICLES = frozenset({"a", "an", "the"})
NOISY_PUNCTUATION = (",", ".", "?", "!", ":")
PUNCTUATION_SWAP = {",": ".", ".": ","}
#: Paper 002's one fixed mapping for noised punctuation (its public code), applied per character.
PAPER_PUNCTUATION = {".": ",", ",": ".", "!": ",", "?": ",", ":": "."}
#: Sentence openers paper 002's middle swap lower-cases when they move inside the sentence.
PAPER_LOWERED_OPENERS = frozenset({"the", "in", "a", "on", "at", "around", "when", "and"})


def _word_indices(ctx: PerturbContext) -> list[int]:
    return word_indices(ctx.parsed)


@perturbation("truncation")
class Truncation(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "informativeness", "adequacy", "coherence")
    preserves = ("non-hallucination", "non-contradiction")
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = "Remove a portion of the words at the end of the text."
    paper_rule = ("floor(n x ratio) whitespace words go (possibly none) and a period closes the "
                  "text")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        words = ctx.text.split()
        if len(words) < 2:
            return Skip("fewer than two words to truncate")
        if follows_paper(self):
            keep = max(1, len(words) - math.floor(len(words) * float(severity)))
            text = " ".join(words[:keep])
            return text if text.endswith(".") else text + "."
        keep = max(1, len(words) - max(1, math.floor(len(words) * float(severity))))
        return " ".join(words[:keep])


@perturbation("token-drop")
class TokenDrop(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "informativeness")
    preserves = MEANING_KEPT
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = "Remove a random portion of the word tokens."
    paper_rule = "ceil(n x ratio) of the whitespace tokens go (at most n - 1)"
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            tokens = ctx.text.split()
            if len(tokens) < 2:
                return Skip("fewer than two whitespace tokens")
            count = min(whitespace_ceil(len(tokens), float(severity)), len(tokens) - 1)
            gone = set(rng.sample(range(len(tokens)), count))
            return " ".join(t for i, t in enumerate(tokens) if i not in gone)
        words = _word_indices(ctx)
        if len(words) < 2:
            return Skip("fewer than two word tokens")
        count = min(sample_count(len(words), float(severity), rng), len(words) - 1)
        return rebuild_parsed(ctx.parsed, drop=rng.sample(words, count))


@perturbation("repeated-token")
class RepeatedToken(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.1, 0.2, 0.3, 0.4, 0.5)
    description = "Repeat a random portion of the word tokens once (went -> went went)."
    paper_rule = ("ceil(n x ratio) times, a random whitespace token of the growing text is "
                  "doubled")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            pieces = ctx.text.split()
            if not pieces:
                return Skip("no whitespace tokens")
            for _ in range(whitespace_ceil(len(pieces), float(severity))):
                i = rng.randrange(len(pieces))
                pieces.insert(i, pieces[i])
            return " ".join(pieces)
        words = _word_indices(ctx)
        if not words:
            return Skip("no word tokens")
        tokens = ctx.parsed.tokens
        chosen = rng.sample(words, sample_count(len(words), float(severity), rng))
        return rebuild_parsed(ctx.parsed, {i: f"{tokens[i].text} {tokens[i].text}" for i in chosen})


@perturbation("local-swap")
class LocalSwap(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.1, 0.2, 0.3, 0.4)  # beyond 0.4 the word-level noise ratio saturates
    description = "Swap a random portion of the tokens with the token to their right."
    paper_rule = ("min(ceil(n x ratio), n - 1) sequential swaps of a random whitespace token "
                  "with its right neighbour (never the same position and pair twice)")
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            return _paper_local_swap(ctx.text.split(), float(severity), rng)
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
        # keep the whitespace pattern of the positions, move only the token texts; two words a
        # swap brings together where a word met punctuation get a space (not "MondayShe")
        pieces = []
        for pos, src in enumerate(order):
            ws = tokens[pos].ws
            if not ws and pos + 1 < n and order[pos + 1] != src + 1 and is_word(tokens[src]) \
                    and is_word(tokens[order[pos + 1]]):
                ws = " "
            pieces.append(tokens[src].text + ws)
        return "".join(pieces).strip()


def _paper_local_swap(words: list[str], ratio: float, rng: random.Random) -> str | Skip:
    """Paper 002's local swap: each swap acts on the text as the previous swaps left it."""
    n = len(words)
    if n < 2:
        return Skip("fewer than two whitespace tokens to swap")
    done: set[tuple[int, str, str]] = set()
    for _ in range(min(whitespace_ceil(n, ratio), n - 1)):
        for _attempt in range(1000):  # the paper redraws a position and pair already swapped
            i = rng.randrange(n - 1)
            key = (i, words[i], words[i + 1])
            if key not in done:
                break
        else:
            break
        done.add(key)
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


@perturbation("article-removal")
class ArticleRemoval(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness", "coherence")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Remove a random portion of the articles (a, an, the)."
    paper_rule = ("each whitespace word a/an/the goes with probability ratio; sentence starts "
                  "are re-capitalised")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            words = ctx.text.split()
            found = [i for i, w in enumerate(words) if w.lower() in ARTICLES]
            if not found:
                return Skip("no article (a, an, the) in the text")
            return _drop_words(words, set(choose(found, float(severity), rng, paper=True)))
        articles = ctx.parsed.memo("articles", lambda p: [
            i for i, t in enumerate(p.tokens) if t.text.lower() in ARTICLES and t.pos == "DET"])
        if not articles:
            return Skip("no article (a, an, the) in the text")
        return _remove(ctx.parsed, articles, float(severity), rng)


@perturbation("noised-punctuation")
class NoisedPunctuation(PaperRule, Perturbation):
    family = "fluency"
    level = "char"
    damages = (*FLUENCY_DAMAGES, "coherence")
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Replace a random portion of , . ? ! : marks (commas become periods and back)."
    paper_rule = ("every , . ? ! : character changes with probability ratio by one fixed map "
                  "(. -> , and , -> . ; ! ? -> , ; : -> .)")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            if not any(c in PAPER_PUNCTUATION for c in ctx.text):
                return Skip("no , . ? ! : punctuation in the text")
            ratio = float(severity)
            return "".join(PAPER_PUNCTUATION[c] if c in PAPER_PUNCTUATION and rng.random() < ratio
                           else c for c in ctx.text)
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


def _remove(parsed: ParsedText, candidates: list[int], ratio: float, rng: random.Random, *,
            paper: bool = False) -> str:
    """Drop a random portion of the candidate tokens; re-capitalise a text whose start went.

    Under paper 002's rule each candidate goes with probability `ratio` and every sentence
    whose first word went starts with a capital again.
    """
    drop = choose(candidates, ratio, rng, paper=paper)
    if paper:
        return rebuild_parsed(parsed, sentence_starts_after(parsed, set(drop)), drop=drop)
    text = rebuild_parsed(parsed, drop=drop)
    return text[:1].upper() + text[1:] if 0 in drop else text


def _drop_words(words: list[str], drop: set[int]) -> str:
    """Whitespace words without `drop`; a word that now opens a sentence gets a capital."""
    out: list[str] = []
    opens = True  # the next kept word starts a sentence
    for i, word in enumerate(words):
        if i in drop:
            continue
        if opens and i > 0 and (i - 1) in drop:
            word = word[:1].upper() + word[1:]
        out.append(word)
        opens = word.endswith((".", "!", "?"))
    return " ".join(out)


@perturbation("preposition-removal")
class PrepositionRemoval(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Remove a random portion of the prepositions (went to work -> went work)."
    paper_rule = ("each preposition goes with probability ratio; sentence starts are "
                  "re-capitalised")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        found = ctx.parsed.memo("prepositions", lambda p: [
            i for i, t in enumerate(p.tokens) if t.pos == "ADP" and is_word(t)])
        if not found:
            return Skip("no preposition in the text")
        return _remove(ctx.parsed, found, float(severity), rng, paper=follows_paper(self))


@perturbation("stopword-removal")
class StopwordRemoval(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "coherence")
    preserves = ("non-hallucination", "non-contradiction")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Remove a random portion of the stop-words (spaCy's English stop list)."
    paper_rule = ("each stop-word goes with probability ratio; sentence starts are "
                  "re-capitalised")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        found = ctx.parsed.memo("stopwords", lambda p: [
            i for i, t in enumerate(p.tokens) if t.is_stop and is_word(t)])
        if not found:
            return Skip("no stop-word in the text")
        return _remove(ctx.parsed, found, float(severity), rng, paper=follows_paper(self))


def _lemmatizable(token: Token) -> bool:
    # contractions ('s, 're, n't) have no standalone lemma form that reads as a word
    return (token.pos in ("VERB", "AUX") and token.is_alpha and bool(token.lemma)
            and token.lemma.lower() != token.text.lower())


@perturbation("verb-lemmatization")
class VerbLemmatization(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = FLUENCY_DAMAGES
    preserves = (*MEANING_KEPT, "informativeness", "coherence")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = "Replace a random portion of the inflected verbs by their lemma (went -> go)."
    paper_rule = ("main verbs only (no auxiliaries), each with probability ratio; sentence "
                  "starts are re-capitalised")
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        tokens = ctx.parsed.tokens
        if follows_paper(self):
            main = ctx.parsed.memo("main_verbs", lambda p: [
                i for i, t in enumerate(p.tokens) if t.pos == "VERB" and t.lemma])
            if not main:
                return Skip("no main verb in the text")
            chosen = choose(main, float(severity), rng, paper=True)
            lemmas = {i: tokens[i].lemma for i in chosen}
            return rebuild_parsed(ctx.parsed, sentence_starts_after(ctx.parsed, set(), lemmas))
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
class MiddleSwap(PaperRule, Perturbation):
    family = "fluency"
    level = "word"
    damages = (*FLUENCY_DAMAGES, "coherence")
    preserves = ("non-hallucination", "informativeness")
    grid = (0.2, 0.4, 0.6, 0.8, 1.0)
    description = ("Swap the left and right halves of a random portion of the sentences "
                   "(a wrong subject-verb-object order).")
    paper_grid = (1, 2, 3)
    paper_rule = ("severity is a number of sentences (1, 2, 3); each is cut after ceil(n/2) of "
                  "its tokens, a final period stays last")
    swap_type = True
    source_papers = ("002",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if follows_paper(self):
            return _paper_middle_swap(ctx.parsed, severity, rng)
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


def _paper_middle_swap(parsed: ParsedText, severity: Severity, rng: random.Random) -> str | Skip:
    """Paper 002's middle swap of `severity` random sentences, cut after ceil(n/2) tokens."""
    count = float(severity)
    if count < 1 or count != int(count):
        raise ValueError(f"middle-swap under rule=paper takes a number of sentences (1, 2, 3), "
                         f"not {severity!r}")
    tokens = parsed.tokens
    sentences = [[i for i in range(s, e) if tokens[i].text.strip()] for s, e in parsed.sentences]
    sentences = [row for row in sentences if row]
    if not any(len(row) > 1 for row in sentences):
        return Skip("no sentence with two or more tokens")
    out = ["".join(parsed.pieces[row[0]:row[-1] + 1]).strip() for row in sentences]
    for index in rng.sample(range(len(sentences)), min(int(count), len(sentences))):
        row = sentences[index]
        if len(row) <= 1:
            continue
        texts = [tokens[i].text for i in row]
        if texts[0].lower() in PAPER_LOWERED_OPENERS:
            texts[0] = texts[0].lower()
        words = list(zip(row, texts, strict=True))
        mid = math.ceil(len(words) / 2)
        swapped = (words[mid:-1] + words[:mid] + words[-1:] if texts[-1] == "."
                   else words[mid:] + words[:mid])
        if swapped[0][1] == ",":
            swapped = swapped[1:]
        if len(swapped) >= 2 and swapped[-2][1] == "," and swapped[-1][1] == ".":
            swapped = swapped[:-2] + swapped[-1:]
        pieces = []
        for k, (i, text) in enumerate(swapped):
            if k == len(swapped) - 1:
                pieces.append(text)
                break
            nxt = swapped[k + 1][0]
            glued = nxt == i + 1 and not tokens[i].ws
            pieces.append(text + ("" if glued or tokens[nxt].is_punct else " "))
        joined = "".join(pieces)
        out[index] = joined[:1].upper() + joined[1:]
    return " ".join(out)
