"""The judge's identity on its card: the warning when the judge shares a model family with the
generator or the gold evaluator, and what changed between two cards' judges.

The identity record itself is made where the judge has answered (`evaluators.judge_identity`,
by the consistency method); the family rule is `core.family.FAMILY_RULE`. Endpoints are compared
by their name in cache keys (`llm.identity`): a local server's port changes on every start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from evalstress.core.family import shared_family
from evalstress.evaluators.base import parse_spec
from evalstress.llm.generate import generator_params

#: the identity entries `evalstress compare` names when they differ, with their words
COMPARED = (("served", "judge model"), ("model", "judge model asked"),
            ("prompt_sha256", "judge prompt"), ("contract_sha256", "judge output contract"),
            ("endpoint", "judge endpoint"))


def judge_model(spec: str | None) -> str | None:
    """The model a judge spec asks for (model=, else $EVALSTRESS_JUDGE_MODEL); None for a
    spec of another evaluator, or none given."""
    if not spec:
        return None
    try:
        name, params = parse_spec(spec)
    except ValueError:
        return None
    if name != "judge":
        return None
    return str(params.get("model") or os.environ.get("EVALSTRESS_JUDGE_MODEL") or "") or None


def generator_model(spec: str | None) -> str | None:
    """The model a generator spec asks for."""
    if not spec:
        return None
    try:
        model = generator_params(spec).get("model")
    except ValueError:
        return None
    return str(model) if model else None


def family_warnings(spec: str, gold: str | None, generator: str | None) -> list[str]:
    """One line per role (generator, gold) whose model shares the judge's family."""
    judge = judge_model(spec)
    if judge is None:
        return []
    lines = []
    for role, other in (("generator", generator_model(generator)),
                        ("gold evaluator", judge_model(gold))):
        family = shared_family(judge, other)
        if family is not None:
            lines.append(f"the judge ({judge}) and the {role} ({other}) are both of the "
                         f"{family} family (read from their names; docs/judges.md, "
                         f"\"Identity\"): a judge may favour its own family's texts and "
                         f"judgements, so results that pit the two may lean that way")
    return lines


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none named"
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    return "none" if value is None else str(value)


def identity_changes(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """What differs between two cards' judge identities, one line each ("judge model changed:
    gpt-4o-mini-2024-07-18 → gpt-4o-mini-2025-01-31"); nothing when either card has none."""
    a = (first.get("evaluator") or {}).get("identity") or {}
    b = (second.get("evaluator") or {}).get("identity") or {}
    if not a or not b:
        return []
    lines = [f"{words} changed: {_shown(a.get(key))} → {_shown(b.get(key))}"
             for key, words in COMPARED if a.get(key) != b.get(key)]
    sa, sb = a.get("sampling") or {}, b.get("sampling") or {}
    lines += [f"judge {key} changed: {_shown(sa.get(key))} → {_shown(sb.get(key))}"
              for key in sorted(set(sa) | set(sb)) if sa.get(key) != sb.get(key)]
    return lines
