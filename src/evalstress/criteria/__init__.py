"""The aspect hierarchy (data), shared by perturbation metadata, judges and analyses."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from evalstress.core.packaged import read_packaged_yaml
from evalstress.core.strict import ConfigError, check_names
from evalstress.core.userfile import parse_user_yaml


@dataclass(frozen=True)
class Aspect:
    name: str
    parent: str | None
    abbreviation: str


@functools.cache
def aspects() -> dict[str, Aspect]:
    """All aspects by name, in the order of the data file (parents before children)."""
    raw = read_packaged_yaml("criteria", "aspects.yaml")
    return {name: Aspect(name, parent, abbr) for name, (parent, abbr) in raw.items()}


def ancestors(name: str) -> list[str]:
    """The aspect's ancestors, nearest first (the aspects whose scope covers it)."""
    table = aspects()
    if name not in table:
        raise KeyError(f"unknown aspect '{name}'; known: {', '.join(table)}")
    out = []
    parent = table[name].parent
    while parent is not None:
        out.append(parent)
        parent = table[parent].parent
    return out


def affected_by(targets: tuple[str, ...] | list[str]) -> set[str]:
    """Aspects a perturbation aimed at `targets` should move: the targets and their ancestors."""
    out: set[str] = set()
    for target in targets:
        out.add(target)
        out.update(ancestors(target))
    return out


# --- the expectation matrix (paper 000, Table 21) -------------------------------------------


@dataclass(frozen=True)
class Expectation:
    """Which aspects a perturbation should move (True) or leave alone (False).

    `expected`: for a Table 21 row the paper's own expectation column as printed (mostly the
    target and its ancestors, but the non-contradiction attacks also expect informativeness to
    move); for any other perturbation, derived from the hierarchy. `human`: paper 000's
    annotators (None for perturbations outside its Table 21). `source` says where the row came
    from: "table21" or "metadata" (derived from the perturbation's declared damages /
    preserves).
    """

    perturbation: str
    expected: dict[str, bool]
    human: dict[str, bool] | None
    target: str | None
    level: str | None
    source: str

    @property
    def should_move(self) -> set[str]:
        """S_T for this perturbation: aspects where expectation and human judgment say move."""
        return {a for a, v in self.expected.items() if v and self._agrees(a)}

    @property
    def should_stay(self) -> set[str]:
        """S_F for this perturbation: aspects where both say the score should not change."""
        return {a for a, v in self.expected.items() if not v and self._agrees(a)}

    @property
    def disputed(self) -> set[str]:
        """Aspects where the human judgment and `expected` disagree (left out of both tests)."""
        return {a for a in self.expected if not self._agrees(a)}

    def _agrees(self, aspect: str) -> bool:
        return self.human is None or self.human.get(aspect) == self.expected[aspect]


def _expectation_file() -> dict[str, Any]:
    return read_packaged_yaml("criteria", "expectations.yaml")


@functools.cache
def expectations() -> dict[str, Expectation]:
    """Paper 000's Table 21 as Expectation rows, keyed by attack identity ("000:negation")."""
    raw = _expectation_file()
    columns = list(raw["columns"])
    unknown = set(columns) - set(aspects())
    if unknown:
        raise ValueError(f"expectations.yaml: unknown aspect column(s) {sorted(unknown)}")
    out = {}
    for attack, row in raw["attacks"].items():
        cells = str(row["cells"]).split()
        if len(cells) != len(columns) or any(len(c) != 2 or set(c) - {"Y", "N"} for c in cells):
            raise ValueError(f"expectations.yaml: field 'attacks.{attack}.cells' needs "
                             f"{len(columns)} two-letter Y/N codes, got {row['cells']!r}")
        human = {a: c[0] == "Y" for a, c in zip(columns, cells, strict=True)}
        expected = {a: c[1] == "Y" for a, c in zip(columns, cells, strict=True)}
        out[str(attack)] = Expectation(str(attack), expected, human, row.get("target"),
                                       row.get("level"), "table21")
    return out



# --- criteria texts for LLM judges (5 levels of detail, plus term-only and empty) ---------------

LEVELS = ("default", "simplified", "term", "detailed", "list", "term-only", "empty")


@dataclass(frozen=True)
class Criterion:
    """One aspect's texts; `text(level, scale)` writes the criterion a judge sees."""

    aspect: str
    name: str
    default: str
    simplified: str
    term: str
    checks: str
    anchors: tuple[tuple[int, str], ...]  # (point on a 1-5 scale, description), best first

    def text(self, level: str = "default", scale: tuple[int, int] = (1, 5)) -> str:
        if level not in LEVELS:
            raise ValueError(f"unknown criteria level '{level}'; choose from {', '.join(LEVELS)}")
        if level == "empty":
            return ""
        if level == "term-only":
            return self.name
        if level in ("default", "simplified", "term"):
            return f"{self.name}: {getattr(self, level)}"
        if level == "detailed":
            return f"{self.name}: {self.default} {self.checks}"
        low, high = scale
        lines = [f"{self.name}: {self.default}"]
        for point, description in self.anchors:
            value = low + (point - 1) * (high - low) / 4
            shown = int(value) if float(value).is_integer() else round(value, 1)
            lines.append(f"- {shown}: {description}")
        return "\n".join(lines)


_CRITERION_FIELDS = ("name", "default", "simplified", "term", "checks", "anchors")


def _parse_criteria(raw: object, where: str) -> dict[str, Criterion]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a criteria file must map aspect names to their texts")
    out = {}
    for aspect, fields in raw.items():
        if not isinstance(fields, dict):
            raise ValueError(f"{where}: aspect '{aspect}' must be a mapping of "
                             f"{', '.join(_CRITERION_FIELDS)}")
        check_names("field", fields, _CRITERION_FIELDS, f"{where}: aspect '{aspect}'")
        missing = [f for f in _CRITERION_FIELDS if f not in fields]
        if missing:
            raise ConfigError(f"{where}: aspect '{aspect}' lacks field(s) {', '.join(missing)}")
        anchors = _anchors(fields["anchors"], f"{where}: field '{aspect}.anchors'")
        out[str(aspect)] = Criterion(
            str(aspect), str(fields["name"]), str(fields["default"]), str(fields["simplified"]),
            str(fields["term"]), str(fields["checks"]), anchors)
    return out


def _anchors(raw: object, where: str) -> tuple[tuple[int, str], ...]:
    """Anchors keyed by the points 1 to 5 (numbers, or digits as text), best first."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must map the points 1 to 5 to their descriptions")
    points: dict[int, str] = {}
    for key, text in raw.items():
        point = key if isinstance(key, int) and not isinstance(key, bool) else None
        if isinstance(key, str) and key.strip().isdigit():
            point = int(key.strip())
        if point is None:
            raise ConfigError(f"{where}: key {key!r} is not a point; key the anchors by the "
                              "numbers 1 to 5 (e.g. 5: ..., 4: ...)")
        if point in points:
            raise ConfigError(f"{where}: point {point} is given twice")
        if isinstance(text, bool):  # YAML reads a bare no/yes/off/on as a boolean
            raise ConfigError(f"{where}: point {point} reads as {text} in YAML; quote its "
                              "description, e.g. 1: 'no'")
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"{where}: point {point} needs a description (text)")
        points[point] = text
    if sorted(points) != [1, 2, 3, 4, 5]:
        raise ConfigError(f"{where} must give each of the points 1 to 5 once, got "
                          f"{sorted(points)}")
    return tuple(sorted(points.items(), reverse=True))


@functools.cache
def aspect_aliases() -> dict[str, str]:
    """Evaluator aspect names that mean one of our aspects (consistency -> faithfulness, ...)."""
    return dict(_expectation_file().get("aliases", {}))


def table_levels() -> dict[str, str]:
    """The expectation file's `levels:` block: the level (char / word / sentence) of a
    perturbation that no registry knows (imported or renamed attacks)."""
    return dict(_expectation_file().get("levels", {}))


@functools.cache
def builtin_criteria() -> dict[str, Criterion]:
    """The built-in criteria, one per aspect of the hierarchy."""
    return _parse_criteria(read_packaged_yaml("criteria", "criteria.yaml"), "criteria.yaml")


#: the rewordings of each built-in definition that paraphrases.yaml holds (variants 1..N)
PARAPHRASES = 2


@functools.cache
def paraphrases() -> dict[str, tuple[str, ...]]:
    """Each built-in aspect's rewordings of its one-sentence definition (paraphrases.yaml):
    variant i of an aspect is entry i - 1."""
    raw = read_packaged_yaml("criteria", "paraphrases.yaml")
    out = {str(a): tuple(str(t) for t in texts) for a, texts in dict(raw).items()}
    wrong = [a for a, texts in out.items() if len(texts) != PARAPHRASES]
    if wrong or set(out) != set(builtin_criteria()):
        raise ConfigError(f"paraphrases.yaml: every built-in aspect needs {PARAPHRASES} "
                          "rewordings")
    return out


def reworded(table: Mapping[str, Criterion], variant: int) -> dict[str, Criterion]:
    """The criteria with each built-in definition swapped for its rewording `variant` (0: as
    they are). A criterion a user's file replaced keeps its own words: evalstress has no
    rewording of it."""
    if variant == 0:
        return dict(table)
    if not 0 < variant <= PARAPHRASES:
        raise ValueError(f"criterion_variant={variant}: evalstress words each criterion "
                         f"{PARAPHRASES + 1} ways: 0 (as written) or a rewording 1 to "
                         f"{PARAPHRASES}")
    builtin, words = builtin_criteria(), paraphrases()
    return {a: replace(c, default=words[a][variant - 1]) if builtin.get(a) is c else c
            for a, c in table.items()}


def load_criteria(path: str | None = None, variant: int = 0) -> dict[str, Criterion]:
    """Built-in criteria, overridden and extended by a user's YAML file of the same shape;
    `variant` > 0: the built-in definitions reworded (`reworded`)."""
    table = dict(builtin_criteria())
    if path:
        from pathlib import Path

        file = Path(path)
        try:
            raw = parse_user_yaml(file.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{file}: the criteria file is not UTF-8 text ({exc.reason} at byte "
                              f"{exc.start}); save it as UTF-8") from None
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{file}: cannot read criteria ({exc})") from None
        table.update(_parse_criteria(raw, str(file)))
    return reworded(table, variant)


def criterion_text(aspect: str, level: str = "default", scale: tuple[int, int] = (1, 5),
                   path: str | None = None) -> str:
    table = load_criteria(path)
    if aspect not in table:
        raise KeyError(f"no criterion for aspect '{aspect}'; known: {', '.join(table)}")
    return table[aspect].text(level, scale)
