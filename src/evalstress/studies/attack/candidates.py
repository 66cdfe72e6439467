"""Reading candidates out of the generator's answers and keeping only usable ones."""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Sequence

from rapidfuzz.distance import LCSseq

from evalstress.llm.client import ChatResponse, LLMError
from evalstress.llm.extract import extract_answer

COPY_SHARE = 0.9  # a candidate holding this share of the source's words, in order, copies it


def _norm(text: str) -> list[str]:
    return text.lower().split()


def copies_source(text: str, source: str, share: float = COPY_SHARE) -> bool:
    """True when the candidate reproduces (nearly) the whole source: at least `share` of the
    source's words in their order. A summary quoting a sentence or two does not."""
    words = _norm(source)
    if not words:
        return False
    return LCSseq.similarity(words, _norm(text)) >= share * len(words)


def parsed_texts(answers: Sequence[ChatResponse | LLMError], *, rejections: Counter[str],
                 tag: str = "text") -> list[str]:
    """The texts the answers hold, in order, repeats included; an answer without one is counted
    by category (request-failed, refusal, empty, cut-off, no-block)."""
    out: list[str] = []
    for answer in answers:
        if isinstance(answer, LLMError):
            rejections["request-failed"] += 1
            continue
        found = extract_answer(answer.text, tag)
        if found.text is None:
            rejections[found.category] += 1
            continue
        out.append(found.text)
    return out


def new_texts(texts: Sequence[str], *, source: str, seen: Container[str],
              rejections: Counter[str]) -> list[str]:
    """The texts that are neither a copy of the source nor a repeat (of `seen` or of an earlier
    one here), in order; each rejection is counted (copy-of-source, duplicate)."""
    out: list[str] = []
    for text in texts:
        if copies_source(text, source):
            rejections["copy-of-source"] += 1
        elif text in seen or text in out:
            rejections["duplicate"] += 1
        else:
            out.append(text)
    return out

