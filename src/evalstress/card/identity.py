"""The judge's identity on its card: the warning when the judge shares a model family with the
generator or the gold evaluator, and what changed between two cards' judges.

The identity record itself (`evaluators.judge_identity`) is made before any method runs, from
the judge as the spec builds it (no judging request is sent), and completed with the model names the
answers gave once any method has asked the judge (`completed_identity`); the family rule is
`core.family.FAMILY_RULE`. Endpoints are compared
by their name in cache keys (`llm.identity`): a local server's port changes on every start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
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


def planned_identity(spec: str) -> dict[str, Any] | None:
    """A judge's identity before it has answered: the model asked, the endpoint without credentials and
    its cache-key name, the prompt and contract digests, the sampling settings and the
    version, read from the judge the spec builds (no request is sent; `served` stays empty
    until it has answered). None for an evaluator that is no judge."""
    from evalstress.evaluators.base import create_evaluator
    from evalstress.evaluators.judge import JudgeEvaluator
    from evalstress.evaluators.judge_identity import judge_identity

    if judge_model(spec) is None and parse_spec(spec)[0] != "judge":
        return None
    made = create_evaluator(spec)
    try:
        return judge_identity(made) if isinstance(made, JudgeEvaluator) else None
    finally:
        made.close()


def answered_models(results: Mapping[str, Any] | None, label: str) -> set[str]:
    """The model names one method's answers gave, wherever its results record them: a study's
    `served` list, the consistency method's `identity.served`, or a job's
    `evaluators[label].usage.served`."""
    if not results:
        return set()
    found = set(results.get("served") or [])
    found |= set(((results.get("identity") or {}).get("served")) or [])
    usage = (((results.get("evaluators") or {}).get(label) or {}).get("usage")) or {}
    return found | set(usage.get("served") or {})


def completed_identity(planned: Mapping[str, Any] | None,
                       results: Sequence[Mapping[str, Any] | None], label: str
                       ) -> dict[str, Any] | None:
    """The planned identity with `served` completed from every method that asked the judge;
    None where nothing was planned (an evaluator that is no judge)."""
    if planned is None:
        return None
    served = set(planned.get("served") or [])
    for result in results:
        served |= answered_models(result, label)
    return {**planned, "served": sorted(served)}
