"""A card from start to end: plan it (a bad spec, budget or data file is refused here, before
any work), run its methods in its folder, write card.json and card.md."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalstress.card.assemble import assemble, write_card
from evalstress.card.consistency import run_consistency
from evalstress.card.data import describe, load_card_examples, spread_over_tasks, within_length
from evalstress.card.execution import open_cluster
from evalstress.card.identity import family_warnings, planned_identity
from evalstress.card.model import Card
from evalstress.card.plan import (
    PREFERENCES_MODE,
    SYSTEMS_MODE,
    Budget,
    CardPlan,
    EvaluatorTraits,
    get_budget,
    plan_methods,
    system_score_fields,
)
from evalstress.card.position import run_position
from evalstress.card.preference import run_preference_correlation
from evalstress.card.run import (
    CardError,
    CardOptions,
    MethodOutcome,
    check_same_card,
    claim_out,
    run_method,
)
from evalstress.card.systems import run_systems_correlation
from evalstress.core.cache import default_cache_dir
from evalstress.core.preferences import load_preferences
from evalstress.core.wording import plural
from evalstress.evaluators.base import create_evaluator
from evalstress.job.build import reference_note
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.scoring import gold_evaluator

#: where a card goes without --out: cards/<the evaluator's label as a folder name>
CARDS = Path("cards")


def folder_name(label: str) -> str:
    """A label as a folder name: `judge(local)` -> `judge-local`."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")
    return name or "evaluator"


def check_attack_specs(gold: str | None, generator: str | None) -> None:
    """The gold and generator specs build (a typo fails before any work); nothing is asked."""
    if gold:
        gold_evaluator(gold, 1).close()
    if generator:
        TextGenerator.from_spec(generator).close()


def evaluator_traits(spec: str) -> EvaluatorTraits:
    """The evaluator's traits; building it checks the spec (one error line on a bad one)."""
    made = create_evaluator(spec)
    try:
        return EvaluatorTraits.of(made)
    finally:
        made.close()


def check_endpoints(plan: CardPlan) -> None:
    """The endpoints the card will ask (the evaluator's; the gold's and the generator's when
    the adversarial search runs) answer and take their keys, asked before any method runs
    (`llm.probe`): a CardError naming the one that cannot. Each is asked once per process."""
    attack = plan.method("adversarial").runs
    asked: list[tuple[str, Callable[[], Any]]] = []
    if plan.evaluator.asks_endpoint:
        asked.append(("", lambda: create_evaluator(plan.evaluator.spec)))
    if attack and plan.gold:
        asked.append(("--gold ", lambda: gold_evaluator(str(plan.gold), 1)))
    if attack and plan.generator:
        asked.append(("", lambda: TextGenerator.from_spec(str(plan.generator))))
    for prefix, build in asked:
        made = build()
        try:
            made.check_reachable()
        except ValueError as exc:
            raise CardError(prefix + str(exc.args[0] if exc.args else exc)) from None
        finally:
            made.close()


def plan_card(spec: str, *, data: Path | None = None, field_map: Any = None,
              task: str | None = None, budget: str | Budget = "standard",
              gold: str | None = None, generator: str | None = None,
              max_chars: int | None = None, preferences: Path | None = None,
              exhaustive: bool = False) -> CardPlan:
    """Everything the card will do, decided and checked before any work: the evaluator (its
    spec built once), the budget, the examples (read, the rows beyond the length limit left
    out, spread over the tasks, hashed), their references when the evaluator needs them, and
    each method, run or not with the reason. `budget`: a budget's name, or a Budget itself
    (the real-data atlas's: the paper budget capped at 100 examples). `preferences`: a file of
    pairs with the human preference (`core.preferences`), read and checked here.
    `exhaustive`: every test on every example, also for a model-based evaluator (whose
    blind-spot, bias and criteria tests otherwise stop once settled)."""
    chosen = get_budget(budget) if isinstance(budget, str) else budget
    traits = evaluator_traits(spec)
    check_attack_specs(gold, generator)
    loaded: list[str] = []  # the loader's note of a default task, among the plan's notes
    every = load_card_examples(data, field_map, task, max_chars, say=loaded.append)
    source = str(data) if data is not None else "the built-in corpus"
    usable, limit = within_length(every, max_chars, source)
    examples = spread_over_tasks(usable, chosen.examples)
    notes = loaded
    too_long = len(every) - len(usable)
    if too_long:
        it = "it" if too_long == 1 else "them"
        notes.append(f"{too_long} of {plural(len(every), 'example')} of {source} "
                     f"{'is' if too_long == 1 else 'are'} longer than {limit:,} characters: "
                     f"the card leaves {it} out (raise --max-chars to keep {it})")
    references = reference_note(examples, [traits.label] if traits.needs_references else [],
                                source)
    notes += [references] if references else []
    notes += family_warnings(spec, gold, generator)
    pairs = load_preferences(preferences) if preferences is not None else None
    return CardPlan(traits, chosen, examples,
                    describe(examples, len(every), data, field_map, task,
                             too_long=too_long, max_chars=limit),
                    plan_methods(traits, chosen, examples, gold=gold, generator=generator,
                                 preferences=pairs, exhaustive=exhaustive),
                    gold=gold, generator=generator, data_path=data, max_chars=max_chars,
                    notes=tuple(notes), preferences=pairs)


def make_card(plan: CardPlan, options: CardOptions) -> Card:
    """Run the plan's methods in `options.out` (reusing those finished earlier with the same
    settings) and write its card.json and card.md; the folder is locked meanwhile."""
    if options.backend == "ray":  # the sequential design decides look by look on one machine
        plan = plan.exhaustive()
    inputs: list[tuple[str, Path]] = [("input data", plan.data_path)] if plan.data_path else []
    # the shared cache is never inside the card's folder, even with --no-cache
    inputs.append(("cache folder", options.cache_dir or default_cache_dir()))
    check_same_card(options.out, plan, force=options.force)
    check_endpoints(plan)
    if plan.identity is None and plan.evaluator.name == "judge":
        # recorded before any method runs (once the endpoint answered, whose cache-key name
        # it holds), so a card whose methods fail or leave the judge alone still has it
        plan = replace(plan, identity=planned_identity(plan.evaluator.spec))
    # --backend ray: one Ray for every method, joined before the folder is claimed (a
    # cluster that cannot be joined leaves nothing written)
    cluster = open_cluster([plan], options.backend, options.ray_address)
    try:
        lock = claim_out(options.out, force=options.force, inputs=inputs)
    except CardError:
        cluster.close()
        raise
    try:
        outcomes: dict[str, MethodOutcome] = {}
        for method in plan.methods:
            if method.key == "consistency":
                outcomes[method.key] = run_consistency(plan, method, options)
            elif method.mode == SYSTEMS_MODE:
                outcomes[method.key] = run_systems_correlation(
                    plan, method, system_score_fields(plan.examples), options)
            elif method.mode == PREFERENCES_MODE:
                outcomes[method.key] = run_preference_correlation(plan, method, options)
            elif method.key == "position" and method.runs:
                outcomes[method.key] = run_position(plan, method, options)
            elif method.kind != "part":
                outcomes[method.key] = run_method(plan, method, options)
        made = assemble(plan, outcomes, options.out, max_missing=options.max_missing)
        write_card(made)
    finally:
        cluster.close()
        lock.release()
    return made
