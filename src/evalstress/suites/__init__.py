"""Suites are data: perturbations x severities x seeds, plus the analyses to run.

A suite names its analyses and their options; the analyses themselves live above the plugins,
so their names and option keys are checked where a job is built
(`evalstress.analyses.registry.check_suite`), not when the file is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from evalstress.core.data import TASKS
from evalstress.core.packaged import parse_packaged_yaml
from evalstress.core.strict import ConfigError, UnknownNameError, check_names, unknown_name_error
from evalstress.core.userfile import DataError, parse_user_yaml, read_user_text
from evalstress.perturb.base import (
    Perturbation,
    Severity,
    check_params,
    get_perturbation,
    get_perturbation_class,
    registry,
)
from evalstress.suites.expect import parse_expect

#: How a suite runs: evalstress's defaults, or its papers' own settings where the two differ:
#: perturbations with a `paper_rule` get rule=paper (paper 002's code; paper 003's counts for its
#: LLM-written types), paper 000's rule attacks take their severity `paper` (that paper's fixed
#: rules) unless the suite gave their grid, a suite of paper 000 and 003 perturbations only runs
#: one seed (those papers perturb each text once), and the blind-spot analysis averages over the
#: whole gold set and tests without tolerance.
PROTOCOLS = ("default", "paper")
#: papers that build one perturbed text per example and perturbation
ONE_SET_PAPERS = frozenset({"000", "003"})


@dataclass
class PerturbationPlan:
    perturbation: Perturbation
    grid: tuple[Severity, ...]
    tasks: tuple[str, ...] | None = None  # None: every task; else only examples of these tasks
    ruled_by_protocol: bool = False  # rule=paper came from the suite's protocol, not its author
    grid_given: bool = False  # the suite's author wrote the grid (the protocol leaves it alone)
    graded_grid: tuple[Severity, ...] | None = None  # the grid the paper protocol replaced

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
    expect: dict[str, Any] = field(default_factory=dict)  # what `evalstress check` requires
    generator: str | dict[str, Any] | None = None  # TextGenerator spec for LLM perturbations
    generation: dict[str, Any] = field(default_factory=dict)  # max_reasks, verifier
    seeds_before_protocol: tuple[int, ...] | None = None  # the seeds the paper protocol cut
    source: str = "suite"  # where it was read from: the file, in errors found later

    def unit_count(self, task: str) -> int:
        """How many (perturbation, severity, seed) units an example of `task` gets, without
        listing them."""
        return sum(len(plan.grid) for plan in self.perturbations
                   if plan.applies_to(task)) * len(self.seeds)

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
        """A suite from its YAML mapping. Unknown keys and parameters are errors with a
        did-you-mean; bad values name `where` (the file), the key and the reason."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: a suite must be a mapping of keys ({', '.join(SUITE_KEYS)})")
        check_names("suite key", data, SUITE_KEYS, where)
        raw = data.get("perturbations")
        if not raw:
            raise ConfigError(f"{where}: field 'perturbations' is missing or empty")
        if isinstance(raw, str | bytes) or not isinstance(raw, Mapping | list):
            raise ConfigError(f"{where}: field 'perturbations' must be a mapping of names to "
                              "options or a list of names")
        items = raw.items() if isinstance(raw, Mapping) else (_list_entry(e, where) for e in raw)
        plans = [_plan(str(name), options, where) for name, options in items]
        seed_list = parse_seeds(data.get("seeds", 5), f"{where}: field 'seeds'")
        analyses = _analyses(data.get("analyses", ["blindspot"]), where)
        options = data.get("options") or {}
        if not isinstance(options, Mapping):
            raise ConfigError(f"{where}: field 'options' must be a mapping of option names to "
                              "values")
        _check_option_values(options, f"{where}: field 'options'")
        protocol = str(data.get("protocol", "default"))
        if protocol not in PROTOCOLS:
            raise ConfigError(f"{where}: field 'protocol': '{protocol}' is unknown; choose one of "
                              f"{', '.join(PROTOCOLS)}")
        generator = data.get("generator")
        if generator is not None and not isinstance(generator, str | Mapping):
            raise ConfigError(f"{where}: field 'generator' must be a spec string such as "
                              "'model=NAME,base_url=URL' or a mapping of its parameters")
        generation = data.get("generation") or {}
        if not isinstance(generation, Mapping):
            raise ConfigError(f"{where}: field 'generation' must be a mapping of "
                              f"{', '.join(GENERATION_KEYS)}")
        check_names("key", generation, GENERATION_KEYS, f"{where}: field 'generation'")
        expect = data.get("expect") or {}
        if expect:
            parse_expect(expect, where=f"{where}: field 'expect'")  # a typo fails at load time
        for text_key in ("name", "description"):
            if text_key in data and not isinstance(data[text_key], str | int | float):
                raise ConfigError(f"{where}: field '{text_key}' must be text")
        suite = cls(str(data.get("name", "custom")), plans, seed_list, analyses,
                    str(data.get("description", "")), dict(options),
                    expect=dict(expect),
                    generator=dict(generator) if isinstance(generator, Mapping) else generator,
                    generation=dict(generation), source=where)
        return suite.with_protocol(protocol)

    def with_protocol(self, protocol: str) -> Suite:
        """This suite run under `protocol`. Under `paper`: every perturbation that has a paper
        rule takes rule=paper (unless the suite set its rule itself); one that takes the
        severity `paper` (paper 000's rule attacks) runs at it alone, and one whose paper rule
        counts (middle-swap's sentences) takes its `paper_grid` (unless the suite wrote its
        grid); a suite whose perturbations all come from papers 000 and 003 keeps its first
        seed only. Under `default`, what the paper protocol set goes again."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol '{protocol}' is unknown; choose one of "
                             f"{', '.join(PROTOCOLS)}")
        plans = []
        for plan in self.perturbations:
            pert, ruled = plan.perturbation, plan.ruled_by_protocol
            grid, graded = plan.grid, plan.graded_grid
            if protocol == "paper" and has_paper_rule(type(pert)) and "rule" not in pert.params:
                pert, ruled = get_perturbation(pert.name, **{**pert.params, "rule": "paper"}), True
            elif protocol == "default" and ruled:
                params = {k: v for k, v in pert.params.items() if k != "rule"}
                pert, ruled = get_perturbation(pert.name, **params), False
            if protocol == "paper" and "paper" in getattr(type(pert), "SEVERITY_NAMES", ()) \
                    and not plan.grid_given and graded is None:
                grid, graded = ("paper",), plan.grid
            elif protocol == "paper" and ruled and type(pert).paper_grid \
                    and not plan.grid_given and graded is None:  # its paper rule counts
                grid, graded = tuple(type(pert).paper_grid), plan.grid
            elif protocol == "default" and graded is not None:
                grid, graded = graded, None
            plans.append(PerturbationPlan(pert, grid, plan.tasks, ruled, plan.grid_given, graded))
        seeds, before = self.seeds, self.seeds_before_protocol
        if protocol == "paper" and before is None and len(seeds) > 1 and plans and all(
                set(type(p.perturbation).source_papers or ("?",)) <= ONE_SET_PAPERS
                for p in plans):
            seeds, before = seeds[:1], seeds
        elif protocol == "default" and before is not None:
            seeds, before = before, None
        return Suite(self.name, plans, seeds, self.analyses, self.description,
                     dict(self.options), protocol, dict(self.expect), self.generator,
                     dict(self.generation), seeds_before_protocol=before, source=self.source)


#: top-level keys of a suite file
SUITE_KEYS = ("name", "description", "perturbations", "seeds", "analyses", "options", "protocol",
              "expect", "generator", "generation")
#: keys of a perturbation's entry besides its own parameters
PLAN_KEYS = ("grid", "tasks")
#: suite options the run itself reads (the sequential design of `run --sequential`, the text
#: length limit)
RUN_OPTIONS = ("sequential_looks", "alpha", "futility", "zero_method", "max_chars")


#: options whose values can be checked at load time: (kind, lowest, highest), bounds inclusive
_OPTION_VALUES: dict[str, tuple[type, float, float]] = {
    "rel_tol": (float, 0.0, float("inf")), "abs_tol": (float, 0.0, float("inf")),
    "tol_share": (float, 0.0, float("inf")),
    "max_missing": (float, 0.0, 1.0), "alpha": (float, 0.0, 1.0),
    "futility": (float, 0.0, 1.0), "min_effect": (float, 0.0, float("inf")),
    "n_boot": (int, 1, float("inf")), "seed": (int, 0, float("inf")),
    "sequential_looks": (int, 1, float("inf")), "bins": (int, 1, float("inf")),
    "max_chars": (int, 0, float("inf")),
}


def _check_option_values(options: Mapping[str, Any], where: str) -> None:
    """Numeric options are numbers in range, so a typo fails before any scoring."""
    for key, (kind, low, high) in _OPTION_VALUES.items():
        if key not in options:
            continue
        value = options[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (kind is int and not float(value).is_integer()):
            what = "a whole number" if kind is int else "a number"
            raise ConfigError(f"{where}: '{key}' must be {what}, got {value!r}")
        if not low <= value <= high:
            upper = "" if high == float("inf") else f" and <= {high:g}"
            raise ConfigError(f"{where}: '{key}' must be >= {low:g}{upper}, got {value!r}")


def _plan(name: str, options: Any, where: str) -> PerturbationPlan:
    """One perturbation's entry: its grid, tasks and parameters, each checked."""
    field_name = f"{where}: field 'perturbations.{name}'"
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(f"{field_name} must be a mapping of options (grid, tasks, parameters), "
                          f"got {options!r}")
    options = {str(k): v for k, v in (options or {}).items()}
    try:
        perturbation_cls = get_perturbation_class(name)
    except KeyError as exc:
        raise UnknownNameError(f"{field_name}: {exc}") from None
    grid = options.pop("grid", None)
    tasks = options.pop("tasks", None)
    if isinstance(tasks, str):
        tasks = [tasks]
    if tasks is not None:
        if not isinstance(tasks, list) or not tasks:
            raise ConfigError(f"{where}: field 'perturbations.{name}.tasks' must be a "
                              "non-empty list of task names")
        for task in tasks:
            if task not in TASKS:
                raise unknown_name_error("task", task, TASKS,
                                         f"{where}: field 'perturbations.{name}.tasks'")
    _check_rule(name, options, where)
    check_params(perturbation_cls, options, field_name)
    pert = get_perturbation(name, **options)
    severities = _grid(perturbation_cls, grid, f"{where}: field 'perturbations.{name}.grid'")
    return PerturbationPlan(pert, severities, tuple(tasks) if tasks is not None else None,
                            grid_given=grid is not None)


def _grid(cls: type[Perturbation], grid: Any, where: str) -> tuple[Severity, ...]:
    """A grid's severities. Numbers are positive and finite (a ratio in (0, 1], a count a whole
    number); a perturbation graded by numbers takes a name only where it declares one (such as
    `paper`). One value may stand alone."""
    if grid is None:
        return tuple(cls.grid)
    values = list(grid) if isinstance(grid, list | tuple) else [grid]
    if not values:
        raise ConfigError(f"{where}: give at least one severity, e.g. {list(cls.grid)}")
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in cls.grid)
    whole = numeric and all(isinstance(v, int) for v in cls.grid)
    names = getattr(cls, "SEVERITY_NAMES", ())
    for value in values:
        if isinstance(value, str) and value.strip():
            if numeric and value not in names:
                raise ConfigError(
                    f"{where}: {value!r} is not a severity of {cls.name}: its "
                    f"'{cls.severity_param}' is a number, e.g. {list(cls.grid)}"
                    + (f", or one of {', '.join(names)}" if names else ""))
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: {value!r} is not a severity of {cls.name}; its grid "
                              f"looks like {list(cls.grid)}")
        if not 0 < value < float("inf"):
            raise ConfigError(f"{where}: {value!r} is not a positive number ({cls.name}'s "
                              f"'{cls.severity_param}', e.g. {list(cls.grid)})")
        if whole and not float(value).is_integer():
            raise ConfigError(f"{where}: {value!r} is not a whole number ({cls.name}'s "
                              f"'{cls.severity_param}' counts, e.g. {list(cls.grid)})")
        if cls.severity_param == "ratio" and value > 1 and not cls.paper_grid:
            # (under paper 002's rule middle-swap's severity counts sentences)
            raise ConfigError(f"{where}: {value!r} is not a ratio in (0, 1] (the share of the "
                              "text to damage)")
    if len(set(map(repr, values))) != len(values):
        raise ConfigError(f"{where}: a severity is listed twice in {values}")
    return tuple(int(v) if whole and not isinstance(v, str) else v for v in values)


#: the most seeds a suite may ask for: each seed repeats every perturbation of every example,
#: and a typo (`seeds: 1000000000`) would fill the memory before anything ran
MAX_SEEDS = 10_000


def parse_seeds(seeds: Any, where: str) -> tuple[int, ...]:
    """`seeds: N` (seeds 0..N-1, 1 <= N <= MAX_SEEDS) or a list of distinct whole numbers;
    `where` names the file and field (or the option) in errors."""
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ConfigError(f"{where}: {seeds} seeds run nothing; give a number >= 1 or a list "
                              "of seeds")
        if seeds > MAX_SEEDS:
            raise ConfigError(f"{where}: {seeds:,} seeds is more than {MAX_SEEDS:,}; each seed "
                              "repeats every perturbation of every example (papers use 1 to 5)")
        return tuple(range(seeds))
    if isinstance(seeds, list | tuple) and seeds:
        bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, int) or s < 0]
        if bad:
            raise ConfigError(f"{where}: {bad[0]!r} is not a seed (a whole number >= 0)")
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"{where}: a seed is listed twice in {list(seeds)}")
        if len(seeds) > MAX_SEEDS:
            raise ConfigError(f"{where}: {len(seeds):,} seeds is more than {MAX_SEEDS:,}")
        return tuple(seeds)
    raise ConfigError(f"{where} must be a number of seeds (e.g. 5) or a non-empty list of seeds "
                      f"(e.g. [0, 1, 2]), got {seeds!r}")


def _analyses(analyses: Any, where: str) -> tuple[str, ...]:
    """`analyses:` as a list of names (checked against the analyses when a job is built); one
    name alone is a one-item list."""
    names = [analyses] if isinstance(analyses, str) else analyses
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{where}: field 'analyses' must be a list of analysis names, e.g. "
                          f"[blindspot], got {analyses!r}")
    return tuple(names)


def has_paper_rule(cls: type[Perturbation]) -> bool:
    """Whether a perturbation follows its paper differently under rule=paper."""
    return bool(getattr(cls, "paper_rule", ""))


def _check_rule(name: str, options: Mapping[str, Any], where: str) -> None:
    """A `rule:` option must be known, and `paper` only where the perturbation has one."""
    if "rule" not in options:
        return
    rule, cls = str(options["rule"]), registry().get(name)
    if rule not in PROTOCOLS:
        raise ConfigError(f"{where}: field 'perturbations.{name}.rule': '{rule}' is unknown; "
                          f"choose one of {', '.join(PROTOCOLS)}")
    if rule == "paper" and cls is not None and not has_paper_rule(cls):
        raise ConfigError(f"{where}: field 'perturbations.{name}.rule': '{name}' has no "
                          "paper rule (it already follows its paper, or is not from one)")


#: keys of a suite's `generation:` mapping (settings of the LLM generation stage)
GENERATION_KEYS = ("max_reasks", "verifier", "shots")


def _list_entry(entry: Any, where: str) -> tuple[str, dict[str, Any]]:
    """A `perturbations:` list item: a name, or a mapping with `name` and its options (so one
    perturbation can appear twice, e.g. with another grid for some tasks)."""
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
        options = {k: v for k, v in entry.items() if k != "name"}
        return str(entry["name"]), options
    raise ConfigError(f"{where}: each item of 'perturbations' must be a name or a mapping with "
                      f"'name' (and options such as grid, tasks), got {entry!r}")


def builtin_suites() -> list[str]:
    folder = resources.files("evalstress") / "suites"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                  if p.name.endswith(".yaml"))


def load_suite(name_or_path: str | Path) -> Suite:
    """A built-in suite by name, or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        where = str(path)
        try:
            text = read_user_text(path, "a suite")
        except DataError as exc:  # not UTF-8 (with the line and byte), unreadable, a folder
            raise ConfigError(str(exc)) from None
    else:
        resource = resources.files("evalstress") / "suites" / f"{name_or_path}.yaml"
        if not resource.is_file():
            raise ConfigError(f"no suite '{name_or_path}': built-in suites are "
                             f"{', '.join(builtin_suites())}, or give a YAML file path")
        where = f"suite {name_or_path}"
        return Suite.from_dict(parse_packaged_yaml(resource.read_text(encoding="utf-8")),
                               where=where)
    try:
        data = parse_user_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: invalid YAML ({exc})") from None
    return Suite.from_dict(data, where=where)


def custom_suite(perturbations: Sequence[str], seeds: int | Sequence[int] = 5,
                 analyses: Sequence[str] = ("blindspot",), protocol: str = "default") -> Suite:
    return Suite.from_dict({"name": "custom", "perturbations": list(perturbations),
                            "seeds": seeds if isinstance(seeds, int) else list(seeds),
                            "analyses": [analyses] if isinstance(analyses, str) else list(analyses),
                            "protocol": protocol})
