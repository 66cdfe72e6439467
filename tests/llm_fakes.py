"""Scripted answers for the fake OpenAI server: read the text a generation request asks about."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from evalstress.llm.fake_server import Reply

_BLOCK = re.compile(r"<text>\n(.*?)\n</text>", re.DOTALL)


def asked(request: dict[str, Any]) -> str:
    """The text the last user turn asks the model to change."""
    return _BLOCK.findall(request["messages"][-1]["content"])[-1]


def is_verifier(request: dict[str, Any]) -> bool:
    return "Does the rewrite make this change" in request["messages"][-1]["content"]


def continue_with(sentence: str = "Everyone agreed to meet again the next week."
                  ) -> Callable[[dict[str, Any]], Reply]:
    """A model that continues every text correctly (what the continuation attack wants)."""
    return lambda request: Reply(f"<text>\n{asked(request)} {sentence}\n</text>")


def answer(content: Callable[[str], str]) -> Callable[[dict[str, Any]], Reply]:
    """A model whose answer is a function of the text it was asked about."""
    return lambda request: Reply(content(asked(request)))
