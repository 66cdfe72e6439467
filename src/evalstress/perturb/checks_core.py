"""The machinery of the rewrite checks: what a check sees, how it registers, and the text helpers
(words, content words, entities, word forms) that the checks of every concern share.

`llm_checks` is the face: it runs the checks (`validate`); the checks themselves live by concern
in `checks_attack` (the damage each attack promises) and `checks_scope` (what may change outside
the attacked span and what may be added).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cache, cached_property
from typing import Any

from evalstress.core.text import ParsedText, TextParser

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
PASSIVE_DEPS = {"nsubjpass", "auxpass", "csubjpass"}
CLAUSE_DEPS = {"relcl", "advcl", "ccomp", "acl", "csubj"}
NEGATIONS = {"not", "n't", "no", "never", "none", "nobody", "nothing", "neither", "nor",
             "nowhere", "without", "cannot", "hardly", "barely"}
CONNECTIVES = (
    "therefore", "thus", "hence", "consequently", "accordingly", "as a result", "so",
    "however", "nevertheless", "nonetheless", "but", "yet", "still", "even so", "instead",
    "moreover", "furthermore", "besides", "in addition", "also", "meanwhile", "then",
    "although", "though", "because", "since", "while", "whereas", "otherwise", "in contrast",
    "on the other hand", "for example", "in fact", "after all", "similarly", "likewise",
    "in other words", "above all", "finally", "first", "after that",
)
CONNECTIVE_PATTERN = re.compile(r"\b(" + "|".join(re.escape(c) for c in sorted(
    CONNECTIVES, key=len, reverse=True)) + r")\b")
ENTITY_POS = {"PROPN"}
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                 "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                 "seventeen", "eighteen", "nineteen", "twenty")
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90, "hundred": 100}
#: a number in digits <-> in words, both ways (0-20 and the tens), for "30" ~ "thirty"
NUMBER_FORMS = {**{w: str(i) for i, w in enumerate(_NUMBER_WORDS)},
                **{w: str(n) for w, n in _TENS.items()},
                **{str(i): w for i, w in enumerate(_NUMBER_WORDS)},
                **{str(n): w for w, n in _TENS.items()}}
NOUN_POS = {"NOUN", "PROPN"}


def words(text: str) -> list[str]:
    """Lower-cased word tokens without punctuation (contractions kept whole)."""
    return _WORD.findall(text.lower())


@cache
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def content(tokens: Sequence[str]) -> list[str]:
    stop = _stop_words()
    return [w for w in tokens if w not in stop and not w.isdigit()]


@dataclass(frozen=True)
class Rejection:
    """Why an answer is not accepted: a short stable category and a readable detail."""

    category: str
    detail: str

    def __str__(self) -> str:
        return f"{self.category}: {self.detail}"


@dataclass
class CheckInput:
    """An original (parsed) and a candidate rewrite; the candidate's parse is made on demand."""

    original: ParsedText
    candidate: str
    parser: TextParser
    _parsed: ParsedText | None = field(default=None, repr=False)

    @property
    def parsed(self) -> ParsedText:
        if self._parsed is None:
            self._parsed = self.parser.parse(self.candidate)
        return self._parsed

    @cached_property
    def old(self) -> list[str]:
        return words(self.original.text)

    @cached_property
    def new(self) -> list[str]:
        return words(self.candidate)

    @cached_property
    def word_ops(self) -> Sequence[tuple[str, int, int, int, int]]:
        """Word-level edits original -> candidate, computed once for every check that reads
        them."""
        return SequenceMatcher(a=self.old, b=self.new, autojunk=False).get_opcodes()

    def replaced_tokens(self) -> Iterator[tuple[list[Any], list[Any]]]:
        """(original tokens, candidate tokens) of each replaced span of the two parses,
        punctuation left out, words compared lower-cased."""
        old = [t for t in self.original.tokens if not t.is_punct and t.text.strip()]
        new = [t for t in self.parsed.tokens if not t.is_punct and t.text.strip()]
        ops = SequenceMatcher(a=[t.text.lower() for t in old], b=[t.text.lower() for t in new],
                              autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in ops:
            if tag == "replace":
                yield old[i1:i2], new[j1:j2]


CheckFn = Callable[[CheckInput, Mapping[str, Any]], str | None]


@dataclass(frozen=True)
class Check:
    fn: CheckFn
    params: tuple[str, ...] = ()
    needs_parse: bool = False  # the candidate's spaCy parse
    doc: str = ""


CHECKS: dict[str, Check] = {}


def check(name: str, *, params: tuple[str, ...] = (), needs_parse: bool = False,
          doc: str = "") -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        CHECKS[name] = Check(fn, params, needs_parse, doc)
        return fn
    return register


# --- helpers -----------------------------------------------------------------------------------


def kept_in_order(old: Sequence[str], new: Sequence[str]) -> float:
    """Share of the original's words found, in order, in the new text (longest common
    subsequence by difflib's matching blocks)."""
    if not old:
        return 1.0
    blocks = SequenceMatcher(a=list(old), b=list(new), autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks) / len(old)


def sentences(parsed: ParsedText) -> list[str]:
    return [s for s in parsed.sentence_texts() if words(s)]


def normalized(sentence: str) -> tuple[str, ...]:
    return tuple(words(sentence))


def name_text(parsed: ParsedText, start: int, end: int) -> str:
    """An entity's words that can be part of a name (capitalised or with a digit), lower-cased,
    a possessive 's left out: spaCy sometimes lets an unknown word into a name's span."""
    kept = [t.text for t in parsed.tokens[start:end]
            if t.text[:1].isupper() or any(c.isdigit() for c in t.text)]
    return " ".join(w for w in kept if w not in ("'s", "’s")).lower()


def entity_strings(parsed: ParsedText, nouns: bool = False) -> set[str]:
    """Named entities (spaCy's), proper nouns and numbers written with digits, lower-cased;
    with `nouns`, common-noun lemmas too."""
    out = {name for e in parsed.entities if words(name := name_text(parsed, e.start, e.end))}
    for token in parsed.tokens:
        if token.pos in ENTITY_POS or (token.pos == "NUM" and any(c.isdigit()
                                                                   for c in token.text)):
            out.add(token.text.lower())
        elif nouns and token.pos == "NOUN":
            out.add(token.lemma.lower())
    return out


def present(entity: str, text_words: Sequence[str], lemmas: set[str]) -> bool:
    """Whether a name or number is in a text's words (every word of a multi-word name, in any
    order; a number in digits or in words, 30 or thirty)."""
    parts = words(entity)
    if not parts:
        return True
    have = set(text_words)
    if len(parts) == 1:
        part = parts[0]
        return part in have or part in lemmas or NUMBER_FORMS.get(part, part) in have
    return set(parts) <= have



NAME_LABELS = {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART",
               "LAW", "LANGUAGE"}


def names_and_numbers(parsed: ParsedText) -> set[str]:
    """Names (spaCy's name-like entities and proper nouns) and numbers written with digits,
    lower-cased: the facts a rewrite of style must not touch."""
    out = {name for e in parsed.entities
           if e.label in NAME_LABELS and words(name := name_text(parsed, e.start, e.end))}
    out |= {t.text.lower() for t in parsed.tokens
            if t.pos == "PROPN" or (any(c.isdigit() for c in t.text) and words(t.text))}
    return out


def lemmas_of(parsed: ParsedText) -> dict[str, str]:
    """Word -> its lemma in this parse, lower-cased."""
    return {t.text.lower(): t.lemma.lower() for t in parsed.tokens}


@cache
def dictionary_lemmas(word: str) -> frozenset[str]:
    """Every lemma lemminflect knows for a word form (gave -> give), whatever its context."""
    from lemminflect import getAllLemmas

    return frozenset(lemma.lower() for lemmas in getAllLemmas(word).values() for lemma in lemmas)


def same_word(a: str, b: str, lemma_a: str = "", lemma_b: str = "") -> bool:
    """Two forms of one word: a shared lemma (parse or dictionary) or a shared 3-letter stem."""
    forms_a = {a, lemma_a} | dictionary_lemmas(a)
    forms_b = {b, lemma_b} | dictionary_lemmas(b)
    return bool(forms_a & forms_b - {""}) or a[:3] == b[:3]


def mean_zipf(tokens: Sequence[str]) -> float:
    """Mean wordfreq Zipf frequency of English words (higher: more common)."""
    from wordfreq import zipf_frequency

    return sum(zipf_frequency(w, "en") for w in tokens) / len(tokens)


def negation_cues(text: str) -> int:
    """How many negation words (not, never, no, n't, ...) a text has."""
    tokens = re.findall(r"n't|[^\W_]+", text.lower().replace("’", "'"))
    return sum(t in NEGATIONS for t in tokens)


def numbers(tokens: Sequence[str]) -> list[str]:
    """The number words and digit tokens among words (a changed amount is a changed fact)."""
    return [w for w in tokens if w in NUMBER_FORMS or w.isdigit()]


_SUFFIXES = ("ingly", "ly", "ies", "ied", "ing", "ed", "es", "er", "s", "y")


def stem(word: str) -> str:
    """A crude stem for matching word families (costly ~ cost, approval ~ approve): the word
    less one common suffix, kept to at least 3 letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
