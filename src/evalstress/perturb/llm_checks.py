"""Is a generated rewrite the damage its attack promises? Cheap checks, each with a stable name.

A rewrite is rejected for the first failed check, and the check's name is the rejection
category counted in results.json. Every attack gets the generic checks: an unchanged text,
the model's own remarks inside the answer (`commentary`), a text that stops mid-sentence
(`cut-off`), a copied demonstration, and bounds on the word-level edit ratio, the length change
and the number of word edits (`too-different`, `too-similar`, `too-long`, `too-short`,
`too-many-edits`, `too-few-edits`). Attack files switch on named checks (`checks:`) of two
concerns: the damage the attack promises (`checks_attack`: `repeats-span`, `shortens`,
`entity-swap`, `appends-only`, ...) and what may change outside the attacked span or be added
(`checks_scope`: `no-new-content`, `no-new-entities`, `changed-sentences`, `local-edits`, ...).

`judge_answer` is the whole classifier (the answer read out of the model's reply, then
validated); `bench/bench_validators.py` measures its precision and recall per attack on the
labelled answers of `tests/perturb/labelled/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalstress.core.text import ParsedText, TextParser, noise_ratio, word_units
from evalstress.llm.extract import extract_answer
from evalstress.perturb import checks_attack as checks_attack
from evalstress.perturb.checks_core import (
    CHECKS,
    CheckInput,
    Rejection,
    entity_strings,
    kept_in_order,
    same_word,
    sentences,
    words,
)
from evalstress.perturb.checks_scope import commentary, cut_off

if TYPE_CHECKING:  # llm.py reads CHECKS while it registers the built-in attacks
    from evalstress.perturb.llm import Bounds, Resolved

__all__ = ["CHECKS", "CheckInput", "Rejection", "check_bounds", "checks_attack", "judge_answer",
           "kept_in_order", "needs_parse", "read_rewrite", "same_word", "unmet_requirement",
           "validate", "verifier_messages", "words"]


# --- requirements and the whole validation -----------------------------------------------------


def unmet_requirement(parsed: ParsedText, requires: Mapping[str, int]) -> str | None:
    """Why the text cannot take this attack at all (no call is made then), or None."""
    if "words" in requires and len(words(parsed.text)) < requires["words"]:
        return f"needs at least {requires['words']} words"
    if "sentences" in requires and len(sentences(parsed)) < requires["sentences"]:
        return f"needs at least {requires['sentences']} sentences, the text has " \
               f"{len(sentences(parsed))}"
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
    for category, test in (("commentary", commentary), ("cut-off", cut_off)):
        detail = test(original.text, candidate)
        if detail is not None:
            return Rejection(category, detail)
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


def read_rewrite(answer: str, finish_reason: str | None = "stop", *,
                 require_tag: bool = False) -> str | Rejection:
    """The candidate text in a generator's answer, or why the answer is no rewrite (a refusal,
    an empty or unclosed block, an answer cut off at the generator's max_tokens)."""
    ended = finish_reason != "length"  # the model stopped on its own
    got = extract_answer(answer, "text", require_tag=require_tag, allow_unclosed=ended)
    if got.text is None:
        return Rejection(got.category, got.reason)
    if not ended and got.how != "tag":
        return Rejection("cut-off", "the answer hit the generator's max_tokens")
    return got.text


def judge_answer(original: ParsedText, answer: str, resolved: Resolved, parser: TextParser, *,
                 finish_reason: str | None = "stop", require_tag: bool = False
                 ) -> Rejection | None:
    """The whole acceptance of one answer, as the generation stage decides it: read the text
    out of the answer, then validate it. None: accepted. (The bench measures this classifier
    on labelled answers.)"""
    text = read_rewrite(answer, finish_reason, require_tag=require_tag)
    if isinstance(text, Rejection):
        return text
    return validate(original, text, resolved, parser)


def verifier_messages(original: str, candidate: str, resolved: Resolved) -> list[dict[str, str]]:
    """The question put to the optional verifier model about an accepted rewrite."""
    return [
        {"role": "system", "content": "You check rewrites made to test text-quality "
                                      "evaluators. You answer yes or no."},
        {"role": "user", "content": (
            f"Original:\n<text>\n{original.strip()}\n</text>\n\n"
            f"Rewrite:\n<text>\n{candidate}\n</text>\n\n"
            f"The rewrite was meant to make this change: {resolved.instruction}\n\n"
            "Does the rewrite make this change, and no other kind of change? "
            "Answer with one word: yes or no.")},
    ]
