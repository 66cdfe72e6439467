"""Building an attack from user-facing settings (command line or a suite's options)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalstress.analyses.adversarial import AdversarialResult
from evalstress.attack.methods import make_methods
from evalstress.attack.normalise import parse_range
from evalstress.attack.objective import AttackParams, parse_directions
from evalstress.attack.run import Attacker
from evalstress.attack.scoring import Gold, Victim, gold_evaluator, split_victim_spec
from evalstress.cache import SQLiteCache
from evalstress.data import Example
from evalstress.evaluators.base import Evaluator, create_evaluator
from evalstress.llm.generate import TextGenerator
from evalstress.redact import redact_value
from evalstress.runner import Progress


def resolve_criteria(value: str | None) -> str | None:
    """An aspect of criteria.yaml (its default text), a file to read, or the text itself."""
    if not value:
        return None
    from evalstress.criteria import builtin_criteria

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


def _with_cache(evaluator: Evaluator, cache_dir: Path | None, no_cache: bool) -> Evaluator:
    configure = getattr(evaluator, "configure_cache", None)
    if callable(configure) and (cache_dir is not None or no_cache):
        configure(cache_dir, enabled=not no_cache)
    return evaluator


def build_attacker(examples: Sequence[Example], *, victims: Sequence[str],
                   gold: Sequence[str], generator: str | Mapping[str, Any] | None = None,
                   methods: Sequence[str] = ("adveval",), direction: str = "both",
                   params: AttackParams | None = None, criteria: str | None = None,
                   reference: str = "example", ranges: Sequence[str] = (),
                   cache: SQLiteCache | None = None, cache_dir: Path | None = None,
                   no_cache: bool = False, progress: Progress | None = None) -> Attacker:
    """An Attacker from specs; every bad setting is an error before any model is called."""
    params = params or AttackParams()
    directions = parse_directions(direction)
    gen = None
    if generator:
        gen = TextGenerator.from_spec(generator)
        if cache_dir is not None or no_cache:
            gen.configure_cache(cache_dir, enabled=not no_cache)
    method_list = make_methods(list(methods), generator=gen, criteria=resolve_criteria(criteria))
    victim_list = []
    for spec in victims:
        head, aspect = split_victim_spec(spec)
        evaluator = _with_cache(create_evaluator(head), cache_dir, no_cache)
        victim_list.append(Victim(evaluator, aspect, cache=cache, progress=progress,
                                  reference_mode=reference))
    golds = [_with_cache(gold_evaluator(spec, params.gold_samples), cache_dir, no_cache)
             for spec in gold]
    return Attacker(examples, victim_list, Gold(golds, cache=cache, progress=progress),
                    method_list, directions, params, ranges=parse_ranges(ranges), generator=gen,
                    progress=progress)


def close(attacker: Attacker) -> None:
    for victim in [*attacker.victims, *attacker.gold.members]:
        victim.evaluator.close()
    if attacker.generator is not None:
        attacker.generator.close()


def write_attack_outputs(result: AdversarialResult, out: Path, *,
                         config: Mapping[str, Any]) -> dict[str, Path]:
    """results.json (analyses.adversarial) and report.html beside attacks.jsonl."""
    from evalstress import __version__
    from evalstress.report.html import write_html

    out.mkdir(parents=True, exist_ok=True)
    payload = {"evalstress": __version__,
               "created": datetime.now(UTC).isoformat(timespec="seconds"),
               "config": redact_value(dict(config)),
               "counts": {"examples": result.info.get("examples"),
                          "attacks": result.info.get("attacks"),
                          "successes": len(result.successes)},
               "analyses": {"adversarial": result.to_dict()}}
    paths = {"results": out / "results.json", "attacks": out / "attacks.jsonl"}
    paths["results"].write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str),
                                encoding="utf-8")
    paths["report"] = write_html(payload, out / "report.html", title="evalstress attack")
    return paths
