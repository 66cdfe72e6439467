"""Which family a model belongs to, read from its name alone.

A judge that rates texts written by a model of its own family may favour them (self-preference),
so a card warns when the judge and the generator, or the gold evaluator, share one. The family is
read from the name with one rule, stated in FAMILY_RULE:

1. take the last part of the name (after any `/` of a hub path, `.gguf` dropped), lower-cased;
2. split it into tokens at `-`, `_`, `.`, `:` and spaces;
3. the first token that starts with a known family name (KNOWN) gives that family
   (`Meta-Llama-3-8B` -> llama, `Qwen2.5-7B-Instruct` -> qwen, `SmolLM2-135M` -> smollm);
4. else the letters the first token starts with, before any digit (`gpt-4o-mini` -> gpt,
   `olmo2-7b` -> olmo); None when it starts with none (a bare number or path).

Names of one family but other sizes or versions (gpt-4o and gpt-4.1, llama-3 and llama-3.1)
share a family: that is the point, as they share training data and style.
"""

from __future__ import annotations

import re

#: the families the rule knows by name, longest first where one starts another
KNOWN = ("deepseek", "smollm", "claude", "mistral", "mixtral", "gemini", "gemma", "llama", "qwen",
         "phi", "gpt")
FAMILY_RULE = ("the family is the first token of the model's name (its last path part, "
               "lower-cased, split at - _ . : and spaces) that starts with a known family ("
               + ", ".join(KNOWN) + "), else the letters before the first digit of its first "
               "token")
_TOKENS = re.compile(r"[-_.:\s]+")
_LEADING = re.compile(r"[a-z]+")


def model_family(name: str | None) -> str | None:
    """The family of a model name by FAMILY_RULE; None when the name gives none."""
    if not name:
        return None
    last = str(name).strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    last = last.removesuffix(".gguf")
    tokens = [t for t in _TOKENS.split(last) if t]
    for token in tokens:
        for family in KNOWN:
            if token.startswith(family):
                return family
    match = _LEADING.match(tokens[0]) if tokens else None
    return match.group(0) if match else None


def shared_family(judge: str | None, other: str | None) -> str | None:
    """The family two model names share, else None."""
    mine = model_family(judge)
    return mine if mine is not None and mine == model_family(other) else None
