"""Planning: which variants a suite makes of which examples, by the one perturbation loop.

`plan_units` is the loop every path runs: the chunk worker for rule perturbations, the parent
process for model-made ones (the generation stage makes the LLM-written and imported ones), and
`plan_dataset` for a whole dataset at once (`--dry-run`, tests, benchmarks). Each text is parsed once and
reused by every perturbation; a unit that cannot apply becomes a SkipRecord with its reason, and
a row beyond the run's text length limit is neither parsed nor perturbed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalstress.core.data import Example
from evalstress.core.records import Progress, SkipRecord
from evalstress.core.text import TextParser, length_skip, max_chars_option
from evalstress.engine.generation import GenerationSetup
from evalstress.engine.result import Plan
from evalstress.perturb.base import PerturbContext, Skip, Variant

if TYPE_CHECKING:
    from evalstress.suites import PerturbationPlan, Suite

#: units left out of a chunk (the sequential design): (perturbation, severity) or
#: (task, perturbation, severity), the severity as a string
Stopped = frozenset[tuple[str, ...]]


def is_stopped(stopped: Stopped | None, task: str, name: str, severity: Any) -> bool:
    """Whether a unit is left out: listed as (perturbation, severity) or (task, perturbation,
    severity), the severity as a string."""
    if not stopped:
        return False
    return (name, str(severity)) in stopped or (task, name, str(severity)) in stopped


def long_rows(examples: Sequence[Example], suite: Suite) -> dict[str, str]:
    """Skip reasons of the rows whose text is beyond the run's length limit (suite option
    `max_chars`), by row id: they are neither parsed, perturbed nor scored."""
    limit = max_chars_option(suite.options)
    reasons = {e.id: length_skip(e.id, e.hypothesis, limit) for e in examples}
    return {row: reason for row, reason in reasons.items() if reason is not None}


def scored_examples(examples: Sequence[Example], variants: Sequence[Variant],
                    stopped: Stopped | None,
                    too_long: Mapping[str, str] | None = None) -> list[Example]:
    """Examples whose originals are scored: all within the length limit, unless units were
    stopped (the sequential design), then only those with a variant left in the chunk."""
    if stopped is None:
        return [e for e in examples if not too_long or e.id not in too_long]
    keep = {v.example_id for v in variants}
    return [e for e in examples if e.id in keep]


def shard_examples(examples: Sequence[Example], shard: tuple[int, int] | None) -> list[Example]:
    """Deterministic sharding by example id: shard (i, n) keeps ids whose hash mod n is i."""
    if shard is None:
        return list(examples)
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"shard {index}/{count} is out of range")
    return [e for e in examples
            if int(hashlib.sha256(e.id.encode()).hexdigest(), 16) % count == index]


@dataclass
class PlannedUnits:
    """What the loop made of some examples: variants, skips, how many texts it parsed, and the
    rows it left out for their length (by id, with the reason)."""

    variants: list[Variant] = field(default_factory=list)
    skips: list[SkipRecord] = field(default_factory=list)
    parses: int = 0
    too_long: dict[str, str] = field(default_factory=dict)


Unit = tuple["PerturbationPlan", Any, int]  # a plan, a severity of its grid, a seed


def walk_units(examples: Sequence[Example], suite: Suite, out: PlannedUnits, *,
               include: Callable[[PerturbationPlan], bool],
               generated: Callable[[PerturbationPlan], bool] = lambda plan: False,
               stopped: Stopped | None = None) -> Iterator[tuple[Example, list[Unit]]]:
    """Each example with the units to make of it, in the run's order: the one walk that
    making units (`plan_units`) and looking up units made elsewhere (`replay.UnitReplay`)
    share. Plans `include` leaves out and stopped units are passed over, those of the
    generation stage too; a row in `out.too_long` gets a skip per unit in `out.skips` and no
    units to make."""
    for example in examples:
        units: list[Unit] = []
        for plan, severity, seed in suite.units(example.task):
            if not include(plan) or is_stopped(stopped, example.task, plan.name, severity):
                continue
            if example.id in out.too_long:  # neither parsed, perturbed, generated nor scored
                out.skips.append(SkipRecord(example.id, plan.name, severity, seed,
                                            out.too_long[example.id]))
                continue
            if not generated(plan):
                units.append((plan, severity, seed))
        yield example, units


def plan_units(examples: Sequence[Example], suite: Suite, parser: TextParser,
               pool: Sequence[Example], resources: dict[str, Any], *,
               include: Callable[[PerturbationPlan], bool],
               generated: Callable[[PerturbationPlan], bool] = lambda plan: False,
               stopped: Stopped | None = None, progress: Progress | None = None) -> PlannedUnits:
    """Apply every included perturbation x severity x seed to `examples`.

    `include` picks the plans this caller makes; of those, `generated` ones are left to the
    generation stage (a row too long for the run still gets their skips here). `pool` is the
    dataset perturbations may borrow from (sentence pools, n-gram tables in `resources`).
    The parses stay in `parser` for the generation stage; the caller forgets them when the
    chunk is done, so memory stays flat chunk by chunk."""
    out = PlannedUnits(too_long=long_rows(examples, suite))
    before = parser.parses
    # parsed in one batch when a perturbation first reads a parse; never, when none does
    parser.expect([e.hypothesis for e in examples if e.id not in out.too_long])
    if progress is not None:
        progress.start("perturbing", len(examples))
    for example, units in walk_units(examples, suite, out, include=include,
                                     generated=generated, stopped=stopped):
        ctx = PerturbContext(example, parser, pool, resources)
        for plan, severity, seed in units:
            result = plan.perturbation.apply(ctx, severity, seed)
            if isinstance(result, Skip):
                out.skips.append(SkipRecord(example.id, plan.name, severity, seed, result.reason))
            else:
                out.variants.append(result)
        if progress is not None:
            progress.advance("perturbing")
    if progress is not None:
        progress.finish("perturbing")
    out.parses = parser.parses - before
    return out


def plan_dataset(examples: Sequence[Example], suite: Suite, *, parser: TextParser | None = None,
         resources: dict[str, Any] | None = None, progress: Progress | None = None,
         generation: GenerationSetup | None = None) -> Plan:
    """The variants and skips of a whole dataset at once, without scoring: the same loop and
    generation stage a run uses chunk by chunk (`--dry-run` estimates from it). A suite with
    LLM units and no generator fails before any work."""
    stage = generation or GenerationSetup()
    stage.check(suite, examples)
    parser = parser or TextParser()
    too_long = long_rows(examples, suite)
    fitting = [e for e in examples if e.id not in too_long]  # never borrowed from either
    made = plan_units(examples, suite, parser, fitting, dict(resources or {}),
                      include=lambda p: True, generated=stage.handles, progress=progress)
    before = parser.parses - made.parses
    generated = stage.run(fitting, suite, parser, progress)
    left_out = stage.long_row_skips(examples, too_long, suite)
    return Plan(list(examples), suite, [*made.variants, *generated.variants],
                [*made.skips, *generated.skips, *left_out], parser.parses - before,
                stage.block(generated.counts))
