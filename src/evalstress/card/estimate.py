"""The card's dry run: per method the examples, variants, texts to score, model calls and an
estimated time, found before anything is paid (nothing is scored; the caches are only read).

The stress methods plan through `evalstress.job.run.estimate_job`, the same loop as their
runs. Time is estimated only where a rate was measured (below); anything else says
"unknown" rather than guess. The attack's calls are an upper bound: each search may stop
early.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from evalstress.card.consistency import subset
from evalstress.card.data import spread_over_tasks
from evalstress.card.plan import (
    CONSISTENCY_SUITE,
    STUDY_MODES,
    SYSTEMS_KEY,
    SYSTEMS_MODE,
    CardPlan,
    MethodPlan,
    unmet_perturbations,
)
from evalstress.card.run import METHOD_ERRORS, CardOptions, stress_job_of
from evalstress.evaluators.base import ScoreRequest, parse_spec
from evalstress.job.run import estimate_job

#: Rates measured on this project's shared 2-core machine, one process (the runs they come
#: from: bench/README.md, "Figures behind the code"). Model-based perturbations and other
#: evaluators have no rate.
#: seconds to plan, write and analyse one variant (rule perturbations)
SECONDS_PER_VARIANT = 0.001
#: seconds to score one text, by evaluator kind (`rate_key`)
SECONDS_PER_TEXT = {"bleu": 0.00035, "chrf": 0.0007, "rouge": 0.0005,
                    "judge:model=local": 1.5}
#: seconds a stress job takes whatever its size (build, analyse, write the run directory)
SECONDS_PER_JOB = 2.0


@dataclass
class MethodEstimate:
    """What one method would spend."""

    key: str
    title: str
    runs: bool
    reason: str = ""
    examples: int = 0
    variants: int | None = None
    texts: int | None = None  # distinct texts not yet in the score cache
    calls: int | None = None
    tokens: int | None = None
    seconds: float | None = None
    note: str = ""
    #: seconds this dry run took to plan the method (the same loop its run plans with)
    plan_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def rate_key(spec: str) -> str:
    """The kind of evaluator a measured rate belongs to: its name, or `judge:model=local` for
    the shipped in-process judge (a judge behind a server has no rate: its speed is the
    server's)."""
    name, params = parse_spec(spec)
    return f"{name}:model=local" if name == "judge" and params.get("model") == "local" else name


def job_seconds(spec: str, variants: int, texts: int) -> float | None:
    """Estimated seconds of a stress job, or None without a measured rate."""
    rate = SECONDS_PER_TEXT.get(rate_key(spec))
    if rate is None:
        return None
    return SECONDS_PER_JOB + variants * SECONDS_PER_VARIANT + texts * rate


def estimate_stress(plan: CardPlan, method: MethodPlan, options: CardOptions,
                    todo_out: dict[str, list[ScoreRequest]] | None = None) -> MethodEstimate:
    """A stress method's plan and cost (`todo_out`: receives its uncached requests under the
    method's key), with the seconds the planning took here."""
    started = time.perf_counter()
    job = stress_job_of(plan, method, options)
    todo: dict[str, list[ScoreRequest]] = {}
    estimate = estimate_job(job, todo_out=todo)
    planned = time.perf_counter() - started
    if todo_out is not None:
        todo_out[method.key] = next(iter(todo.values()), [])
    row = estimate.evaluators[0] if estimate.evaluators else {}
    texts = int(row.get("todo") or 0)
    prompt, completion = row.get("prompt_tokens"), row.get("completion_tokens")
    tokens = (int(prompt or 0) + int(completion or 0)) if prompt is not None else None
    return MethodEstimate(method.key, method.title, True, examples=estimate.examples,
                          variants=estimate.variants, texts=texts, calls=row.get("calls"),
                          tokens=tokens,
                          seconds=job_seconds(plan.evaluator.spec, estimate.variants, texts),
                          note="; ".join([f"suite {method.suite}, {estimate.skips} skips",
                                          *method.left_out_lines(),
                                          *([SEQUENTIAL_NOTE] if method.design else [])]),
                          plan_seconds=planned)


#: the dry run's word on a method under the sequential design: its counts are the most it asks
SEQUENTIAL_NOTE = ("at most: the sequential design stops each test once settled "
                   "(--exhaustive: all of it)")


def estimate_attack(plan: CardPlan, method: MethodPlan) -> MethodEstimate:
    attack = method.attack
    examples = len(spread_over_tasks(plan.examples, attack.get("examples")))
    searches = examples * 2 * len(attack["methods"])  # both directions
    return MethodEstimate(
        method.key, method.title, True, examples=examples,
        calls=searches * int(attack["budget"]),
        note=f"up to {attack['budget']} victim queries in each of up to {searches} searches "
             f"({', '.join(attack['methods'])}), plus the gold's ratings (x"
             f"{attack['gold_samples']}){'; ' + attack['note'] if attack.get('note') else ''}")


def estimate_consistency(plan: CardPlan, method: MethodPlan, options: CardOptions
                         ) -> MethodEstimate:
    """Its direct requests (each item and aspect: k repeats, the first shared with the rating
    as written, and one per rewording; before the response cache) and its blind-spot run per
    wording (planned as a stress job is; every wording scores the same variants, so the calls
    are one run's times the wordings)."""
    settings = method.settings
    items = subset(plan.examples, int(settings["items"]))
    words = 1 + int(settings["rewordings"])
    direct = len(items) * len(plan.evaluator.aspects) * (int(settings["repeats"]) + words - 1)
    suite = MethodPlan("blindspot", True, suite=CONSISTENCY_SUITE, seeds=1,
                       analyses=("blindspot",),
                       left_out=unmet_perturbations(CONSISTENCY_SUITE, "default"))
    try:
        one = estimate_stress(replace(plan, examples=tuple(items), methods=(suite,)), suite,
                              options)
    except METHOD_ERRORS as exc:
        message = str(exc.args[0] if exc.args else exc)
        return MethodEstimate(method.key, method.title, True, examples=len(items),
                              note=f"cannot be planned: {message}")
    calls = None if one.calls is None else direct + words * int(one.calls)
    return MethodEstimate(method.key, method.title, True, examples=len(items),
                          variants=None if one.variants is None else words * one.variants,
                          calls=calls, tokens=None if one.tokens is None else words * one.tokens,
                          note=f"{settings['repeats']} repeats and {words} wordings of "
                               f"{len(items)} items ({direct} direct requests), and the "
                               f"{CONSISTENCY_SUITE} suite under each wording (one seed); an "
                               "upper bound: the run as written reads what the card's "
                               "blind-spot run shares with it from the cache")


def estimate_card(plan: CardPlan, options: CardOptions,
                  todo_out: dict[str, list[ScoreRequest]] | None = None
                  ) -> list[MethodEstimate]:
    """Every method's estimate, in the card's order (not run: its reason). `todo_out`: each
    stress method's uncached requests, by method key (`card.dryrun` times the card from
    them)."""
    out = []
    for method in plan.methods:
        if not method.runs:
            out.append(MethodEstimate(method.key, method.title, False, method.reason))
        elif method.mode in STUDY_MODES:
            outputs = sum(len((e.meta or {}).get(SYSTEMS_KEY) or []) for e in plan.examples) \
                if method.mode == SYSTEMS_MODE else 0
            pairs = len(plan.preferences.pairs) if plan.preferences is not None else 0
            rate = SECONDS_PER_TEXT.get(rate_key(plan.evaluator.spec))
            asked = (2 * pairs * len(plan.evaluator.aspects)
                     if pairs and plan.evaluator.name == "judge" else None)
            out.append(MethodEstimate(
                method.key, method.title, True, examples=len(plan.examples),
                texts=outputs + 2 * pairs, calls=asked,
                seconds=None if rate is None else SECONDS_PER_JOB + (outputs + 2 * pairs) * rate,
                note=", ".join(n for n in (
                    "every system output the examples list, against its human scores"
                    if outputs else "",
                    f"both outputs of {pairs} preference pairs"
                    + (" (calls: each pair asked in both orders per aspect)" if asked else "")
                    if pairs else "") if n) + " (texts: before the score cache)"))
        elif method.key == "position":
            out.append(MethodEstimate(
                method.key, method.title, True, examples=len(plan.examples),
                calls=3 * len(plan.examples),
                note="each example's pair asked three times (both orders and a re-ask); calls: "
                     "before the response cache, at most"))
        elif method.key == "consistency":
            out.append(estimate_consistency(plan, method, options))
        elif method.kind == "study":
            out.append(estimate_attack(plan, method))
        elif method.kind == "part":
            out.append(MethodEstimate(method.key, method.title, True,
                                      examples=len(plan.examples),
                                      note="read from the blind-spot run: no scoring of its own"))
        else:
            try:
                out.append(estimate_stress(plan, method, options, todo_out))
            except METHOD_ERRORS as exc:  # the run would fail the same way: say so here
                message = str(exc.args[0] if exc.args else exc)
                out.append(MethodEstimate(method.key, method.title, True,
                                          examples=len(plan.examples),
                                          note=f"cannot be planned: {message}"))
    return out
