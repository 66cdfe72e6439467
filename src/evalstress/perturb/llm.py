"""LLM-written perturbations: attacks described as data (an instruction, demonstrations, bounds).

Papers 000 and 003 build half of their attacks by prompting a strong LLM with an instruction and
hand-written demonstrations. Here each such attack is one YAML file under `perturb/prompts/`
(our own instructions and demonstrations) and becomes a registered perturbation with
`method = "llm"`: the runner's generation stage (`evalstress.engine.generation`) asks the run's
generator for the rewrite, and `perturb.llm_checks` decides whether the answer really is the
damage the attack promises. A user prompt file (`--perturbation-prompts FILE`, see
docs/perturbation-prompts.md) overrides instructions, demonstrations, bounds and checks per
attack, or adds new attacks, without touching code.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import yaml

from evalstress.core.data import TASKS
from evalstress.core.packaged import parse_packaged_yaml, read_packaged_yaml
from evalstress.core.params import ParamKind, declare, one_of, whole_number
from evalstress.core.userfile import DataError, parse_user_yaml, read_user_text
from evalstress.perturb import base
from evalstress.perturb.base import Perturbation, PerturbContext, Severity, Skip, registry
from evalstress.perturb.common import DEFAULT_LEVEL, RULES

#: how each task's text is named in a prompt
TASK_LABELS = {
    "summarization": "a summary of a news article",
    "dialogue": "a summary of a conversation",
    "story": "the ending of a story",
    "qa": "an answer to a question",
    "translation": "a translation",
    "data-to-text": "a description of structured data",
    "dialogue-response": "a reply in a conversation",
    "question-generation": "a question about a passage",
    "open-ended": "a text",
}

SYSTEM = ("You rewrite texts to build test cases for text-quality evaluators. You make exactly "
          "the change you are asked for, in the way the examples show, and nothing else.")
ANSWER_FORMAT = ("The text to change comes between <text> and </text>. Answer with the changed "
                 "text only, between <text> and </text>, with no comments before or after it.")

#: fields an attack may set (built-in files and user files alike)
ATTACK_FIELDS = ("name", "attack", "family", "level", "target", "damages", "preserves", "papers",
                 "description", "grid", "severity_param", "instruction", "demonstrations",
                 "add_demonstrations", "bounds", "checks", "requires", "levels", "paper")
LEVEL_FIELDS = ("instruction", "bounds", "checks", "requires")
#: keys of an attack's `paper:` mapping, and what one task's severity there may set
PAPER_FIELDS = ("rule", "tasks")
PAPER_LEVEL_FIELDS = (*LEVEL_FIELDS, "demonstrations")
#: tasks a paper does not cover take the settings of the task it treats them like (paper 003:
#: paragraph outputs follow its summarization row, as in the `dhp` suites)
PAPER_TASK_ROWS = {"dialogue": "summarization", "data-to-text": "summarization",
                   "open-ended": "summarization"}
DEMO_FIELDS = ("task", "original", "from", "perturbed", "level")
BOUND_FIELDS = ("edit_ratio", "length_change", "edits")
REQUIRE_FIELDS = ("entities", "sentences", "words")


class PromptError(ValueError):
    """A bad prompt file or attack definition, located by file, attack and field."""

    def __init__(self, where: str, attack: str | None, field_name: str | None, message: str):
        place = where
        if attack:
            place += f", attack '{attack}'"
        if field_name:
            place += f", field '{field_name}'"
        super().__init__(f"{place}: {message}")


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(known)}"


@dataclass(frozen=True)
class Bounds:
    """Limits on how far a rewrite may move from the original (None: no limit on that side).

    `edit_ratio` is the word-level Levenshtein distance over the original's word count (paper
    002's noise ratio), `length_change` is (new words - old words) / old words, `edits` the
    absolute word-level distance (graded damage such as "one error" vs "several")."""

    edit_ratio: tuple[float | None, float | None] = (None, None)
    length_change: tuple[float | None, float | None] = (None, None)
    edits: tuple[float | None, float | None] = (None, None)

    def merged(self, other: Mapping[str, Any]) -> Bounds:
        return replace(self, **dict(other))


@dataclass(frozen=True)
class Demonstration:
    """One original -> perturbed pair; `level` limits it to one severity (None: every one)."""

    task: str
    original: str
    perturbed: str
    level: str | None = None


@dataclass(frozen=True)
class Resolved:
    """What one severity of an attack asks for and accepts."""

    instruction: str
    demonstrations: tuple[Demonstration, ...]
    bounds: Bounds
    checks: Mapping[str, Mapping[str, Any]]
    requires: Mapping[str, int]


@dataclass(frozen=True)
class AttackSpec:
    """An LLM-written attack as data; `resolve(severity)` gives what one severity uses."""

    name: str
    instruction: str
    demonstrations: tuple[Demonstration, ...]
    level: str = "word"
    family: str = "llm"
    attack: str = ""
    target: str | None = None
    damages: tuple[str, ...] = ()
    preserves: tuple[str, ...] = ()
    papers: tuple[str, ...] = ()
    description: str = ""
    grid: tuple[str, ...] = (DEFAULT_LEVEL,)
    severity_param: str = "level"
    bounds: Bounds = field(default_factory=Bounds)
    checks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    requires: Mapping[str, int] = field(default_factory=dict)
    levels: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = ""
    #: the paper's own setting per task and severity (`rule: paper`): what differs from `levels`
    paper: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    paper_rule: str = ""  # one line saying what rule=paper changes

    def resolve(self, severity: Severity, task: str | None = None,
                paper: bool = False) -> Resolved:
        """What one severity asks for; with `paper`, the paper's setting for `task` (its level
        instruction and demonstrations replace ours, its bounds, checks and requires merge
        over ours)."""
        key = str(severity)
        if key not in self.grid:
            raise ValueError(f"attack '{self.name}' has no severity {severity!r}; its grid is "
                             f"{', '.join(self.grid)}")
        extra = dict(self.levels.get(key, {}))
        own: Mapping[str, Any] = {}
        if paper and task is not None:
            rows = self.paper.get(task) or self.paper.get(PAPER_TASK_ROWS.get(task, ""), {})
            own = rows.get(key, {})
        for name in ("bounds", "checks", "requires"):
            if own.get(name):
                extra[name] = {**dict(extra.get(name) or {}), **dict(own[name])}
        if own.get("instruction"):
            extra["instruction"] = own["instruction"]
        instruction = self.instruction.strip()
        if extra.get("instruction"):
            instruction += "\n" + str(extra["instruction"]).strip()
        demos = tuple(own["demonstrations"]) if own.get("demonstrations") else tuple(
            d for d in self.demonstrations if d.level in (None, key))
        checks = {**self.checks, **dict(extra.get("checks") or {})}
        checks = {k: v for k, v in checks.items() if v is not None}  # `name: null` drops one
        return Resolved(instruction, demos, self.bounds.merged(extra.get("bounds") or {}),
                        checks, {**self.requires, **dict(extra.get("requires") or {})})


# --- parsing attack definitions -----------------------------------------------------------------


def _pair(value: Any, where: str, attack: str, name: str) -> tuple[float | None, float | None]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise PromptError(where, attack, name, "must be a pair [low, high] (null for no limit)")
    out: list[float | None] = []
    for item in value:
        if item is not None and not isinstance(item, int | float):
            raise PromptError(where, attack, name, f"bound {item!r} is not a number")
        out.append(None if item is None else float(item))
    low, high = out
    if low is not None and high is not None and low > high:
        raise PromptError(where, attack, name, f"low {low} is above high {high}")
    return low, high


def _bounds(raw: Any, where: str, attack: str, prefix: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise PromptError(where, attack, prefix, "must map bound names to [low, high] pairs")
    out = {}
    for key, value in raw.items():
        if key not in BOUND_FIELDS:
            raise PromptError(where, attack, f"{prefix}.{key}",
                              "unknown bound" + _did_you_mean(str(key), BOUND_FIELDS))
        out[str(key)] = _pair(value, where, attack, f"{prefix}.{key}")
    return out


def _checks(raw: Any, where: str, attack: str, prefix: str) -> dict[str, Any]:
    from evalstress.perturb.llm_checks import CHECKS

    if isinstance(raw, list):  # a plain list of names: default parameters
        raw = {name: {} for name in raw}
    if not isinstance(raw, Mapping):
        raise PromptError(where, attack, prefix, "must list check names or map them to "
                          "parameters")
    out: dict[str, Any] = {}
    for name, params in raw.items():
        if name not in CHECKS:
            raise PromptError(where, attack, f"{prefix}.{name}",
                              "unknown check" + _did_you_mean(str(name), sorted(CHECKS)))
        if params is None:
            out[str(name)] = None
            continue
        if not isinstance(params, Mapping):
            raise PromptError(where, attack, f"{prefix}.{name}", "parameters must be a mapping")
        allowed = CHECKS[str(name)].params
        for key in params:
            if key not in allowed:
                raise PromptError(where, attack, f"{prefix}.{name}.{key}", "unknown parameter"
                                  + _did_you_mean(str(key), allowed or ("(none)",)))
        out[str(name)] = dict(params)
    return out


def _requires(raw: Any, where: str, attack: str, prefix: str) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        raise PromptError(where, attack, prefix, f"must map {', '.join(REQUIRE_FIELDS)} to counts")
    out = {}
    for key, value in raw.items():
        if key not in REQUIRE_FIELDS:
            raise PromptError(where, attack, f"{prefix}.{key}",
                              "unknown requirement" + _did_you_mean(str(key), REQUIRE_FIELDS))
        if not isinstance(value, int) or value < 0:
            raise PromptError(where, attack, f"{prefix}.{key}", "must be a count >= 0")
        out[str(key)] = value
    return out


def _text_field(value: Any, where: str, attack: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PromptError(where, attack, name, "must be a non-empty text")
    return value


def _demonstrations(raw: Any, where: str, attack: str, name: str,
                    grid: Sequence[str]) -> list[Demonstration]:

    if not isinstance(raw, list):
        raise PromptError(where, attack, name, "must be a list of {task, original, perturbed}")
    originals = shared_originals()
    out = []
    for i, item in enumerate(raw):
        at = f"{name}[{i}]"
        if not isinstance(item, Mapping):
            raise PromptError(where, attack, at, "must be a mapping with task, original, perturbed")
        for key in item:
            if key not in DEMO_FIELDS:
                raise PromptError(where, attack, f"{at}.{key}",
                                  "unknown field" + _did_you_mean(str(key), DEMO_FIELDS))
        if "from" in item:
            key = str(item["from"])
            if key not in originals:
                raise PromptError(where, attack, f"{at}.from", f"no shared original '{key}'"
                                  + _did_you_mean(key, sorted(originals)))
            task, original = originals[key]
            task = str(item.get("task", task))
        else:
            original = _text_field(item.get("original"), where, attack, f"{at}.original")
            task = str(item.get("task", "open-ended"))
        if task not in TASKS:
            raise PromptError(where, attack, f"{at}.task", f"unknown task '{task}'"
                              + _did_you_mean(task, TASKS))
        perturbed = _text_field(item.get("perturbed"), where, attack, f"{at}.perturbed")
        level = item.get("level")
        if level is not None and str(level) not in grid:
            raise PromptError(where, attack, f"{at}.level", f"'{level}' is not in the grid "
                              f"{', '.join(grid)}")
        if " ".join(perturbed.split()) == " ".join(original.split()):
            raise PromptError(where, attack, f"{at}.perturbed", "is the original unchanged")
        out.append(Demonstration(task, original.strip(), perturbed.strip(),
                                 None if level is None else str(level)))
    return out


def _tuple_of(value: Any, where: str, attack: str, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str | int) for v in value):
        raise PromptError(where, attack, name, "must be a list of names")
    return tuple(str(v) for v in value)


def parse_attack(raw: Mapping[str, Any], where: str, name: str,
                 base: AttackSpec | None = None) -> AttackSpec:
    """An AttackSpec from a mapping of fields; with `base`, only the given fields change
    (`bounds`, `checks`, `requires` and `levels` merge key by key; `demonstrations` replaces the
    list, `add_demonstrations` appends to it)."""
    from evalstress.criteria import aspects

    if not isinstance(raw, Mapping):
        raise PromptError(where, name, None, "must be a mapping of fields")
    for key in raw:
        if key not in ATTACK_FIELDS:
            raise PromptError(where, name, str(key),
                              "unknown field" + _did_you_mean(str(key), ATTACK_FIELDS))
    if base is None:
        for required in ("instruction", "demonstrations", "level", "description"):
            if required not in raw:
                raise PromptError(where, name, required, "is required for a new attack")
        if "damages" not in raw and str(raw.get("attack", "")) not in _table_attacks():
            raise PromptError(where, name, "damages", "is required for a new attack (unless "
                              "`attack` names a row of the expectation matrix, e.g. "
                              "'000:negation')")
    if "attack" in raw and raw["attack"] and str(raw["attack"]) not in _table_attacks() \
            and ":" not in str(raw["attack"]):
        raise PromptError(where, name, "attack", f"'{raw['attack']}' is not an attack "
                          "identity; use '<paper>:<attack>' such as "
                          + ", ".join(sorted(_table_attacks())[:3]))
    spec = base or AttackSpec(name, "", ())
    changes: dict[str, Any] = {"name": name, "source": where}
    for key in ("attack", "family", "description", "severity_param"):
        if key in raw:
            changes[key] = _text_field(raw[key], where, name, key)
    if "instruction" in raw:
        changes["instruction"] = _text_field(raw["instruction"], where, name, "instruction")
    if "level" in raw:
        if raw["level"] not in ("char", "word", "sentence"):
            raise PromptError(where, name, "level", "must be char, word or sentence")
        changes["level"] = raw["level"]
    known_aspects = list(aspects())
    for key in ("damages", "preserves"):
        if key in raw:
            values = _tuple_of(raw[key], where, name, key)
            for value in values:
                if value not in known_aspects:
                    raise PromptError(where, name, key, f"unknown aspect '{value}'"
                                      + _did_you_mean(value, known_aspects))
            changes[key] = values
    if "target" in raw:
        target = str(raw["target"])
        if target not in known_aspects:
            raise PromptError(where, name, "target", f"unknown aspect '{target}'"
                              + _did_you_mean(target, known_aspects))
        changes["target"] = target
    if "papers" in raw:
        changes["papers"] = _tuple_of(raw["papers"], where, name, "papers")
    grid = _tuple_of(raw["grid"], where, name, "grid") if "grid" in raw else spec.grid
    if not grid:
        raise PromptError(where, name, "grid", "needs at least one severity")
    changes["grid"] = grid
    if "bounds" in raw:
        changes["bounds"] = spec.bounds.merged(_bounds(raw["bounds"], where, name, "bounds"))
    if "checks" in raw:
        changes["checks"] = {**spec.checks, **_checks(raw["checks"], where, name, "checks")}
    if "requires" in raw:
        changes["requires"] = {**spec.requires,
                               **_requires(raw["requires"], where, name, "requires")}
    levels = {k: dict(v) for k, v in spec.levels.items()}
    if "levels" in raw:
        if not isinstance(raw["levels"], Mapping):
            raise PromptError(where, name, "levels", "must map severities to their settings")
        for level, settings in raw["levels"].items():
            at = f"levels.{level}"
            if str(level) not in grid:
                raise PromptError(where, name, at, f"'{level}' is not in the grid "
                                  f"{', '.join(grid)}")
            if not isinstance(settings, Mapping):
                raise PromptError(where, name, at, "must be a mapping")
            merged = levels.setdefault(str(level), {})
            for key, value in settings.items():
                if key not in LEVEL_FIELDS:
                    raise PromptError(where, name, f"{at}.{key}",
                                      "unknown field" + _did_you_mean(str(key), LEVEL_FIELDS))
                if key == "instruction":
                    merged[key] = _text_field(value, where, name, f"{at}.instruction")
                elif key == "bounds":
                    merged[key] = {**merged.get(key, {}),
                                   **_bounds(value, where, name, f"{at}.bounds")}
                elif key == "checks":
                    merged[key] = {**merged.get(key, {}),
                                   **_checks(value, where, name, f"{at}.checks")}
                else:
                    merged[key] = {**merged.get(key, {}),
                                   **_requires(value, where, name, f"{at}.requires")}
    changes["levels"] = levels
    if "paper" in raw:
        changes["paper_rule"], changes["paper"] = _paper(raw["paper"], where, name, grid)
    demos = list(spec.demonstrations)
    if "demonstrations" in raw:
        demos = _demonstrations(raw["demonstrations"], where, name, "demonstrations", grid)
    if "add_demonstrations" in raw:
        demos += _demonstrations(raw["add_demonstrations"], where, name, "add_demonstrations",
                                 grid)
    changes["demonstrations"] = tuple(demos)
    out = replace(spec, **changes)
    for level in out.grid:
        if not out.resolve(level).demonstrations:
            raise PromptError(where, name, "demonstrations", f"severity '{level}' has no "
                              "demonstration")
    if not set(out.damages).isdisjoint(out.preserves):
        raise PromptError(where, name, "preserves", "names an aspect that `damages` also names")
    return out


def _paper(raw: Any, where: str, attack: str, grid: Sequence[str]
           ) -> tuple[str, dict[str, dict[str, dict[str, Any]]]]:
    """An attack's `paper:` mapping: `rule` (one line for the catalogue) and `tasks`, per task
    and severity the settings that differ from ours (instruction, bounds, checks, requires,
    demonstrations)."""

    if not isinstance(raw, Mapping):
        raise PromptError(where, attack, "paper", "must map rule and tasks")
    for key in raw:
        if key not in PAPER_FIELDS:
            raise PromptError(where, attack, f"paper.{key}",
                              "unknown field" + _did_you_mean(str(key), PAPER_FIELDS))
    rule = _text_field(raw.get("rule"), where, attack, "paper.rule")
    tasks = raw.get("tasks")
    if not isinstance(tasks, Mapping) or not tasks:
        raise PromptError(where, attack, "paper.tasks", "must map tasks to their severities")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for task, levels in tasks.items():
        at = f"paper.tasks.{task}"
        if str(task) not in TASKS:
            raise PromptError(where, attack, at, "unknown task" + _did_you_mean(str(task), TASKS))
        if not isinstance(levels, Mapping):
            raise PromptError(where, attack, at, "must map severities to their settings")
        for level, settings in levels.items():
            here = f"{at}.{level}"
            if str(level) not in grid:
                raise PromptError(where, attack, here, f"'{level}' is not in the grid "
                                  f"{', '.join(grid)}")
            if not isinstance(settings, Mapping):
                raise PromptError(where, attack, here, "must be a mapping")
            parsed: dict[str, Any] = {}
            for key, value in settings.items():
                if key not in PAPER_LEVEL_FIELDS:
                    raise PromptError(where, attack, f"{here}.{key}", "unknown field"
                                      + _did_you_mean(str(key), PAPER_LEVEL_FIELDS))
                if key == "instruction":
                    parsed[key] = _text_field(value, where, attack, f"{here}.instruction")
                elif key == "bounds":
                    parsed[key] = _bounds(value, where, attack, f"{here}.bounds")
                elif key == "checks":
                    parsed[key] = _checks(value, where, attack, f"{here}.checks")
                elif key == "requires":
                    parsed[key] = _requires(value, where, attack, f"{here}.requires")
                else:
                    parsed[key] = tuple(replace(d, level=str(level)) for d in _demonstrations(
                        value, where, attack, f"{here}.demonstrations", grid))
            out.setdefault(str(task), {})[str(level)] = parsed
    return rule, out


def _table_attacks() -> set[str]:
    from evalstress.criteria import expectations

    return set(expectations())


# --- built-in attacks ---------------------------------------------------------------------------


@functools.cache
def shared_originals() -> dict[str, tuple[str, str]]:
    """Originals the built-in demonstrations share (`from: news-1`): key -> (task, text)."""
    raw = read_packaged_yaml("perturb", "prompts", "_originals.yaml")
    return {str(k): (str(v["task"]), str(v["text"]).strip()) for k, v in raw.items()}


@functools.cache
def builtin_attacks() -> dict[str, AttackSpec]:
    """Every built-in attack file (`perturb/prompts/<name>.yaml`), by name."""
    folder = resources.files("evalstress") / "perturb" / "prompts"
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml") or entry.name.startswith("_"):
            continue
        where = f"prompts/{entry.name}"
        raw = parse_packaged_yaml(entry.read_text("utf-8"))
        if not isinstance(raw, Mapping) or "name" not in raw:
            raise PromptError(where, None, "name", "an attack file needs a name")
        name = str(raw["name"])
        out[name] = parse_attack(raw, where, name)
    return out


# --- the perturbation class family --------------------------------------------------------------


class LLMPerturbation(Perturbation):
    """A perturbation whose text an LLM writes; the generation stage runs it, not `apply`.

    Parameters (suite options or `-p` specs): `shots` (how many demonstrations to show, those
    of the text's own task first; default all)."""

    method = "llm"
    default_spec: ClassVar[AttackSpec]
    #: `rule: paper` gives the paper's own setting per task where the attack has one (its
    #: `paper:` field; `paper_rule` says what changes); `--protocol paper` sets it
    PARAMS: ClassVar[Mapping[str, ParamKind]] = declare(shots=whole_number(0),
                                                        rule=one_of(RULES))
    paper_rule: ClassVar[str] = ""

    def __init__(self, /, **params: Any):
        super().__init__(**params)
        self.spec: AttackSpec = type(self).default_spec

    def resolved(self, severity: Severity, task: str) -> Resolved:
        """What this attack asks of a text of `task` at `severity`, under its rule."""
        return self.spec.resolve(severity, task, paper=self.params.get("rule") == "paper")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by definition: the class is made at run time from its spec (`_class_for`),
        so worker processes (`--workers N`) cannot find it by name."""
        return (_unpickle, (type(self).default_spec, dict(self.__dict__)))

    def with_spec(self, spec: AttackSpec) -> LLMPerturbation:
        """This perturbation with another attack definition (a user prompt file's override)."""
        self.spec = spec
        return self

    def transform(self, ctx: PerturbContext, severity: Severity, rng: Any) -> str | Skip:
        raise RuntimeError(f"'{self.name}' is written by an LLM: run it with a generator "
                           "(`evalstress run --generator SPEC`, or evalstress.engine.generation)")

    def messages(self, text: str, task: str, severity: Severity,
                 shots: int | None = None) -> list[dict[str, str]]:
        """The chat that asks for this attack on `text`: instruction, demonstrations as
        earlier turns, then the text.

        All demonstrations are shown in their file order, so every request of an attack and
        severity shares one long prefix (servers with prefix caching, such as vLLM and
        llama.cpp, then process it once). With `shots`, the text's own task is picked first
        and the picked demonstrations keep their file order."""
        resolved = self.resolved(severity, task)
        demos = list(resolved.demonstrations)
        shots = self.params.get("shots", shots)  # the perturbation's own setting wins
        if shots is not None:
            keep = int(shots)
            ranked = sorted(range(len(demos)), key=lambda i: (demos[i].task != task, i))
            chosen = set(ranked[:keep])
            demos = [d for i, d in enumerate(demos) if i in chosen]
        chat = [{"role": "system",
                 "content": f"{SYSTEM}\n\nThe change: {resolved.instruction}\n\n{ANSWER_FORMAT}"}]
        for demo in demos:
            chat.append({"role": "user", "content": _ask(demo.original, demo.task)})
            chat.append({"role": "assistant", "content": f"<text>\n{demo.perturbed}\n</text>"})
        chat.append({"role": "user", "content": _ask(text, task)})
        return chat

    @classmethod
    def info(cls) -> dict[str, Any]:
        return {**super().info(), "target": cls.default_spec.target}


def _ask(text: str, task: str) -> str:
    return (f"This is {TASK_LABELS.get(task, 'a text')}. Make the change.\n"
            f"<text>\n{text.strip()}\n</text>")


def _class_for(spec: AttackSpec) -> type[LLMPerturbation]:
    from evalstress.criteria import expectations

    damages, preserves, level = spec.damages, spec.preserves, spec.level
    row = expectations().get(spec.attack) if spec.attack else None
    if row is not None and not damages:
        damages = tuple(a for a, v in row.expected.items() if v)
        preserves = tuple(a for a in row.expected if a in row.should_stay)
    attrs = {
        "family": spec.family, "level": level, "damages": damages, "preserves": preserves,
        "severity_param": spec.severity_param, "grid": spec.grid,
        "description": spec.description, "source_papers": spec.papers, "attack": spec.attack,
        "default_spec": spec, "paper_rule": spec.paper_rule, "__doc__": spec.description,
        "__module__": __name__,
    }
    cls_name = "".join(part.title() for part in spec.name.replace("_", "-").split("-")) + "LLM"
    cls: type[LLMPerturbation] = type(cls_name, (LLMPerturbation,), attrs)
    cls.name = spec.name
    return cls


def _unpickle(spec: AttackSpec, state: dict[str, Any]) -> LLMPerturbation:
    cls = _class_for(spec)
    made = cls.__new__(cls)
    made.__dict__.update(state)
    return made


def register_attack(spec: AttackSpec, *, replace_existing: bool = False) -> type[LLMPerturbation]:
    """Register an attack as a perturbation named `spec.name`. A name held by a perturbation that
    is not an LLM attack is an error; an LLM attack of that name is replaced only when asked."""

    current = base.registry().get(spec.name)
    if current is not None:
        if not (isinstance(current, type) and issubclass(current, LLMPerturbation)):
            raise ValueError(f"'{spec.name}' is already a {current.method}-based perturbation; "
                             "name the new attack differently")
        if not replace_existing:
            raise ValueError(f"attack '{spec.name}' is registered twice")
    cls = _class_for(spec)
    base.PERTURBATIONS.add(spec.name, cls, replace=True)
    return cls


def _register_builtins() -> None:
    for spec in builtin_attacks().values():
        register_attack(spec)


_register_builtins()


# --- user prompt files --------------------------------------------------------------------------


@dataclass
class PromptFile:
    """A user's prompt file: overridden attacks (applied to a suite's perturbations) and the
    names of attacks it added to the registry."""

    path: str
    overrides: dict[str, AttackSpec]
    added: list[str]

    def apply(self, perturbations: Sequence[Perturbation]) -> int:
        """Give the suite's LLM perturbations their overridden definitions; returns how many."""
        count = 0
        for pert in perturbations:
            if isinstance(pert, LLMPerturbation) and pert.name in self.overrides:
                pert.with_spec(self.overrides[pert.name])
                count += 1
        return count


def load_prompt_file(path: str | Path) -> PromptFile:
    """Read a prompt file: a mapping of attack name -> fields (see docs/perturbation-prompts.md).

    A known attack's fields override the built-in ones; an unknown name is a new attack, which
    needs instruction, demonstrations, level, damages and description, and is registered so
    suites and `-p` can use it. Errors name the file, the attack and the field."""

    file = Path(path)
    where = str(file)
    try:
        raw = parse_user_yaml(read_user_text(file, "a prompt file"))
    except DataError as exc:  # missing, a folder, unreadable, not UTF-8 (line and byte)
        place = where if exc.line is None else f"{where}, line {exc.line}"
        raise PromptError(place, None, None, exc.message) from None
    except yaml.YAMLError as exc:
        raise PromptError(where, None, None, f"invalid YAML ({exc})") from None
    if not isinstance(raw, Mapping) or not raw:
        raise PromptError(where, None, None, "must map attack names to their fields")
    builtins = builtin_attacks()
    reg = registry()
    overrides: dict[str, AttackSpec] = {}
    added: list[str] = []
    for name, fields in raw.items():
        name = str(name)
        current = reg.get(name)
        if current is not None and not issubclass(current, LLMPerturbation):
            raise PromptError(where, name, None, f"'{name}' is a {current.method}-based "
                              "perturbation, not an LLM attack; its text is not prompted")
        base_spec = builtins.get(name)
        if base_spec is None and current is not None and current.default_spec.source == where:
            base_spec = None  # the same file loaded again: define it afresh
        elif base_spec is None and current is not None:
            base_spec = current.default_spec
        if base_spec is None and isinstance(fields, Mapping) and "instruction" not in fields:
            known = sorted(n for n, c in reg.items() if issubclass(c, LLMPerturbation))
            raise PromptError(where, name, None, "is not a known LLM attack" +
                              _did_you_mean(name, known) + " (a new attack needs instruction, "
                              "demonstrations, level, damages and description)")
        spec = parse_attack(fields, where, name, base_spec)
        if base_spec is None:
            register_attack(spec, replace_existing=True)
            added.append(name)
        overrides[name] = spec
    return PromptFile(where, overrides, added)
