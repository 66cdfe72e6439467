"""What a rewrite may change besides the damage it was asked for, and what it may add.

An attack damages a span (a statement, an entity, a verb form, the whole text for a compression);
a rewrite that also rewords other sentences, brings in a fact nobody asked for, or comes wrapped
in the model's own comments is not that attack's test case. These checks bound it:

- `no-new-content`: content words the original does not use (other forms of its words aside);
  a compression or a reordering brings none;
- `no-new-entities`: names and numbers the original does not have;
- `no-new-relations`: names that one clause of the rewrite puts together, which no sentence of
  the original links (a merge that invents a link: "the vessel is funded by the foundation");
- `changed-sentences`: how many of the original's sentences may change at all;
- `local-edits`: every edit is a short replacement, insertion or deletion (a swap of words, not
  a rewritten passage);
- `not-only-negation`: the change is not just a negation added or removed (that is another
  attack);
- `rewords`: a compression rewords, not only deletes whole sentences or cuts the end off.

`commentary` (the model's remarks inside the answer) and `cut-off` (a text that stops
mid-sentence) apply to every attack; `llm_checks.validate` runs them first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from difflib import SequenceMatcher
from itertools import combinations
from typing import Any

from evalstress.core.text import ParsedText
from evalstress.perturb.checks_core import (
    NEGATIONS,
    CheckInput,
    check,
    content,
    dictionary_lemmas,
    names_and_numbers,
    normalized,
    present,
    sentences,
    stem,
    words,
)

_ENDINGS = ".!?…\"”’')]"
#: openings of an answer that talk about the rewrite instead of being it
_OPENERS = re.compile(
    r"^\W*(?:sure|certainly|of course|okay|ok|alright|absolutely|great)\b"
    r"|^\W*(?:here(?:'|’)?s|here is|here are|below is|this is)\b[^.:\n]{0,60}"
    r"\b(?:text|version|rewrite|summary|answer|result|story|ending)\b"
    r"|^\W*(?:the )?(?:rewritten|modified|changed|revised|edited|new|shortened|compressed|"
    r"negated|updated|altered) (?:text|version|summary|answer)\b"
    r"|^\W*i (?:have |'ve |’ve )?(?:made|changed|replaced|rewrote|rewritten|added|removed|"
    r"shortened|negated|swapped|introduced|inserted|moved|turned|put|kept|compressed)\b",
    re.IGNORECASE)
#: a closing remark: a note, a list of changes, an explanation
_CLOSERS = re.compile(
    r"^\W*(?:note|notes|changes?|changes made|explanation|edits?)\s*:"
    r"|^\W*\(?\s*i (?:have |'ve |’ve )?(?:made|changed|replaced|rewrote|added|removed|"
    r"shortened|negated|swapped|introduced|inserted|moved|turned|put|kept|compressed)\b"
    r"|^\W*(?:this|the) (?:rewrite|rewritten text|new version|change)\b",
    re.IGNORECASE)
#: an opening label ending in a colon that names what follows ("The inverted text:")
_LABEL = re.compile(r"^[^.!?:\n]{0,50}\b(?:text|version|rewrite|summary|answer|result|story)\b"
                    r"[^.!?:\n]{0,40}:", re.IGNORECASE)
_META = re.compile(r"</?\s*text\s*>|\b(?:original|rewritten|modified) (?:text|sentence|version)\b",
                   re.IGNORECASE)


def _pieces(text: str) -> list[str]:
    """A text's lines and sentences, where a remark would stand."""
    stripped = text.strip()
    return ([line.strip() for line in stripped.splitlines() if line.strip()] +
            re.split(r"(?<=[.!?])\s+", stripped))


def commentary(original: str, candidate: str) -> str | None:
    """The model's own remark inside the answer (an opening like "Here is the text:", a closing
    note, a mention of "the original text"), when no line or sentence of the original reads like
    one; else None."""
    lines = [p for p in candidate.strip().splitlines() if p.strip()]
    if not lines:
        return None  # an empty answer is refused as empty, not as a remark
    pieces, theirs = _pieces(candidate), _pieces(original)
    first, last = pieces[0], pieces[-1]
    checks = ((first, _OPENERS, "opens with a remark"), (lines[0], _OPENERS, "opens with a remark"),
              (last, _CLOSERS, "ends with a remark"), (lines[-1], _CLOSERS, "ends with a remark"),
              (first, _LABEL, "opens with a label"))
    for piece, pattern, what in checks:
        if pattern.search(piece) and not any(pattern.search(p) for p in theirs):
            return f"the answer {what} of the model's: {piece.strip()[:60]!r}"
    meta = _META.search(candidate)
    if meta and not _META.search(original):
        return f"the answer talks about the rewrite ({meta[0]!r})"
    return None


def cut_off(original: str, candidate: str) -> str | None:
    """A candidate that stops mid-sentence where the original ends a sentence; else None."""
    ends = original.rstrip()[-1:] in _ENDINGS
    if ends and candidate.rstrip()[-1:] not in _ENDINGS:
        return f"the text stops mid-sentence: {' '.join(candidate.split()[-6:])!r}"
    return None


def _forms(word: str) -> set[str]:
    return {word} | set(dictionary_lemmas(word))


def new_content_words(inp: CheckInput) -> list[str]:
    """Content words of the candidate that the original does not use in any form (same word,
    a shared lemma, a shared crude stem, or the same first 5 letters for longer words)."""
    old = {re.sub(r"['’]s$", "", w) for w in inp.old}
    old_forms = set().union(*(_forms(w) for w in old)) if old else set()
    old_forms |= {t.lemma.lower() for t in inp.original.tokens}
    stems = {w[:5] for w in old if len(w) >= 5}
    crude = {stem(w) for w in old}
    fresh = []
    for word in dict.fromkeys(content(inp.new)):
        word = re.sub(r"['’]s$", "", word)
        if word in old or _forms(word) & old_forms or stem(word) in crude:
            continue
        if len(word) >= 5 and word[:5] in stems:
            continue
        fresh.append(word)
    return fresh


@check("no-new-content", params=("max",),
       doc="at most `max` (0) content words that the original does not use in any form: a "
           "compression or a reordering brings no new content")
def _no_new_content(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    most = int(params.get("max", 0))
    fresh = new_content_words(inp)
    if len(fresh) <= most:
        return None
    return f"{len(fresh)} new content word(s) ({', '.join(fresh[:5])}); at most {most}"


@check("no-new-entities", needs_parse=True,
       doc="no name or number that the original does not have")
def _no_new_entities(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    came = sorted(e for e in names_and_numbers(inp.parsed) if not present(e, inp.old, set()))
    return f"brought in {', '.join(came[:3])}" if came else None


@check("changed-sentences", params=("max",), needs_parse=True,
       doc="at most `max` (1) of the original's sentences changed or lost; the others stay word "
           "for word")
def _changed_sentences(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    most = int(params.get("max", 1))
    old = [normalized(s) for s in sentences(inp.original)]
    new = [normalized(s) for s in sentences(inp.parsed)]
    kept = sum(b.size for b in SequenceMatcher(a=old, b=new, autojunk=False)
               .get_matching_blocks())
    changed = len(old) - kept
    if changed <= most:
        return None
    return f"{changed} of {len(old)} sentences changed (at most {most})"


@check("local-edits", params=("max_span", "max_insert", "max_delete", "max_growth"),
       doc="every edit is short: a replaced span of at most `max_span` (4) words on either "
           "side that grows by at most `max_growth` (no limit) words, insertions of at most "
           "`max_insert` (2) and deletions of at most `max_delete` (2) words; the rest of the "
           "text stays as it was")
def _local_edits(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    span = int(params.get("max_span", 4))
    insert, delete = int(params.get("max_insert", 2)), int(params.get("max_delete", 2))
    growth = params.get("max_growth")
    for tag, i1, i2, j1, j2 in inp.word_ops:
        old, new = inp.old[i1:i2], inp.new[j1:j2]
        if tag == "replace" and (len(old) > span or len(new) > span):
            return (f"a passage was rewritten ('{' '.join(old[:6])}' -> '{' '.join(new[:6])}'), "
                    f"not a swap of at most {span} words")
        if tag == "replace" and growth is not None and len(new) - len(old) > int(growth):
            return (f"'{' '.join(old)}' -> '{' '.join(new)}' grows by {len(new) - len(old)} "
                    f"words (at most {int(growth)}): more than a substitute")
        if tag == "insert" and len(new) > insert:
            return f"{len(new)} words inserted ('{' '.join(new[:6])}'), at most {insert}"
        if tag == "delete" and len(old) > delete:
            return f"{len(old)} words deleted ('{' '.join(old[:6])}'), at most {delete}"
    return None


@check("not-only-negation",
       doc="the change is more than a negation added or removed (that is the negation attack)")
def _not_only_negation(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    def plain(tokens: list[str]) -> list[str]:
        return [t for t in tokens if t not in NEGATIONS and not t.endswith("n't")]
    if plain(inp.old) == plain(inp.new):
        return "only a negation was added or removed"
    return None


@check("rewords", needs_parse=True,
       doc="a compression rewords: not only whole sentences deleted, nor the end cut off")
def _rewords(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    new_words = inp.new
    if new_words == inp.old[:len(new_words)]:
        return "the text was only cut short"
    old = {normalized(s) for s in sentences(inp.original)}
    new = [normalized(s) for s in sentences(inp.parsed)]
    if new and all(s in old for s in new):
        return "whole sentences were deleted, none compressed"
    return None



#: dependencies that start a clause of their own (a verb's arguments stay in its clause)
CLAUSE_STARTS = {"relcl", "advcl", "ccomp", "acl", "csubj", "parataxis", "xcomp"}


def _clauses(parsed: ParsedText) -> dict[int, set[int]]:
    """Token indices per clause (keyed by the clause's first verb or root); a relative clause
    also holds the noun it describes, since it states something about that noun."""
    tokens = parsed.tokens

    def starts(i: int) -> bool:
        token = tokens[i]
        return (token.dep in CLAUSE_STARTS or token.head == i or
                (token.dep == "conj" and token.pos in ("VERB", "AUX")))

    out: dict[int, set[int]] = {}
    for i in range(len(tokens)):
        j, steps = i, 0
        while not starts(j) and steps < len(tokens):
            j, steps = tokens[j].head, steps + 1
        out.setdefault(j, set()).add(i)
    for root, members in out.items():
        if tokens[root].dep == "relcl":
            noun = tokens[root].head
            members.add(noun)
            members.update(k for k, t in enumerate(tokens) if t.head == noun and
                           t.dep in ("compound", "flat", "nmod") and k != noun)
    return out


def _name_words(parsed: ParsedText, indices: set[int]) -> set[str]:
    return {parsed.tokens[i].text.lower() for i in indices if parsed.tokens[i].pos == "PROPN"}


@check("no-new-relations", needs_parse=True,
       doc="names that one clause of the rewrite puts together also stand together "
           "in one sentence of the original: a merge may join sentences, not invent a link "
           "between a name of one and a name of another")
def _no_new_relations(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    together = [set(words(s)) for s in sentences(inp.original)]
    old = set(inp.old)
    for members in _clauses(inp.parsed).values():
        names = sorted(n for n in _name_words(inp.parsed, members) if n in old)
        for a, b in combinations(names, 2):
            if not any(a in s and b in s for s in together):
                return f"'{a}' and '{b}' are joined in one clause, but no sentence of the " \
                       "original links them"
    return None


#: dependents that complete what a predicate states (its object, a passive subject, a complement)
_ARGUMENTS = {"dobj", "nsubjpass", "attr", "oprd", "dative", "acomp"}
_ARGUMENT_POS = {"NOUN", "PROPN", "ADJ"}


def _unrelated_words(inp: CheckInput) -> set[str]:
    """New content words of the candidate (`new_content_words`) that also share no WordNet sense
    with a content word of the original, nor are its antonym ("closed" restates "not open").
    Without WordNet installed, every new content word counts."""
    from evalstress.core import wordnet

    fresh = set(new_content_words(inp))
    if not fresh or not wordnet.available():
        return fresh
    known: set[str] = set()
    for token in inp.original.tokens:
        word = token.text.lower()
        if content([word]):
            known |= wordnet.senses_and_opposites(word) | wordnet.senses_and_opposites(
                token.lemma.lower())
    return {w for w in fresh if not wordnet.senses_and_opposites(w) & known}


def new_facts(inp: CheckInput) -> list[tuple[str, str]]:
    """(predicate, argument) pairs of the candidate's new sentences in which both words are
    unrelated to the original (`_unrelated_words`): a verb, or the complement of a copula, that
    the original does not use, stated of a noun or adjective it does not use either ("may cause
    a meteor shower", "won a design prize"). Sentences found word for word in the original are
    not read."""
    old = {normalized(s) for s in sentences(inp.original)}
    tokens = inp.parsed.tokens
    unrelated = _unrelated_words(inp)
    dependents: dict[int, list[int]] = {}
    for i, token in enumerate(tokens):
        if token.head != i:
            dependents.setdefault(token.head, []).append(i)
    found = []
    for start, end in inp.parsed.sentences:
        if normalized(" ".join(t.text for t in tokens[start:end])) in old:
            continue
        for i in range(start, end):
            token = tokens[i]
            predicate = token.pos == "VERB" or (token.dep in ("attr", "acomp") and
                                                token.pos in ("NOUN", "ADJ"))
            if not predicate or token.text.lower() not in unrelated:
                continue
            arguments = [k for k in dependents.get(i, []) if tokens[k].dep in _ARGUMENTS]
            for prep in (k for k in dependents.get(i, []) if tokens[k].dep in ("prep", "agent")):
                arguments += [k for k in dependents.get(prep, []) if tokens[k].dep == "pobj"]
            found += [(token.text, tokens[k].text) for k in arguments
                      if tokens[k].pos in _ARGUMENT_POS and tokens[k].text.lower() in unrelated]
    return found


@check("no-new-facts", needs_parse=True,
       doc="no new sentence states a new fact: no verb (or copula complement) that the original "
           "does not use, with an object or complement that it does not use either (a word "
           "sharing a WordNet sense with a word of the original, or its antonym, is not new)")
def _no_new_facts(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    found = new_facts(inp)
    if not found:
        return None
    pairs = ", ".join(f"'{p} ... {a}'" for p, a in found[:3])
    return f"a new sentence states something the text does not say ({pairs})"
