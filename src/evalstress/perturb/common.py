"""Helpers shared by the rule-based perturbation modules.

Everything derived from a parse (which tokens are words, verbs, stop-words, ...) is memoized on
the `ParsedText`, so it is computed once per text whatever the number of perturbations,
severities and seeds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from evalstress.core.params import ParamKind, declare, one_of
from evalstress.core.text import ParsedText, Token
from evalstress.perturb.base import PerturbContext, Severity, Skipped, sample_count

T = TypeVar("T")

LEVELS = ("minor", "major")
#: The one severity of a perturbation that has no graded levels: an LLM attack without levels,
#: and paper 003's single-degree ones (Tables 1-2: the story endings, the random answer).
#: Discernment counts such a unit in the minor and the major group alike.
DEFAULT_LEVEL = "default"

#: How the product's tasks map onto the task settings of paper 003 (Table 2). Dialogue,
#: data-to-text and open-ended texts are paragraph-length outputs like SummEval summaries.
DHP_TASK = {
    "summarization": "summarization",
    "dialogue": "summarization",
    "data-to-text": "summarization",
    "open-ended": "summarization",
    "translation": "translation",
    "story": "story",
    "qa": "qa",
    # one short sentence, like an answer
    "dialogue-response": "qa",
    "question-generation": "qa",
}


def is_word(token: Token) -> bool:
    return not token.is_punct and bool(token.text.strip())


def word_indices(parsed: ParsedText) -> list[int]:
    """Indices of the tokens that are words (not punctuation, not whitespace)."""
    return parsed.memo("word_indices", lambda p: [i for i, t in enumerate(p.tokens) if is_word(t)])


def sentence_words(parsed: ParsedText) -> list[list[int]]:
    """Word-token indices grouped by sentence."""

    def build(p: ParsedText) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in p.sentences]
        for i in word_indices(p):
            out[p.tokens[i].sent].append(i)
        return out

    return parsed.memo("sentence_words", build)


def nonempty_sentences(parsed: ParsedText) -> list[str]:
    """Sentence texts, without empty ones (a run of blank lines can make a 'sentence')."""
    return parsed.memo("nonempty_sentences", lambda p: [s for s in p.sentence_texts() if s])


def match_case(new: str, old: str) -> str:
    """Give `new` the capitalisation pattern of `old` (Title, UPPER or as is)."""
    if old.isupper() and len(old) > 1:
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    if old[:1].islower() and new[:1].isupper() and not new.isupper():
        return new[:1].lower() + new[1:]
    return new


def sample_pairs(candidates: Sequence[int], pairs: int,
                 rng: random.Random) -> list[tuple[int, int]]:
    """Up to `pairs` disjoint random pairs from `candidates` (each index used at most once)."""
    pool = list(candidates)
    rng.shuffle(pool)
    out: list[tuple[int, int]] = []
    while len(pool) >= 2 and len(out) < pairs:
        out.append((pool.pop(), pool.pop()))
    return out


def dhp_k(ctx: PerturbContext, severity: Severity, table: Mapping[str, Mapping[str, int]],
          override: Mapping[str, int] | None = None, row: str | None = None) -> int:
    """Resolve a paper-003 severity: 'minor'/'major' -> the k of Table 2 in `row` (default: the
    example's task's row); a number as is."""
    if isinstance(severity, str) and not severity.lstrip("-").isdigit():
        level = severity.lower()
        if level not in LEVELS:
            raise ValueError(f"severity '{severity}' must be 'minor', 'major' or a number")
        if override and level in override:
            return int(override[level])
        task = row or DHP_TASK.get(ctx.example.task, "summarization")
        return int(table[task][level])
    k = int(severity)
    if k < 1:
        raise ValueError(f"severity {severity!r} must be at least 1")
    return k


def skip(reason: str) -> Skipped:
    """An exception that `Perturbation.apply` turns into a Skip (for deep helper functions)."""
    return Skipped(reason)


def replace_spans(parsed: ParsedText, spans: Mapping[tuple[int, int], str]) -> str:
    """Replace token spans [start, end) by new texts, keeping the spacing after each span."""
    tokens = parsed.tokens
    pieces = list(parsed.pieces)
    for (start, end), text in spans.items():
        pieces[start] = text + tokens[end - 1].ws
        for j in range(start + 1, end):
            pieces[j] = ""
    return "".join(pieces).strip()


def inflect(lemma: str, tag: str, upos: str) -> str:
    """`lemma` in the form `tag` asks for (lemminflect, offline); the lemma when it has none."""
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=True)
    return forms[0] if forms else lemma


def known_inflection(lemma: str, tag: str) -> str | None:
    """`lemma` in the form `tag` asks for, from lemminflect's lexicon only (no guess for an
    unknown word, as pyinflect, which paper 002's code used, does by default); None without."""
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=False)
    return forms[0] if forms else None


def lemma_of(token: Token) -> str:
    """A verb or noun lemma from lemminflect, falling back to spaCy's."""
    from lemminflect import getLemma

    upos = token.pos if token.pos in ("VERB", "AUX", "NOUN", "PROPN", "ADJ") else "VERB"
    lemmas = getLemma(token.text.lower(), upos=upos, lemmatize_oov=True)
    return lemmas[0] if lemmas else (token.lemma or token.text).lower()


# -- the paper-002 protocol ----------------------------------------------------------------------
#
# A perturbation that follows paper 002's public code differently from evalstress's default
# declares `paper_rule` (a sentence saying what changes) and reads `rule=paper` from its params;
# a suite with `protocol: paper` sets that param (see evalstress.suites).

RULES = ("default", "paper")


class PaperRule:
    """Mixin of perturbations with a paper-002 rule: what `rule=paper` changes, in one line."""

    PARAMS: ClassVar[Mapping[str, ParamKind]] = declare(rule=one_of(RULES))
    paper_rule: ClassVar[str] = ""

    def noise_units(self, ctx: PerturbContext) -> str:
        """Treebank tokens for a summary under the paper rule: the code measured its CNN/DM
        summaries, which were tokenized ("Burnley ." , "Tottenham 's"), word by word; its
        WikiText paragraphs and translations were plain text, as evalstress counts."""
        if follows_paper(self) and ctx.example.task == "summarization":
            return "treebank"
        return "words"


def follows_paper(perturbation: Any) -> bool:
    """Whether a perturbation runs under paper 002's rule (`rule=paper`) or evalstress's."""
    rule = str(perturbation.params.get("rule", "default"))
    if rule not in RULES:
        raise ValueError(f"perturbation '{perturbation.name}': rule '{rule}' is unknown; "
                         f"choose one of {', '.join(RULES)}")
    return rule == "paper"


def choose(candidates: Sequence[T], ratio: float, rng: random.Random, *,
           paper: bool) -> list[T]:
    """The units a ratio damages.

    evalstress: an exact count (`sample_count`, at least one) drawn without replacement.
    paper 002: each unit on its own with probability `ratio` (its code's per-token coin), so a
    text may come out unchanged: the paper protocol counts it at noise ratio 0.
    """
    if paper:
        return [c for c in candidates if rng.random() < ratio]
    return rng.sample(list(candidates), sample_count(len(candidates), ratio, rng))


def sentence_starts_after(parsed: ParsedText, drop: set[int],
                          replacements: Mapping[int, str] | None = None) -> dict[int, str]:
    """Replacements that upper-case the first kept token of each sentence once `drop` is gone.

    Paper 002 re-capitalises sentence starts after its deletions; the sentences of the original
    parse stand in for a re-parse of the damaged text (one parse per text, never per variant).
    """
    out = dict(replacements or {})
    for start, end in parsed.sentences:
        for i in range(start, end):
            if i in drop or not parsed.tokens[i].text.strip():
                continue
            text = out.get(i, parsed.tokens[i].text)
            out[i] = text[:1].upper() + text[1:]
            break
    return out


def whitespace_ceil(n: int, ratio: float) -> int:
    """Paper 002's count for token drop, repetition and local swap: ceil(n * ratio)."""
    return math.ceil(n * float(ratio))
