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
