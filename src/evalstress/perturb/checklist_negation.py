"""Negation as paper 002's public code does it, for `negation` under `rule=paper`.

The code hands each sentence drawn to CheckList's `add_negation` (Ribeiro et al., 2020), whose
rules differ from evalstress's default: the auxiliaries can/could/do/have/should/will/would take
a contracted n't (has gone -> hasn't gone, will go -> won't go), a bare verb takes do-support
with n't (went -> didn't go), a gerund root a plain "not", and a sentence of fewer than three
tokens is left to the fallback. Where CheckList declines (no verbal root, a root already
negated, a question), the code falls back on string rules that mostly take a negation away
(did not go -> did go, never -> gone), so its "negation" also flips negative sentences.
"""

from __future__ import annotations

import random

from evalstress.core.text import ParsedText
from evalstress.perturb.common import lemma_of, match_case

#: auxiliaries CheckList contracts with n't; any other auxiliary gets "not" before the verb
CONTRACTING = frozenset({"can", "do", "could", "would", "will", "have", "should"})
#: forms of "be" that take "not" after them; others ("be", "been") take it before
NOT_AFTER = frozenset({"is", "was", "were", "am", "are", "'s", "'re", "'m", "’s", "’re", "’m"})
#: the code's fallback, tried in this order; the first whose pattern occurs rewrites every
#: occurrence in the sentence; a pattern of the last two is skipped when its negated form is
#: already there ("were not")
FALLBACK = ((" not ", " "), (" didn't ", " did "), (" don't ", " do "),
            (" doesn't ", " does "), (" cannot ", " can "), (" can't ", " can "),
            (" won't ", " will "), (" never ", " "), (" were ", " were not "),
            (" are ", " are not "))


def _contracted(text: str, lemma: str) -> str:
    """An auxiliary with n't: will -> won't, 've -> haven't, 'd -> hadn't / wouldn't, else the
    word without a final n plus n't (can -> can't, has -> hasn't)."""
    low = text.lower().replace("’", "'")
    if lemma == "will":
        word = "won't"
    elif low == "'ve":
        word = "haven't"
    elif low == "'d":
        word = "hadn't" if lemma == "have" else "wouldn't"
    else:
        return text.rstrip("n") + "n't"
    return match_case(word, text)


def sentence_edit(parsed: ParsedText, start: int, end: int) -> dict[int, str] | None:
    """CheckList's negation of one sentence as token replacements, or None where it declines."""
    tokens = parsed.tokens
    if end - start < 3:
        return None
    root = next((i for i in range(start, end) if tokens[i].dep == "ROOT"), None)
    if root is None:
        return None
    verb = tokens[root]
    question = any(tokens[i].text == "?" for i in range(start, end))
    if question and tokens[start].text.lower() == "how":
        return None
    lemma = verb.lemma.lower()
    if lemma in ("thank", "use") or verb.pos not in ("VERB", "AUX"):
        return None
    children = [i for i in range(start, end) if tokens[i].head == root and i != root]
    if any(tokens[i].dep == "neg" for i in children):
        return None
    if lemma == "be":
        if question:
            return None
        if verb.text.lower() in NOT_AFTER:
            return {root: f"{verb.text} not"}
        return {root: f"not {verb.text}"}
    aux = next((i for i in children if tokens[i].dep in ("aux", "auxpass")), None)
    if aux is not None:
        helper = tokens[aux]
        if helper.lemma.lower() not in CONTRACTING:
            return {root: f"not {verb.text}"}
        glued = aux > 0 and not tokens[aux - 1].ws  # I've -> I haven't
        return {aux: (" " if glued else "") + _contracted(helper.text, helper.lemma.lower())}
    if verb.tag == "VBG":
        return {root: f"not {verb.text}"}
    do = {"VBD": "did", "VBN": "did", "VBZ": "does"}.get(verb.tag, "do")
    negated = f"{do}n't {lemma_of(verb)}"
    return {root: match_case(negated, verb.text) if root == start else negated}


def fallback(sentence: str) -> str:
    """The code's string rule for a sentence CheckList declines (it may change nothing)."""
    for pattern, replacement in FALLBACK:
        if pattern not in sentence:
            continue
        if replacement.endswith(" not ") and replacement in sentence:
            continue  # "were not" is there already
        return sentence.replace(pattern, replacement)
    return sentence


def negate_sentences(parsed: ParsedText, ratio: float, rng: random.Random) -> str:
    """Each sentence drawn with probability `ratio`, negated by CheckList or the fallback; the
    sentences are joined by single spaces, as the code joins them."""
    edits = parsed.memo("checklist_negations", lambda p: [
        sentence_edit(p, s, e) for s, e in p.sentences])
    tokens = parsed.tokens
    out = []
    for (start, end), text, edit in zip(parsed.sentences, parsed.sentence_texts(), edits,
                                        strict=True):
        if not text:
            continue
        if rng.random() < ratio:
            if edit is None:
                text = fallback(text)
            else:
                pieces = list(parsed.pieces[start:end])
                for index, new in edit.items():
                    pieces[index - start] = new + tokens[index].ws
                text = "".join(pieces).strip()
        out.append(text)
    return " ".join(out)
