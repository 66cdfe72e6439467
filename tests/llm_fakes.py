"""Scripted answers for the fake OpenAI server: read the text a generation request asks about."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalstress.llm.fake_server import Reply
from evalstress.perturb.labelled import load_labelled
from evalstress.perturb.llm import builtin_attacks

#: the tuning set of labelled replies (tests/perturb/labelled/)
LABELLED = Path(__file__).resolve().parent / "perturb" / "labelled"

_BLOCK = re.compile(r"<text>\n(.*?)\n</text>", re.DOTALL)


def asked(request: dict[str, Any]) -> str:
    """The text the last user turn asks the model to change."""
    return _BLOCK.findall(request["messages"][-1]["content"])[-1]


def is_verifier(request: dict[str, Any]) -> bool:
    """A question of the verifier (perturb/verifier.py), not a request for a rewrite."""
    return "Answer with one word: yes or no." in request["messages"][-1]["content"]


def labelled_originals() -> dict[str, tuple[str, str]]:
    """The tuning set's originals: key -> (task, text)."""
    return {a.original: (a.task, a.text) for answers in load_labelled(LABELLED).values()
            for a in answers}


def labelled_writer() -> Callable[[dict[str, Any]], Reply]:
    """A model that answers each attack (and severity) with a correct reply of the tuning set
    for the text it is asked about, or a refusal where the set has none."""
    cases = load_labelled(LABELLED)
    attacks = {spec.resolve(level).instruction: (name, level)
               for name, spec in builtin_attacks().items() for level in spec.grid}

    def reply(request: dict[str, Any]) -> Reply:
        system = request["messages"][0]["content"]
        name, level = next(v for k, v in attacks.items() if f"The change: {k}\n" in system)
        text = " ".join(asked(request).split())
        for case in cases.get(name, []):
            if case.correct and case.level in (level, None) and case.text == text:
                return Reply(case.answer)
        return Reply("I cannot help with that.")

    return reply


def continue_with(sentence: str = "Everyone agreed to meet again the next week."
                  ) -> Callable[[dict[str, Any]], Reply]:
    """A model that continues every text correctly (what the continuation attack wants)."""
    return lambda request: Reply(f"<text>\n{asked(request)} {sentence}\n</text>")


def answer(content: Callable[[str], str]) -> Callable[[dict[str, Any]], Reply]:
    """A model whose answer is a function of the text it was asked about."""
    return lambda request: Reply(content(asked(request)))
