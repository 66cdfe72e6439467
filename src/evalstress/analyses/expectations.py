"""Which aspects a perturbation should move, and at which level it works.

Paper 000's expectation table (`evalstress.criteria`) is keyed by attack identity; a
perturbation declares its attack, level, damaged and preserved aspects in its class
(`evalstress.perturb`). Joining the two needs both rooms, so it lives here, above them, where
the analyses that read it (criteria confusion, discernment) are.
"""

from __future__ import annotations

from dataclasses import replace

from evalstress.criteria import (
    Expectation,
    affected_by,
    aspects,
    expectations,
    table_levels,
)
from evalstress.perturb.base import registry


def attack_of(name: str) -> str | None:
    """The attack identity behind a perturbation name: the registered class's `attack`, or the
    name itself when it is an identity ("000:negation"); None otherwise."""
    cls = registry().get(name)
    if cls is not None:
        return cls.attack or None
    return name if name in expectations() else None


def expectation_for(name: str) -> Expectation | None:
    """The expectation row for a perturbation: its attack's Table 21 row, else one derived from
    its metadata.

    Rows are found by attack identity, never by bare name: a registered perturbation gets a
    Table 21 row only when it declares `attack = "000:..."` (paper 002's `negation` is not paper
    000's negation-of-a-fact attack), and an unregistered name only when it is an identity
    itself ("000:negation", e.g. for imported variants). The fallback reads the registered
    perturbation's `damages` and `preserves`: the aspects in `affected_by(damages)` (the damaged
    aspects and their ancestors) should move; the declared `preserves` aspects, minus those,
    should stay; every other aspect is left undetermined (neither S_T nor S_F), since nobody has
    asserted anything about it. None for an unknown name.
    """
    table = expectations()
    attack = attack_of(name)
    if attack is not None and attack in table:
        return replace(table[attack], perturbation=name)
    cls = registry().get(name)
    if cls is None:
        return None
    known = aspects()
    move = {a for a in affected_by([d for d in cls.damages if d in known])}
    stay = {a for a in cls.preserves if a in known} - move
    expected = {a: True for a in move} | {a: False for a in stay}
    return Expectation(name, expected, None, None, cls.level, "metadata")


def perturbation_level(name: str, fallback: dict[str, str] | None = None) -> str | None:
    """char / word / sentence: the registry's `level`, else the user's fallback, else the data."""
    cls = registry().get(name)
    if cls is not None:
        return str(cls.level)
    if fallback and name in fallback:
        return fallback[name]
    levels = table_levels()
    if name in levels:
        return str(levels[name])
    row = expectations().get(name)
    return row.level if row else None
