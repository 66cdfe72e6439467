"""The questions a verifier model is asked about an accepted rewrite, and how its answers decide.

A verifier (`--verifier SPEC`) is a second chat model that checks what the acceptance checks
cannot see: meaning. Each question wants one word, yes or no: an in-process model (`model=local`
or a .gguf file) is held to it by a grammar (`GRAMMAR`), an HTTP endpoint by the instruction (the
first yes or no of its answer counts, `read_verdict`). Two attacks get questions of their own,
for the two failures their checks are known to miss:

- `uncommon-phrase`: every sentence the rewrite changed must say what the original sentence
  said, asked both ways (does the original entail the rewrite, and the rewrite the original?).
  A rare word of another meaning breaks one direction at least.
- `rewriting-and-insertion`: every sentence the rewrite inserted must be entailed by the
  original text: a restatement that slips in a fact of its own is not.

Every other attack gets one question: does the rewrite make the attack's change, and no other
(`llm_checks.verifier_messages`). The rewrite passes when every answer is yes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from evalstress.core.text import TextParser
from evalstress.perturb.checks_core import normalized, sentences
from evalstress.perturb.llm import Resolved
from evalstress.perturb.llm_checks import verifier_messages

#: a GBNF grammar that lets a constrained model say only yes or no
GRAMMAR = 'root ::= "yes" | "no"\n'
#: the attacks with questions of their own, and what they check
QUESTIONS = {"uncommon-phrase": "each changed sentence means the same, both ways",
             "rewriting-and-insertion": "each inserted sentence is entailed by the original"}

Messages = list[dict[str, str]]

_VERDICT = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def read_verdict(text: str) -> bool | None:
    """yes -> True, no -> False, from the first yes/no word of the answer; None if neither."""
    match = _VERDICT.search(text or "")
    return None if match is None else match[1].lower() == "yes"


def decide(answers: Sequence[str]) -> bool | None:
    """The verdict on a rewrite from the answers to its questions: False at the first no, None
    when an answer holds neither word (and none said no), True when all said yes."""
    verdicts = [read_verdict(a) for a in answers]
    if False in verdicts:
        return False
    return None if None in verdicts else True


def _entails(premise: str, hypothesis: str) -> Messages:
    return [
        {"role": "system", "content": "You compare two sentences. You answer yes or no."},
        {"role": "user", "content": (
            f"Sentence A: {premise}\nSentence B: {hypothesis}\n\n"
            "If sentence A is true, must sentence B be true as well, with the same people "
            "doing the same things? Answer with one word: yes or no.")},
    ]


def _supported(original: str, sentence: str) -> Messages:
    return [
        {"role": "system", "content": "You check whether a text supports a sentence. You answer "
                                      "yes or no."},
        {"role": "user", "content": (
            f"Text: {original.strip()}\n\nNew sentence: {sentence}\n\n"
            "Does the text already say everything the new sentence says, with no fact, detail, "
            "reason or comparison of its own? Answer with one word: yes or no.")},
    ]


def _sentence_ops(original: str, candidate: str, parser: TextParser
                  ) -> tuple[list[str], list[str], Sequence[tuple[str, int, int, int, int]]]:
    old = sentences(parser.parse(original))
    new = sentences(parser.parse(candidate))
    ops = SequenceMatcher(a=[normalized(s) for s in old], b=[normalized(s) for s in new],
                          autojunk=False).get_opcodes()
    return old, new, ops


def changed_sentences(original: str, candidate: str, parser: TextParser
                      ) -> list[tuple[str, str]]:
    """(original, rewritten) pairs of the sentences a rewrite changed; a changed span whose
    sentence count differs is one pair of the joined sentences."""
    old, new, ops = _sentence_ops(original, candidate, parser)
    pairs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            pairs.extend(zip(old[i1:i2], new[j1:j2], strict=True))
        else:
            pairs.append((" ".join(old[i1:i2]), " ".join(new[j1:j2])))
    return pairs


def inserted_sentences(original: str, candidate: str, parser: TextParser) -> list[str]:
    """The sentences of the rewrite that are not sentences of the original."""
    _old, new, ops = _sentence_ops(original, candidate, parser)
    return [s for tag, _i1, _i2, j1, j2 in ops if tag in ("insert", "replace")
            for s in new[j1:j2]]


def verifier_questions(attack: str, original: str, candidate: str, resolved: Resolved,
                       parser: TextParser) -> list[Messages]:
    """The questions put to the verifier about one accepted rewrite (see the module
    docstring); never empty."""
    questions: list[Messages] = []
    if attack == "uncommon-phrase":
        for before, after in changed_sentences(original, candidate, parser):
            if before and after:
                questions += [_entails(before, after), _entails(after, before)]
            else:  # a sentence gone or come: the whole texts must mean the same
                questions += [_entails(original.strip(), candidate.strip()),
                              _entails(candidate.strip(), original.strip())]
    elif attack == "rewriting-and-insertion":
        questions = [_supported(original, s)
                     for s in inserted_sentences(original, candidate, parser)]
    return questions or [verifier_messages(original, candidate, resolved)]
