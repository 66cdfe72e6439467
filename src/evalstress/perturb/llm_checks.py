"""Is a generated rewrite the damage its attack promises? Cheap checks, each with a stable name.

A rewrite is rejected for the first failed check, and the check's name is the rejection
category counted in results.json. The generic checks apply to every attack: bounds on the
word-level edit ratio, the length change and the number of word edits (`too-different`,
`too-similar`, `too-long`, `too-short`, `too-many-edits`, `too-few-edits`), an unchanged text,
and a copied demonstration. Attack files switch on attack-specific checks (`checks:`) such as
`repeats-span` (repetition really repeats), `shortens` (an abbreviation is shorter),
`entity-swap` (an entity of the parse is gone and a new one came), `appends-only` (a
continuation only appends) and `keeps-sentences` (sentence-level edits keep the other sentences).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from evalstress.core.text import ParsedText, TextParser, noise_ratio, word_units

if TYPE_CHECKING:  # llm.py reads CHECKS while it registers the built-in attacks
    from evalstress.perturb.llm import Bounds, Resolved

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
_CONNECTIVE = re.compile(r"\b(" + "|".join(re.escape(c) for c in sorted(
    CONNECTIVES, key=len, reverse=True)) + r")\b")
ENTITY_POS = {"PROPN"}
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


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def kept_in_order(old: Sequence[str], new: Sequence[str]) -> float:
    """Share of the original's words found, in order, in the new text (longest common
    subsequence by difflib's matching blocks)."""
    if not old:
        return 1.0
    blocks = SequenceMatcher(a=list(old), b=list(new), autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks) / len(old)


def _sentences(parsed: ParsedText) -> list[str]:
    return [s for s in parsed.sentence_texts() if words(s)]


def _norm(sentence: str) -> tuple[str, ...]:
    return tuple(words(sentence))


def entity_strings(parsed: ParsedText, nouns: bool = False) -> set[str]:
    """Named entities (spaCy's), proper nouns and numbers written with digits, lower-cased;
    with `nouns`, common-noun lemmas too."""
    out = {e.text.lower() for e in parsed.entities if words(e.text)}
    for token in parsed.tokens:
        if token.pos in ENTITY_POS or (token.pos == "NUM" and any(c.isdigit()
                                                                   for c in token.text)):
            out.add(token.text.lower())
        elif nouns and token.pos == "NOUN":
            out.add(token.lemma.lower())
    return out


def _present(entity: str, text_words: Sequence[str], lemmas: set[str]) -> bool:
    parts = words(entity)
    if not parts:
        return True
    if len(parts) == 1:
        return parts[0] in text_words or parts[0] in lemmas
    return set(parts) <= set(text_words)  # every word of a multi-word name, in any order


# --- attack-specific checks --------------------------------------------------------------------


@check("repeats-span", doc="a word or phrase of the text occurs more often than before")
def _repeats(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    old, new = inp.old, inp.new
    before, after = Counter(content(old)), Counter(content(new))
    if any(after[w] > n for w, n in before.items()):
        return None
    old2, new2 = _ngrams(old, 2), _ngrams(new, 2)
    if any(new2[g] > n for g, n in old2.items()):
        return None
    return "no word or phrase of the text occurs more often than before"


@check("keeps-original", params=("min",),
       doc="the original's words stay, in order (share >= min, default 0.85)")
def _keeps(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least = float(params.get("min", 0.85))
    share = kept_in_order(inp.old, inp.new)
    if share >= least:
        return None
    return f"keeps {share:.0%} of the original words in order (needs {least:.0%})"


@check("appends-only", params=("min_words",),
       doc="the original comes first, unchanged, and at least min_words (3) words follow")
def _appends(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    old, new = inp.old, inp.new
    least = int(params.get("min_words", 3))
    if new[:len(old)] != old:
        return "the original text was changed, not only continued"
    if len(new) - len(old) < least:
        return f"only {len(new) - len(old)} word(s) appended (needs {least})"
    return None


@check("inserts-inside", doc="new material goes inside the text, not only after its end")
def _inserts_inside(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    if any(tag in ("insert", "replace") and i1 < len(inp.old) and j2 > j1
           for tag, i1, _i2, j1, j2 in inp.word_ops):
        return None
    return "new material only after the end of the text (that is a continuation)"


@check("more-passive", needs_parse=True, doc="more passive constructions than the original")
def _passive(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    def count(parsed: ParsedText) -> int:
        return sum(t.dep in PASSIVE_DEPS for t in parsed.tokens)
    before, after = count(inp.original), count(inp.parsed)
    return None if after > before else f"passive constructions {before} -> {after}"


@check("same-words", params=("min",),
       doc="mostly the same words (multiset overlap >= min, default 0.8): moved or bent, not new")
def _same_words(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least = float(params.get("min", 0.8))
    old, new = Counter(inp.old), Counter(inp.new)
    total = max(sum(old.values()), sum(new.values()), 1)
    share = sum((old & new).values()) / total
    return None if share >= least else f"only {share:.0%} of the words are shared (needs " \
                                       f"{least:.0%})"


@check("new-connective", doc="a connective word or phrase was added or swapped for another")
def _connective(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    def found(text: str) -> Counter[str]:
        return Counter(_CONNECTIVE.findall(" ".join(words(text))))
    added = found(inp.candidate) - found(inp.original.text)
    return None if added else "no connective was added or changed"


@check("verb-form-changed", needs_parse=True,
       doc="some word was replaced by another form of itself (same lemma or stem)")
def _verb_form(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    for old, new in inp.replaced_tokens():
        for a in old:
            for b in new:
                x, y = a.text.lower(), b.text.lower()
                if x != y and x.isalpha() and y.isalpha() and same_word(
                        x, y, a.lemma.lower(), b.lemma.lower()):
                    return None
    return "no word was replaced by another form of the same word"


def _mean_zipf(words: Sequence[str]) -> float:
    """Mean wordfreq Zipf frequency of English words (higher: more common)."""
    from wordfreq import zipf_frequency

    return sum(zipf_frequency(w, "en") for w in words) / len(words)


@check("rarer-words", params=("margin",),
       doc="the words brought in are rarer than the ones they replace (wordfreq Zipf scale)")
def _rarer(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    margin = float(params.get("margin", 0.0))
    ops = inp.word_ops
    removed = [w for tag, i1, i2, _j1, _j2 in ops if tag in ("replace", "delete")
               for w in inp.old[i1:i2]]
    added = [w for tag, _i1, _i2, j1, j2 in ops if tag in ("replace", "insert")
             for w in inp.new[j1:j2]]
    removed, added = [w for w in removed if w.isalpha()], [w for w in added if w.isalpha()]
    if not removed or not added:
        return "no word was replaced"
    before, after = _mean_zipf(removed), _mean_zipf(added)
    if after < before - margin:
        return None
    return f"new words are not rarer (mean Zipf {before:.2f} -> {after:.2f})"


@check("more-clauses", needs_parse=True,
       doc="more subordinate clauses, or longer sentences (+20% words per sentence)")
def _clauses(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    def clauses(parsed: ParsedText) -> int:
        return sum(t.dep in CLAUSE_DEPS for t in parsed.tokens)

    def per_sentence(parsed: ParsedText) -> float:
        return len(words(parsed.text)) / max(1, len(_sentences(parsed)))
    before, after = clauses(inp.original), clauses(inp.parsed)
    if after > before or per_sentence(inp.parsed) >= 1.2 * per_sentence(inp.original):
        return None
    return f"subordinate clauses {before} -> {after} and sentences no longer"


@check("shortens", params=("min",), doc="at least `min` (default 0.15) of the words are gone")
def _shortens(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least = float(params.get("min", 0.15))
    old, new = len(inp.old), len(inp.new)
    if old and new <= (1 - least) * old:
        return None
    return f"{old} -> {new} words (needs at least {least:.0%} fewer)"


@check("nouns-replaced", needs_parse=True,
       doc="a noun of the original was replaced by another word (not another form of it)")
def _nouns(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    for old, new in inp.replaced_tokens():
        for noun in (t for t in old if t.pos in NOUN_POS):
            if not any(same_word(noun.text.lower(), t.text.lower(), noun.lemma.lower(),
                                 t.lemma.lower()) for t in new):
                return None
    return "no noun was replaced by another word"


@check("entity-swap", params=("min", "nouns"), needs_parse=True,
       doc="at least `min` (1) entities of the parse (names, proper nouns, numbers; with "
           "`nouns: true` common nouns too) are gone and a new one came in")
def _entity_swap(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least = int(params.get("min", 1))
    nouns = bool(params.get("nouns", False))
    new_words = inp.new
    new_lemmas = {t.lemma.lower() for t in inp.parsed.tokens}
    before = entity_strings(inp.original, nouns)
    gone = [e for e in before if not _present(e, new_words, new_lemmas)]
    old_words, old_lemmas = inp.old, {t.lemma.lower() for t in inp.original.tokens}
    came = [e for e in entity_strings(inp.parsed, nouns)
            if not _present(e, old_words, old_lemmas)]
    if len(gone) >= least and came:
        return None
    return f"{len(gone)} entit{'y' if len(gone) == 1 else 'ies'} replaced (needs {least}), " \
           f"{len(came)} new"


NAME_LABELS = {"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART",
               "LAW", "LANGUAGE"}


def names_and_numbers(parsed: ParsedText) -> set[str]:
    """Names (spaCy's name-like entities and proper nouns) and numbers written with digits,
    lower-cased: the facts a rewrite of style must not touch."""
    out = {e.text.lower() for e in parsed.entities if e.label in NAME_LABELS and words(e.text)}
    out |= {t.text.lower() for t in parsed.tokens
            if t.pos == "PROPN" or (any(c.isdigit() for c in t.text) and words(t.text))}
    return out


@check("keeps-entities", params=("new",), needs_parse=True,
       doc="every name and number of the original is still there, and (unless `new: true`) "
           "none came in: a change of style must not touch the facts")
def _keeps_entities(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    old_words, new_words = inp.old, inp.new
    gone = sorted(e for e in names_and_numbers(inp.original) if not _present(e, new_words, set()))
    if gone:
        return f"lost {', '.join(gone[:3])}"
    if not params.get("new", False):
        came = sorted(e for e in names_and_numbers(inp.parsed)
                      if not _present(e, old_words, set()))
        if came:
            return f"brought in {', '.join(came[:3])}"
    return None


@check("negation-changed", doc="a negation was added or removed")
def _negation(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    def cues(text: str) -> int:
        tokens = re.findall(r"n't|[^\W_]+", text.lower().replace("’", "'"))
        return sum(t in NEGATIONS for t in tokens)
    return None if cues(inp.candidate) != cues(inp.original.text) else \
        "no negation was added or removed"


@check("keeps-sentences", needs_parse=True,
       doc="every original sentence is still there, in order")
def _keeps_sentences(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    old = [_norm(s) for s in _sentences(inp.original)]
    new = [_norm(s) for s in _sentences(inp.parsed)]
    matched = sum(b.size for b in SequenceMatcher(a=old, b=new, autojunk=False)
                  .get_matching_blocks())
    if matched == len(old):
        return None
    return f"{len(old) - matched} of {len(old)} original sentences changed or lost"


@check("inserted-rewrites", params=("min", "overlap"), needs_parse=True,
       doc="at least `min` (1) new sentences, each a rewrite of the sentence before it "
           "(content-word overlap >= `overlap`, default 0.3)")
def _inserted(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least, overlap = int(params.get("min", 1)), float(params.get("overlap", 0.3))
    old = [_norm(s) for s in _sentences(inp.original)]
    new = [_norm(s) for s in _sentences(inp.parsed)]
    ops = SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    rewrites = 0
    for tag, i1, _i2, j1, j2 in ops:
        if tag != "insert" or i1 == 0:
            continue
        before = set(content(old[i1 - 1]))
        for sentence in new[j1:j2]:
            mine = set(content(sentence))
            if before and mine and len(before & mine) / len(before | mine) >= overlap \
                    and sentence != old[i1 - 1]:
                rewrites += 1
    if rewrites >= least:
        return None
    return f"{rewrites} inserted rewrite(s) of a preceding sentence (needs {least})"


@check("replaces-content",
       doc="a content word of the original was replaced by a different content word (not "
           "only dropped, not another form of it)")
def _replaces(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    ops = inp.word_ops
    for tag, i1, i2, j1, j2 in ops:
        if tag != "replace":
            continue
        removed, added = content(inp.old[i1:i2]), content(inp.new[j1:j2])
        if removed and any(not any(same_word(a, r) for r in removed) for a in added):
            return None
    return "no content word of the original was replaced by a different one"


def _lemmas(parsed: ParsedText) -> dict[str, str]:
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


@check("form-only-edits", needs_parse=True,
       doc="edits only bend words (another form of the same lemma) or touch function words: "
           "no new content word, no negation added or removed")
def _form_only(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    if _negation(inp, {}) is None:
        return "a negation was added or removed: that changes the meaning"
    old_lemma, new_lemma = _lemmas(inp.original), _lemmas(inp.parsed)
    ops = inp.word_ops
    for tag, i1, i2, j1, j2 in ops:
        if tag not in ("replace", "insert"):
            continue
        removed = inp.old[i1:i2]
        for word in content(inp.new[j1:j2]):
            if not any(same_word(word, r, new_lemma.get(word, ""), old_lemma.get(r, ""))
                       for r in removed):
                return f"'{word}' is a new word, not another form of one that was there"
    return None


@check("commoner-words", params=("margin",),
       doc="the words brought in are more common (more general) than the ones they replace")
def _commoner(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    margin = float(params.get("margin", 0.0))
    ops = inp.word_ops
    removed = [w for tag, i1, i2, _j1, _j2 in ops if tag == "replace"
               for w in inp.old[i1:i2] if w.isalpha()]
    added = [w for tag, _i1, _i2, j1, j2 in ops if tag == "replace"
             for w in inp.new[j1:j2] if w.isalpha()]
    if not removed or not added:
        return "no word was replaced"
    before, after = _mean_zipf(removed), _mean_zipf(added)
    if after > before + margin:
        return None
    return f"new words are not more common (mean Zipf {before:.2f} -> {after:.2f})"


@check("adds-new-content", params=("min",),
       doc="at least `min` (2) content words that the original does not use were added")
def _adds_new(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least = int(params.get("min", 2))
    known = set(inp.old)
    fresh = {w for w in content(inp.new) if w not in known}
    if len(fresh) >= least:
        return None
    return f"{len(fresh)} new content word(s) added (needs {least})"


@check("few-new-words", params=("max",),
       doc="at most `max` (1) content words that the original does not use were added, "
           "connectives aside")
def _few_new(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    most = int(params.get("max", 1))
    known = set(inp.old) | {w for phrase in CONNECTIVES for w in phrase.split()}
    fresh = sorted({w for w in content(inp.new) if w not in known})
    if len(fresh) <= most:
        return None
    return f"{len(fresh)} new content words ({', '.join(fresh[:5])}): more than the change needs"


@check("same-content", params=("min",),
       doc="most content words of the original are still there (share >= min, default 0.7)")
def _same_content(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least = float(params.get("min", 0.7))
    old = content(inp.old)
    if not old:
        return None
    have = {w[:4] for w in inp.new}
    share = sum(w[:4] in have for w in old) / len(old)
    if share >= least:
        return None
    return f"only {share:.0%} of the original's content words remain (needs {least:.0%})"


@check("reorders", params=("max_in_order",),
       doc="words were moved: at most `max_in_order` (0.92) of them keep their order")
def _reorders(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    most = float(params.get("max_in_order", 0.92))
    share = kept_in_order(inp.old, inp.new)
    if share <= most:
        return None
    return f"{share:.0%} of the words keep their order: nothing was really moved"


# --- requirements and the whole validation -----------------------------------------------------


def unmet_requirement(parsed: ParsedText, requires: Mapping[str, int]) -> str | None:
    """Why the text cannot take this attack at all (no call is made then), or None."""
    if "words" in requires and len(words(parsed.text)) < requires["words"]:
        return f"needs at least {requires['words']} words"
    if "sentences" in requires and len(_sentences(parsed)) < requires["sentences"]:
        return f"needs at least {requires['sentences']} sentences, the text has " \
               f"{len(_sentences(parsed))}"
    if "entities" in requires:
        found = len(entity_strings(parsed))
        if found < requires["entities"]:
            return f"needs at least {requires['entities']} named entit" \
                   f"{'y' if requires['entities'] == 1 else 'ies'} (names, places, numbers), " \
                   f"the text has {found}"
    return None


def _bound(value: float, pair: tuple[float | None, float | None], low: str, high: str,
           what: str, fmt: str = ".2f") -> Rejection | None:
    lo, hi = pair
    if lo is not None and value < lo:
        return Rejection(low, f"{what} {value:{fmt}} is below {lo:{fmt}}")
    if hi is not None and value > hi:
        return Rejection(high, f"{what} {value:{fmt}} is above {hi:{fmt}}")
    return None


def check_bounds(original: str, candidate: str, bounds: Bounds) -> Rejection | None:
    old, new = word_units(original), word_units(candidate)
    ratio = noise_ratio(original, candidate)
    change = (len(new) - len(old)) / max(1, len(old))
    edits = ratio * len(old)
    return (_bound(change, bounds.length_change, "too-short", "too-long", "length change")
            or _bound(ratio, bounds.edit_ratio, "too-similar", "too-different", "edit ratio")
            or _bound(edits, bounds.edits, "too-few-edits", "too-many-edits", "word edits", ".0f"))


def validate(original: ParsedText, candidate: str, resolved: Resolved,
             parser: TextParser) -> Rejection | None:
    """The first reason to reject `candidate` as this attack's rewrite of `original`, or None."""
    if words(candidate) == words(original.text):
        return Rejection("unchanged", "the answer repeats the text (punctuation aside)")
    flat = " ".join(candidate.split())
    for demo in resolved.demonstrations:
        if flat in (" ".join(demo.perturbed.split()), " ".join(demo.original.split())):
            return Rejection("copied-demonstration", "the answer is a demonstration's text")
    rejection = check_bounds(original.text, candidate, resolved.bounds)
    if rejection is not None:
        return rejection
    inp = CheckInput(original, candidate, parser)
    for name, params in resolved.checks.items():
        detail = CHECKS[name].fn(inp, params or {})
        if detail is not None:
            return Rejection(name, detail)
    return None


def needs_parse(resolved: Resolved) -> bool:
    return any(CHECKS[name].needs_parse for name in resolved.checks)
