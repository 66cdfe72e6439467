"""Paper 000's rule attacks as its public code states them: the `paper` severity.

The four rule-based attacks of paper 000 (sentence exchange, word exchange, spelling mistake,
sentence deletion) have graded defaults in this catalogue (pairs, per-sentence counts, ratios).
The paper itself applies one fixed rule each, and severity `paper` selects exactly that rule:

- sentence exchange: a random full permutation of the sentences, redrawn until the order changed;
- word exchange: per sentence of whitespace words, none when it has 5 words or fewer, one pair of
  neighbouring lower-case words when it has 6-9, one pair in each half from 10 on; the first word
  never moves;
- spelling mistake: per sentence, up to 3 random words of 4+ lower-case letters get one typo each,
  a repeated, deleted (never the first letter) or swapped-with-its-neighbour letter;
- sentence deletion: the last sentence goes.

The rules count words as `sentence.split()` does; `word_segments` gives every sentence of a parse
as whitespace words, so an edit keeps the text's spacing and paragraph breaks. Sentences come
from spaCy (the paper used NLTK's splitter), which can split a few texts differently.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from evalstress.core.text import ParsedText
from evalstress.perturb.base import Perturbation, Severity

PAPER = "paper"
TYPO_KINDS = ("repeat", "delete", "swap")

_SPLIT = re.compile(r"(\s+)")


def is_paper(severity: Severity) -> bool:
    return isinstance(severity, str) and severity.strip().lower() == PAPER


def count_severity(perturbation: Perturbation, severity: Severity) -> int:
    """A whole-number severity (pairs, sentences, ...), or a clear error naming the choices."""
    try:
        value = float(severity)
    except (TypeError, ValueError):
        value = float("nan")
    if not value.is_integer() or value < 1:
        raise ValueError(f"{perturbation.name}: severity {severity!r} must be a whole number "
                         f"of {perturbation.severity_param} (1 or more) or '{PAPER}' (the "
                         "paper's rule)")
    return int(value)


@dataclass(frozen=True)
class Segment:
    """One sentence: `pieces` alternate word, whitespace, word, ... (words at `word_slots`)."""

    pieces: tuple[str, ...]
    word_slots: tuple[int, ...]

    @property
    def words(self) -> list[str]:
        return [self.pieces[i] for i in self.word_slots]


def word_segments(parsed: ParsedText) -> list[Segment]:
    """Each sentence of the parse as whitespace words; joined they give the text back exactly."""

    def build(p: ParsedText) -> list[Segment]:
        out = []
        for start, end in p.sentences:
            pieces = tuple(x for x in _SPLIT.split("".join(p.pieces[start:end])) if x)
            slots = tuple(i for i, x in enumerate(pieces) if not x.isspace())
            out.append(Segment(pieces, slots))
        return out

    return parsed.memo("word_segments", build)


def join(segments: list[Segment], edits: dict[tuple[int, int], str]) -> str:
    """The text with word `w` of sentence `s` replaced by `edits[(s, w)]`."""
    parts: list[str] = []
    for s, segment in enumerate(segments):
        pieces = list(segment.pieces)
        for w, slot in enumerate(segment.word_slots):
            if (s, w) in edits:
                pieces[slot] = edits[(s, w)]
        parts.extend(pieces)
    return "".join(parts)


def is_plain_lower(word: str) -> bool:
    """Only the letters a-z: no capital, digit, apostrophe or attached punctuation.

    Paper 000's rules touch only such words, so names, numbers and words carrying a comma or
    full stop keep their place and spelling.
    """
    return bool(word) and word.isascii() and word.isalpha() and word.islower()


def typo(word: str, rng: random.Random) -> str:
    """One of the paper's three letter slips: repeat a letter, delete one (never the first),
    or swap one with the next. Swapping two equal letters changes nothing, as in the paper."""
    kind = rng.choice(TYPO_KINDS)
    if kind == "repeat":
        i = rng.randrange(len(word))
        return word[:i] + word[i] + word[i:]
    if kind == "delete":
        i = rng.randrange(1, len(word))
        return word[:i] + word[i + 1:]
    i = rng.randrange(len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def spelling_mistakes(parsed: ParsedText, rng: random.Random, per_sentence: int = 3,
                      min_letters: int = 4) -> tuple[str, int]:
    """The text with up to `per_sentence` typos in each sentence, and how many words were hit."""
    segments = word_segments(parsed)
    edits: dict[tuple[int, int], str] = {}
    for s, segment in enumerate(segments):
        words = segment.words
        eligible = [i for i, w in enumerate(words) if len(w) >= min_letters and is_plain_lower(w)]
        chosen = eligible if len(eligible) <= per_sentence else rng.sample(eligible, per_sentence)
        for i in sorted(chosen):
            edits[(s, i)] = typo(words[i], rng)
    return join(segments, edits), len(edits)


def word_exchange(parsed: ParsedText, rng: random.Random) -> str | None:
    """Paper 000's word-order attack, sentence by sentence; None when no sentence qualifies.

    A sentence of n <= 5 words is left alone. Otherwise candidate positions i (never the first
    word) are those where words i and i+1 are both plain lower-case words; n < 10 exchanges one
    random candidate pair, n >= 10 one in each half (i in [1, n//2 - 2] and in [n//2, n - 2]).
    """
    segments = word_segments(parsed)
    edits: dict[tuple[int, int], str] = {}
    for s, segment in enumerate(segments):
        words = segment.words
        n = len(words)
        if n <= 5:
            continue
        spans = [range(1, n - 1)] if n < 10 else [range(1, n // 2 - 1), range(n // 2, n - 1)]
        for span in spans:
            candidates = [i for i in span
                          if is_plain_lower(words[i]) and is_plain_lower(words[i + 1])]
            if candidates:
                i = rng.choice(candidates)
                edits[(s, i)], edits[(s, i + 1)] = words[i + 1], words[i]
    return join(segments, edits) if edits else None
