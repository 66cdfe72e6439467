"""Units made elsewhere, replayed: the variants and skips that Ray shards made, handed to the
driver's pass in place of applying the perturbations again.

A shard makes every rule and model-made unit of its examples and scores them; the driver's pass
then only has to assemble the run's files in a local run's order and score what stays with it
(judges, corpus-level evaluators). `UnitReplay.plan` walks the units with
`planning.plan_units`' own walk (`planning.walk_units`: same order, same stopped units, same
skips of rows too long for the run), but looks each unit's outcome up instead of applying it:
nothing is parsed or perturbed, and the dataset-wide resources (sentence pools, n-gram tables)
are never built. The shards'
files stay on disk and are read forward as the pass goes (`ShardFiles`), so memory holds a few
chunks' units, whatever the dataset's size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalstress.core.data import Example, read_jsonl
from evalstress.core.records import SkipRecord
from evalstress.engine import variantfile
from evalstress.engine.planning import PlannedUnits, Stopped, long_rows, walk_units
from evalstress.perturb.base import Variant

if TYPE_CHECKING:
    from evalstress.suites import PerturbationPlan, Suite

UnitKey = tuple[str, str, str, int]  # example id, perturbation, severity as text, seed
#: variants of these methods come from the generation stage, which the driver replays itself
GENERATED = frozenset({"llm", "imported"})


class MissingUnit(RuntimeError):
    """A unit the driver's pass needs that no shard made (shards of another suite or data)."""


class ShardFiles:
    """One shard's variants.parquet and skips.jsonl, read forward as the driver asks.

    A shard's files hold its chunks in order, each chunk's units together (rule units first,
    then the model-made ones), so every unit of the shard's chunk c has been read once the
    reader has passed every record of chunks up to c. The driver's pass asks in the dataset's
    order, so memory holds a few of the shard's chunks, never the whole shard."""

    def __init__(self, variants: Path, skips: Path, chunk_of: Mapping[str, int]):
        self.chunk_of = chunk_of  # shard chunk of each example that has units to look up
        self.streams: list[Iterator[Variant | SkipRecord]] = [
            variantfile.read_variants(variants),
            (SkipRecord.from_json(d) for _, d in read_jsonl(skips))]
        self.ahead: list[Variant | SkipRecord | None] = [None, None]
        self.read_to = -1

    def read(self, chunk: int, into: UnitReplay) -> None:
        """Hand `into` every unit of the shard's chunks up to `chunk` not handed over yet."""
        if chunk <= self.read_to:
            return
        for index, stream in enumerate(self.streams):
            while True:
                record = self.ahead[index] or next(stream, None)
                self.ahead[index] = None
                if record is None:
                    break
                due = self.chunk_of.get(record.example_id)
                if due is not None and due > chunk:
                    self.ahead[index] = record  # a later chunk's: kept for the next read
                    break
                if due is not None:  # else a row the driver skips itself (too long)
                    into.keep(record)
        self.read_to = chunk


class UnitReplay:
    """The outcomes of the units some shards made, by unit: a variant or a skip. Each is
    handed out once (the driver's pass asks for each unit once) and then forgotten."""

    def __init__(self, generated: frozenset[str] = frozenset()) -> None:
        self.outcomes: dict[UnitKey, Variant | SkipRecord] = {}
        self.generated = generated  # plans of the generation stage: the driver replays them
        self.shards: list[ShardFiles] = []
        self.where: dict[str, tuple[int, int]] = {}  # example id -> (shard, shard chunk)
        self.parses = 0  # texts the shards parsed: what a local run reports it parsed

    def keep(self, record: Variant | SkipRecord) -> None:
        """One unit's outcome from a shard's files: a rule variant (not one the generation
        stage wrote), or a skip of a plan outside the generation stage (a variant wins)."""
        key = (record.example_id, record.perturbation, str(record.severity), record.seed)
        if isinstance(record, Variant):
            if (record.provenance or {}).get("method") not in GENERATED:
                self.outcomes[key] = record
        elif record.perturbation not in self.generated:
            self.outcomes.setdefault(key, record)

    def add_shard(self, variants: Path, skips: Path, chunk_of: Mapping[str, int],
                  parses: int) -> None:
        """A shard's variants.parquet and skips.jsonl (read as the pass needs them), the shard
        chunk of each of its examples within the run's length limit, and how many texts it
        parsed."""
        for example_id, chunk in chunk_of.items():
            self.where[example_id] = (len(self.shards), chunk)
        self.shards.append(ShardFiles(variants, skips, chunk_of))
        self.parses += parses

    def _outcome(self, key: UnitKey) -> Variant | SkipRecord | None:
        found = self.where.get(key[0])
        if found is not None:
            shard, chunk = found
            self.shards[shard].read(chunk, self)
        return self.outcomes.pop(key, None)

    def plan(self, examples: Sequence[Example], suite: Suite, *,
             include: Callable[[PerturbationPlan], bool],
             generated: Callable[[PerturbationPlan], bool] = lambda plan: False,
             stopped: Stopped | None = None) -> PlannedUnits:
        """What `planning.plan_units` would make of `examples`, from the recorded outcomes."""
        out = PlannedUnits(too_long=long_rows(examples, suite))
        for example, units in walk_units(examples, suite, out, include=include,
                                         generated=generated, stopped=stopped):
            for plan, severity, seed in units:
                found = self._outcome((example.id, plan.name, str(severity), seed))
                if found is None:
                    raise MissingUnit(f"no shard made {plan.name} at severity {severity}, seed "
                                      f"{seed} of example {example.id!r}")
                if isinstance(found, SkipRecord):
                    out.skips.append(found)
                else:
                    out.variants.append(found)
        return out
