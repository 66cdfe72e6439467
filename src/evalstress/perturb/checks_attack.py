"""What each attack must do to the text: the damage it promises (repetition repeats, an
abbreviation is shorter, an entity swap swaps an entity, a continuation only appends, ...).

Checks register by name (`checks_core.check`); attack files switch them on under `checks:`. What
may change outside the attacked span, and what may be added, is `checks_scope`'s concern.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any

from evalstress.core.text import ParsedText
from evalstress.perturb.checks_core import (
    CLAUSE_DEPS,
    CONNECTIVE_PATTERN,
    CONNECTIVES,
    NOUN_POS,
    PASSIVE_DEPS,
    CheckInput,
    check,
    content,
    entity_strings,
    kept_in_order,
    lemmas_of,
    mean_zipf,
    names_and_numbers,
    negation_cues,
    normalized,
    numbers,
    present,
    same_word,
    sentences,
    stem,
    words,
)


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))



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
        return Counter(CONNECTIVE_PATTERN.findall(" ".join(words(text))))
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
    before, after = mean_zipf(removed), mean_zipf(added)
    if after < before - margin:
        return None
    return f"new words are not rarer (mean Zipf {before:.2f} -> {after:.2f})"


@check("more-clauses", needs_parse=True,
       doc="more subordinate clauses, or longer sentences (+20% words per sentence)")
def _clauses(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    def clauses(parsed: ParsedText) -> int:
        return sum(t.dep in CLAUSE_DEPS for t in parsed.tokens)

    def per_sentence(parsed: ParsedText) -> float:
        return len(words(parsed.text)) / max(1, len(sentences(parsed)))
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
    gone = [e for e in before if not present(e, new_words, new_lemmas)]
    old_words, old_lemmas = inp.old, {t.lemma.lower() for t in inp.original.tokens}
    came = [e for e in entity_strings(inp.parsed, nouns)
            if not present(e, old_words, old_lemmas)]
    if len(gone) >= least and came:
        return None
    return f"{len(gone)} entit{'y' if len(gone) == 1 else 'ies'} replaced (needs {least}), " \
           f"{len(came)} new"


@check("keeps-entities", params=("new",), needs_parse=True,
       doc="every name and number of the original is still there, and (unless `new: true`) "
           "none came in: a change of style must not touch the facts")
def _keeps_entities(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    old_words, new_words = inp.old, inp.new
    gone = sorted(e for e in names_and_numbers(inp.original) if not present(e, new_words, set()))
    if gone:
        return f"lost {', '.join(gone[:3])}"
    if not params.get("new", False):
        came = sorted(e for e in names_and_numbers(inp.parsed)
                      if not present(e, old_words, set()))
        if came:
            return f"brought in {', '.join(came[:3])}"
    return None


@check("negation-changed", params=("max",),
       doc="a negation was added or removed, and at most `max` (default: any number) of them: "
           "one statement negated is one negation more or less")
def _negation(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    change = abs(negation_cues(inp.candidate) - negation_cues(inp.original.text))
    if change == 0:
        return "no negation was added or removed"
    most = params.get("max")
    if most is not None and change > int(most):
        return f"{change} negations added or removed (at most {int(most)}: one statement)"
    return None


@check("keeps-sentences", needs_parse=True,
       doc="every original sentence is still there, in order")
def _keeps_sentences(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    old = [normalized(s) for s in sentences(inp.original)]
    new = [normalized(s) for s in sentences(inp.parsed)]
    matched = sum(b.size for b in SequenceMatcher(a=old, b=new, autojunk=False)
                  .get_matching_blocks())
    if matched == len(old):
        return None
    return f"{len(old) - matched} of {len(old)} original sentences changed or lost"


@check("inserted-rewrites", params=("min", "overlap"), needs_parse=True,
       doc="at least `min` (1) new sentences, each a rewrite of the sentence before it "
           "(it carries at least `overlap`, default 0.3, of that sentence's content-word stems)")
def _inserted(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    least, overlap = int(params.get("min", 1)), float(params.get("overlap", 0.3))
    old = [normalized(s) for s in sentences(inp.original)]
    new = [normalized(s) for s in sentences(inp.parsed)]
    ops = SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    rewrites = 0
    for tag, i1, _i2, j1, j2 in ops:
        if tag != "insert" or i1 == 0:
            continue
        before = {stem(w) for w in content(old[i1 - 1])}
        for sentence in new[j1:j2]:
            mine = {stem(w) for w in content(sentence)}
            if before and mine and len(before & mine) / len(before) >= overlap \
                    and sentence != old[i1 - 1]:
                rewrites += 1
    if rewrites >= least:
        return None
    return f"{rewrites} inserted rewrite(s) of a preceding sentence (needs {least})"


@check("replaces-content",
       doc="a content word (or a number) of the original was replaced by a different one (not "
           "only dropped, not another form of it)")
def _replaces(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    ops = inp.word_ops
    for tag, i1, i2, j1, j2 in ops:
        if tag != "replace":
            continue
        old, new = inp.old[i1:i2], inp.new[j1:j2]
        removed, added = content(old) + numbers(old), content(new) + numbers(new)
        if removed and any(not any(same_word(a, r) for r in removed) for a in added):
            return None
    return "no content word of the original was replaced by a different one"


@check("form-only-edits", needs_parse=True,
       doc="edits only bend words (another form of the same lemma) or touch function words: "
           "no new content word, no negation added or removed")
def _form_only(inp: CheckInput, params: Mapping[str, Any]) -> str | None:
    if _negation(inp, {}) is None:
        return "a negation was added or removed: that changes the meaning"
    old_lemma, new_lemma = lemmas_of(inp.original), lemmas_of(inp.parsed)
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
    before, after = mean_zipf(removed), mean_zipf(added)
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
