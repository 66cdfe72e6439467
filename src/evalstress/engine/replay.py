"""Units made elsewhere, replayed: the variants and skips that Ray shards made, handed to the
driver's pass in place of applying the perturbations again.

A shard makes every rule and model-made unit of its examples and scores them; the driver's pass
then only has to assemble the run's files in a local run's order and score what stays with it
(judges, corpus-level evaluators). `UnitReplay.plan` walks the units exactly as
`planning.plan_units` does (same order, same stopped units, same skips of rows too long for the
run), but looks each unit's outcome up instead of applying it: nothing is parsed or perturbed,
and the dataset-wide resources (sentence pools, n-gram tables) are never built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalstress.core.data import Example, read_jsonl
from evalstress.core.records import SkipRecord
from evalstress.engine import variantfile
from evalstress.engine.planning import PlannedUnits, Stopped, is_stopped, long_rows
from evalstress.perturb.base import Variant

if TYPE_CHECKING:
    from evalstress.suites import PerturbationPlan, Suite

UnitKey = tuple[str, str, str, int]  # example id, perturbation, severity as text, seed
#: variants of these methods come from the generation stage, which the driver replays itself
GENERATED = frozenset({"llm", "imported"})


class MissingUnit(RuntimeError):
    """A unit the driver's pass needs that no shard made (shards of another suite or data)."""


class UnitReplay:
    """The outcomes of the units some shards made, by unit: a variant or a skip."""

    def __init__(self) -> None:
        self.outcomes: dict[UnitKey, Variant | SkipRecord] = {}
        self.parses = 0  # texts the shards parsed: what a local run reports it parsed

    def add(self, variants: Iterable[Variant], skips: Iterable[SkipRecord]) -> None:
        for variant in variants:
            method = (variant.provenance or {}).get("method")
            if method not in GENERATED:
                self.outcomes[(variant.example_id, variant.perturbation, str(variant.severity),
                               variant.seed)] = variant
        for skip in skips:
            self.outcomes.setdefault((skip.example_id, skip.perturbation, str(skip.severity),
                                      skip.seed), skip)

    def add_files(self, variants: Path, skips: Path, parses: int) -> None:
        """A shard's variants.parquet and skips.jsonl, and how many texts it parsed."""
        self.add(variantfile.read_variants(variants), (
            SkipRecord(str(d["example_id"]), str(d["perturbation"]), d["severity"],
                       int(d["seed"]), str(d["reason"])) for _, d in read_jsonl(skips)))
        self.parses += parses

    def plan(self, examples: Sequence[Example], suite: Suite, *,
             include: Callable[[PerturbationPlan], bool],
             generated: Callable[[PerturbationPlan], bool] = lambda plan: False,
             stopped: Stopped | None = None) -> PlannedUnits:
        """What `planning.plan_units` would make of `examples`, from the recorded outcomes."""
        too_long = long_rows(examples, suite)
        out = PlannedUnits(too_long=too_long)
        for example in examples:
            for plan, severity, seed in suite.units(example.task):
                if not include(plan) or is_stopped(stopped, example.task, plan.name, severity):
                    continue
                if example.id in too_long:
                    out.skips.append(SkipRecord(example.id, plan.name, severity, seed,
                                                too_long[example.id]))
                    continue
                if generated(plan):
                    continue
                found = self.outcomes.get((example.id, plan.name, str(severity), seed))
                if found is None:
                    raise MissingUnit(f"no shard made {plan.name} at severity {severity}, seed "
                                      f"{seed} of example {example.id!r}")
                if isinstance(found, SkipRecord):
                    out.skips.append(found)
                else:
                    out.variants.append(found)
        return out
