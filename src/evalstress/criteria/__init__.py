"""The aspect hierarchy (data), shared by perturbation metadata, judges and analyses."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import yaml


@dataclass(frozen=True)
class Aspect:
    name: str
    parent: str | None
    abbreviation: str


@functools.cache
def aspects() -> dict[str, Aspect]:
    """All aspects by name, in the order of the data file (parents before children)."""
    text = (resources.files("evalstress") / "criteria" / "aspects.yaml").read_text("utf-8")
    raw = yaml.safe_load(text)
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
        missing = [f for f in _CRITERION_FIELDS if f not in fields]
        if missing:
            raise ValueError(f"{where}: aspect '{aspect}' lacks field(s) {', '.join(missing)}")
        anchors = fields["anchors"]
        if not isinstance(anchors, dict) or sorted(int(k) for k in anchors) != [1, 2, 3, 4, 5]:
            raise ValueError(f"{where}: field '{aspect}.anchors' must give points 1 to 5")
        out[str(aspect)] = Criterion(
            str(aspect), str(fields["name"]), str(fields["default"]), str(fields["simplified"]),
            str(fields["term"]), str(fields["checks"]),
            tuple(sorted(((int(k), str(v)) for k, v in anchors.items()), reverse=True)))
    return out


@functools.cache
def builtin_criteria() -> dict[str, Criterion]:
    """The built-in criteria, one per aspect of the hierarchy."""
    text = (resources.files("evalstress") / "criteria" / "criteria.yaml").read_text("utf-8")
    return _parse_criteria(yaml.safe_load(text), "criteria.yaml")


def load_criteria(path: str | None = None) -> dict[str, Criterion]:
    """Built-in criteria, overridden and extended by a user's YAML file of the same shape."""
    table = dict(builtin_criteria())
    if path:
        from pathlib import Path

        file = Path(path)
        try:
            raw = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"{file}: cannot read criteria ({exc})") from None
        table.update(_parse_criteria(raw, str(file)))
    return table


def criterion_text(aspect: str, level: str = "default", scale: tuple[int, int] = (1, 5),
                   path: str | None = None) -> str:
    table = load_criteria(path)
    if aspect not in table:
        raise KeyError(f"no criterion for aspect '{aspect}'; known: {', '.join(table)}")
    return table[aspect].text(level, scale)
