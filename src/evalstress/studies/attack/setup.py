"""Building an attack from user-facing settings (command line or a suite's options)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example, load_examples
from evalstress.core.records import Progress
from evalstress.criteria import builtin_criteria
from evalstress.engine.scoring import configure_caches
from evalstress.evaluators.base import Evaluator, create_evaluator, distinct_labels
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.methods import make_methods
from evalstress.studies.attack.normalise import DEFAULT_PERCENTILES, ScaleReference, parse_range
from evalstress.studies.attack.objective import AttackParams, parse_directions
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import (
    Gold,
    Victim,
    fresh_gold_evaluator,
    gold_evaluator,
    split_victim_spec,
)


def resolve_criteria(value: str | None) -> str | None:
    """An aspect of criteria.yaml (its default text), a file to read, or the text itself."""
    if not value:
        return None
    known = builtin_criteria()
    if value in known:
        return known[value].text("default", (0, 100))
    path = Path(value)
    if len(value) < 300 and "\n" not in value and path.is_file():
        return path.read_text(encoding="utf-8")
    return value


def parse_ranges(values: Sequence[str]) -> dict[str, tuple[float, float]]:
    """`NAME=LO:HI` entries (NAME: a victim label or evaluator name)."""
    out = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--range '{value}' must look like NAME=LO:HI, e.g. bertscore=0.5:1")
        out[name.strip()] = parse_range(rest)
    return out


def parse_scale_references(values: Sequence[str], *, field_map: Any = None,
                           task: str | None = None,
                           percentiles: str | tuple[float, float] = DEFAULT_PERCENTILES,
                           ) -> dict[str, ScaleReference]:
    """`--scale-reference [NAME=]FILE` entries: a bare FILE fixes the scale of every victim
    without a declared range ("" key), NAME=FILE that of one victim (its label or evaluator
    name) whatever it declares. Files load like the attack data (`--map`, `--task`)."""
    low, high = parse_range(percentiles) if isinstance(percentiles, str) else percentiles
    out: dict[str, ScaleReference] = {}
    for value in values:
        name, sep, rest = str(value).partition("=")
        path = Path(value)
        if not sep or path.is_file() or not name.strip():
            name, rest = "", str(value)
        path = Path(rest.strip())
        if not path.is_file():
            raise ValueError(f"--scale-reference '{value}': no such file {path} (give FILE or "
                             "NAME=FILE, a file of examples like the attack data)")
        if name.strip() in out:
            raise ValueError(f"--scale-reference names {name.strip() or 'a shared file'} twice")
        examples = tuple(load_examples(path, field_map, task=task))
        out[name.strip()] = ScaleReference(path, examples, (float(low), float(high)))
    return out


def build_attacker(examples: Sequence[Example], *, victims: Sequence[str],
                   gold: Sequence[str], generator: str | Mapping[str, Any] | None = None,
                   methods: Sequence[str] = ("adveval",), direction: str = "both",
                   params: AttackParams | None = None, criteria: str | None = None,
                   reference: str = "example", ranges: Sequence[str] = (),
                   scale_references: Mapping[str, ScaleReference] | None = None,
                   cache: SQLiteCache | None = None, cache_dir: Path | None = None,
                   no_cache: bool = False, progress: Progress | None = None) -> Attacker:
    """An Attacker from specs; every bad setting is an error before any model is called.
    The protocol travels in `params` (`protocol.resolve` has filled the settings it sets)."""
    params = params or AttackParams()
    directions = parse_directions(direction)
    gen = None
    if generator:
        gen = TextGenerator.from_spec(generator)
        configure_caches([gen], cache_dir, no_cache)
    method_list = make_methods(list(methods), generator=gen, criteria=resolve_criteria(criteria))
    victim_list = []
    for spec in victims:
        head, aspect = split_victim_spec(spec)
        evaluator = create_evaluator(head)
        victim_list.append(Victim(evaluator, aspect, cache=cache, progress=progress,
                                  reference_mode=reference))
    distinct_victims([v.evaluator for v in victim_list])
    golds = [gold_evaluator(spec, params.gold_samples) for spec in gold]
    fresh = ([fresh_gold_evaluator(spec, params.gold_samples, built)
              for spec, built in zip(gold, golds, strict=True)]
             if params.rescore_final else [])
    configure_caches(_distinct([*(v.evaluator for v in victim_list), *golds, *fresh]),
                     cache_dir, no_cache)
    return Attacker(examples, victim_list, Gold(golds, cache=cache, progress=progress),
                    method_list, directions, params, ranges=parse_ranges(ranges),
                    scale_references=scale_references, generator=gen,
                    progress=progress,
                    fresh_gold=Gold(fresh, cache=cache, progress=progress) if fresh else None)


def distinct_victims(evaluators: list[Evaluator]) -> None:
    """Victims' evaluators labelled apart (`distinct_labels`) where their specs differ; one
    spec may be attacked on several aspects (rouge@rouge1, rouge@rougeL) under one label."""
    keys = [ev.spec for ev in evaluators]
    first = dict(zip(reversed(keys), reversed(evaluators), strict=True))
    distinct_labels(list(first.values()))
    for key, ev in zip(keys, evaluators, strict=True):
        ev.display_name = first[key].display_name


def _distinct(evaluators: Sequence[Evaluator]) -> list[Evaluator]:
    """Each evaluator once (a non-judge gold serves the search and the fresh rescoring)."""
    return list({id(e): e for e in evaluators}.values())


def check_reachable(attacker: Attacker) -> None:
    """The endpoints the attack will ask (its victims', its gold's, its generator's) answer and
    take their keys, asked before any search (`llm.probe`): a ValueError of one line naming
    the one that cannot (the gold's with --gold before it)."""
    victims = _distinct([v.evaluator for v in attacker.victims])
    for prefix, evaluators in (("", victims),
                               ("--gold ", _distinct([m.evaluator for m in attacker.gold.members]))):
        for evaluator in evaluators:
            try:
                evaluator.check_reachable()
            except ValueError as exc:
                raise ValueError(prefix + str(exc.args[0] if exc.args else exc)) from None
    if attacker.generator is not None:
        attacker.generator.check_reachable()


def close(attacker: Attacker) -> None:
    fresh = attacker.fresh_gold.members if attacker.fresh_gold is not None else []
    for evaluator in _distinct([v.evaluator for v in
                                [*attacker.victims, *attacker.gold.members, *fresh]]):
        evaluator.close()
    if attacker.generator is not None:
        attacker.generator.close()
