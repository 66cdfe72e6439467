"""Reading a generated text out of a model's answer: delimited blocks, preambles, refusals.

Generators are asked to put their text between tags (`<text>...</text>`). Models do not always
comply: some wrap the text in a code fence, some open with "Sure, here is the rewritten text:",
some refuse. `extract_answer` returns the text or the reason there is none, so a caller can
re-ask or record a Skip instead of passing a preamble off as a perturbation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_REFUSAL = re.compile(
    r"^\s*(?:i\s*(?:'|’)?m\s+sorry|i\s+am\s+sorry|sorry,|i\s+(?:cannot|can\s*not|can(?:'|’)t|"
    r"won(?:'|’)t|will\s+not|am\s+unable|am\s+not\s+able)|as\s+an\s+ai\b|i\s+apologi[sz]e|"
    r"unfortunately,?\s+i)", re.IGNORECASE)
_PREAMBLE = re.compile(
    r"^\s*(?:sure|certainly|of course|okay|ok|here(?:'|’)?s|here is|here are|below is|"
    r"the (?:rewritten|modified|perturbed|revised|new|edited) (?:text|version|summary|answer))"
    r"[^\n]*?:\s*\n?", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Extracted:
    """The text found in an answer, or why there is none (`text` is None then)."""

    text: str | None
    reason: str = ""
    how: str = ""  # "tag", "fence", "plain"

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def category(self) -> str:
        """A short stable name for why there is no text (refusal, empty, cut-off, no-block),
        for counting rejections; "" when there is a text."""
        if self.ok:
            return ""
        if self.reason.startswith("refusal"):
            return "refusal"
        if "empty" in self.reason:
            return "empty"
        if "not closed" in self.reason:
            return "cut-off"
        return "no-block"


def _clean(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"“”'":
        text = text[1:-1].strip()
    if text[:1] == "“" and text[-1:] == "”":
        text = text[1:-1].strip()
    return text


def extract_answer(answer: str, tag: str = "text", *, require_tag: bool = False,
                   allow_unclosed: bool = False) -> Extracted:
    """The text inside the last complete `<tag>...</tag>` block; else a fenced block; else the
    answer with a leading preamble stripped. Refusals and empty answers have no text.

    `allow_unclosed` takes the text after an opening tag that is never closed (for answers the
    model ended on purpose, not ones cut off at the token limit: the caller knows which)."""
    raw = answer or ""
    opened = re.compile(rf"<\s*{re.escape(tag)}\s*>", re.IGNORECASE)
    closed = re.compile(rf"<\s*/\s*{re.escape(tag)}\s*>", re.IGNORECASE)
    blocks = re.findall(rf"<\s*{re.escape(tag)}\s*>(.*?)<\s*/\s*{re.escape(tag)}\s*>", raw,
                        re.IGNORECASE | re.DOTALL)
    if blocks:
        text = _clean(blocks[-1])
        if not text:
            return Extracted(None, f"the <{tag}> block is empty", "tag")
        if _REFUSAL.match(text):
            return Extracted(None, f"refusal: {text[:80]!r}", "tag")
        return Extracted(text, how="tag")
    if opened.search(raw) and not closed.search(raw):
        if allow_unclosed:
            text = _clean(raw[list(opened.finditer(raw))[-1].end():])
            if text and _REFUSAL.match(text):
                return Extracted(None, f"refusal: {text[:80]!r}", "unclosed")
            if text:
                return Extracted(text, how="unclosed")
        return Extracted(None, f"the <{tag}> block is not closed (answer cut off?)", "tag")
    if require_tag:
        shown = raw.strip().replace("\n", " ")[:80]
        return Extracted(None, f"no <{tag}> block in the answer: {shown!r}")
    if _REFUSAL.match(raw):
        return Extracted(None, f"refusal: {raw.strip()[:80]!r}")
    fenced = _FENCE.findall(raw)
    if fenced:
        text = _clean(fenced[-1])
        return Extracted(text, how="fence") if text else Extracted(
            None, "the fenced block is empty", "fence")
    text = _clean(_PREAMBLE.sub("", raw, count=1))
    if not text:
        return Extracted(None, "empty answer")
    return Extracted(text, how="plain")
