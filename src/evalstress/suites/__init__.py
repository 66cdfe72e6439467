"""Suites are data: perturbations x severities x seeds, plus the analyses to run."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from evalstress.perturb.base import Perturbation, Severity, get_perturbation

#: How a suite runs: evalstress's defaults, or paper 002's public code where the two differ
#: (perturbations with a `paper_rule` get rule=paper; the blind-spot analysis averages over the
#: whole gold set and tests without tolerance).
PROTOCOLS = ("default", "paper")


@dataclass
class PerturbationPlan:
    perturbation: Perturbation
    grid: tuple[Severity, ...]
    tasks: tuple[str, ...] | None = None  # None: every task; else only examples of these tasks
    ruled_by_protocol: bool = False  # rule=paper came from the suite's protocol, not its author

    @property
    def name(self) -> str:
        return self.perturbation.name

    def applies_to(self, task: str) -> bool:
        return self.tasks is None or task in self.tasks


@dataclass
class Suite:
    name: str
    perturbations: list[PerturbationPlan]
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    analyses: tuple[str, ...] = ("blindspot",)
    description: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    protocol: str = "default"

    def units(self, task: str | None = None) -> Iterator[tuple[PerturbationPlan, Severity, int]]:
        """Every (perturbation, severity, seed); with `task`, only those planned for that task."""
        for plan in self.perturbations:
            if task is not None and not plan.applies_to(task):
                continue
            for severity in plan.grid:
                for seed in self.seeds:
                    yield plan, severity, seed

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "suite") -> Suite:
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: a suite must be a mapping")
        raw = data.get("perturbations")
        if not raw:
            raise ValueError(f"{where}: field 'perturbations' is missing or empty")
        items = raw.items() if isinstance(raw, Mapping) else ((name, {}) for name in raw)
        plans = []
        for name, options in items:
            options = dict(options or {})
            grid = options.pop("grid", None)
            tasks = options.pop("tasks", None)
            if isinstance(tasks, str):
                tasks = [tasks]
            if tasks is not None:
                from evalstress.data import TASKS

                if not isinstance(tasks, list) or not tasks:
                    raise ValueError(f"{where}: field 'perturbations.{name}.tasks' must be a "
                                     "non-empty list of task names")
                unknown = [t for t in tasks if t not in TASKS]
                if unknown:
                    raise ValueError(f"{where}: field 'perturbations.{name}.tasks': unknown "
                                     f"task(s) {', '.join(map(str, unknown))}; known: "
                                     f"{', '.join(TASKS)}")
            _check_rule(str(name), options, where)
            try:
                pert = get_perturbation(str(name), **options)
            except KeyError as exc:
                raise ValueError(f"{where}: field 'perturbations.{name}': {exc.args[0]}") from None
            plans.append(PerturbationPlan(pert, tuple(grid) if grid else type(pert).grid,
                                          tuple(tasks) if tasks is not None else None))
        seeds = data.get("seeds", 5)
        seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
        analyses = data.get("analyses", ["blindspot"])
        protocol = str(data.get("protocol", "default"))
        if protocol not in PROTOCOLS:
            raise ValueError(f"{where}: field 'protocol': '{protocol}' is unknown; choose one of "
                             f"{', '.join(PROTOCOLS)}")
        suite = cls(str(data.get("name", "custom")), plans, seed_list, tuple(analyses),
                    str(data.get("description", "")), dict(data.get("options", {}) or {}))
        return suite.with_protocol(protocol)

    def with_protocol(self, protocol: str) -> Suite:
        """This suite run under `protocol`: under `paper`, every perturbation that has a paper-002
        rule takes rule=paper (unless the suite set its rule itself); under `default`, the rules
        the paper protocol set go again. Grids stay as they are."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol '{protocol}' is unknown; choose one of "
                             f"{', '.join(PROTOCOLS)}")
        plans = []
        for plan in self.perturbations:
            pert, ruled = plan.perturbation, plan.ruled_by_protocol
            if protocol == "paper" and has_paper_rule(type(pert)) and "rule" not in pert.params:
                pert, ruled = get_perturbation(pert.name, **{**pert.params, "rule": "paper"}), True
            elif protocol == "default" and ruled:
                params = {k: v for k, v in pert.params.items() if k != "rule"}
                pert, ruled = get_perturbation(pert.name, **params), False
            plans.append(PerturbationPlan(pert, plan.grid, plan.tasks, ruled))
        return Suite(self.name, plans, self.seeds, self.analyses, self.description,
                     dict(self.options), protocol)


def has_paper_rule(cls: type[Perturbation]) -> bool:
    """Whether a perturbation follows paper 002 differently under rule=paper."""
    return bool(getattr(cls, "paper_rule", ""))


def _check_rule(name: str, options: Mapping[str, Any], where: str) -> None:
    """A `rule:` option must be known, and `paper` only where the perturbation has one."""
    if "rule" not in options:
        return
    from evalstress.perturb.base import registry

    rule, cls = str(options["rule"]), registry().get(name)
    if rule not in PROTOCOLS:
        raise ValueError(f"{where}: field 'perturbations.{name}.rule': '{rule}' is unknown; "
                         f"choose one of {', '.join(PROTOCOLS)}")
    if rule == "paper" and cls is not None and not has_paper_rule(cls):
        raise ValueError(f"{where}: field 'perturbations.{name}.rule': '{name}' has no "
                         "paper-002 rule (it already follows the paper, or is not from it)")


def builtin_suites() -> list[str]:
    folder = resources.files("evalstress") / "suites"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                  if p.name.endswith(".yaml"))


def load_suite(name_or_path: str | Path) -> Suite:
    """A built-in suite by name, or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        resource = resources.files("evalstress") / "suites" / f"{name_or_path}.yaml"
        if not resource.is_file():
            raise ValueError(f"no suite '{name_or_path}': built-in suites are "
                             f"{', '.join(builtin_suites())}, or give a YAML file path")
        text, where = resource.read_text(encoding="utf-8"), f"suite {name_or_path}"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: invalid YAML ({exc})") from None
    return Suite.from_dict(data, where=where)


def custom_suite(perturbations: Sequence[str], seeds: int | Sequence[int] = 5,
                 analyses: Sequence[str] = ("blindspot",), protocol: str = "default") -> Suite:
    return Suite.from_dict({"name": "custom", "perturbations": list(perturbations),
                            "seeds": seeds if isinstance(seeds, int) else list(seeds),
                            "analyses": list(analyses), "protocol": protocol})
