"""Which LLM-written variants a verdict may rest on: verified ones, and unverified on request.

The generation stage marks every accepted LLM-written variant with how far it can be trusted
(results.json's `generation` block, per attack: `verification` and `check_precision`; see
`perturb.precision`). The criteria-confusion and discernment analyses read that here: by default
they leave out the perturbations whose variants are `unverified` (their attack's checks measured
below the precision floor, and no verifier checked them) and say how many variants they set
aside; with `include_unverified` they keep them, and every verdict resting on them says so. Each
verdict also counts the pairs behind it whose variants come from an attack below the floor
(verified by a verifier, or put back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class VariantTrust:
    """The trust of a run's LLM-written perturbations, as the analyses use it.

    `unverified`: perturbation -> its accepted variants nothing verified; `below_floor`:
    perturbation -> its checks' measured precision (None: unmeasured) for the attacks below the
    floor; `include`: whether unverified variants stay in the analyses."""

    unverified: Mapping[str, int] = field(default_factory=dict)
    below_floor: Mapping[str, float | None] = field(default_factory=dict)
    include: bool = False
    floor: float | None = None

    @classmethod
    def of_generation(cls, block: Mapping[str, Any] | None,
                      include: bool = False) -> VariantTrust:
        """From results.json's `generation` block (None: nothing was generated)."""
        perturbations = (block or {}).get("perturbations") or {}
        unverified = {str(name): int(entry.get("unverified") or 0)
                      for name, entry in perturbations.items()
                      if entry.get("verification") == "unverified"}
        below = {str(name): entry.get("check_precision")
                 for name, entry in perturbations.items() if entry.get("below_floor")}
        floor = ((block or {}).get("precision") or {}).get("floor")
        return cls(unverified, below, bool(include), floor)

    def keeps(self, perturbation: str) -> bool:
        """Whether the analyses use this perturbation's variants."""
        return self.include or perturbation not in self.unverified

    def counts(self, perturbation: str, pairs: int) -> tuple[int, int]:
        """(pairs from an attack below the floor, pairs on unverified variants) of a verdict
        resting on `pairs` pairs of this perturbation (a perturbation's variants share one
        trust in a run)."""
        below = pairs if perturbation in self.below_floor else 0
        unverified = pairs if perturbation in self.unverified and self.include else 0
        return below, unverified

    def to_dict(self) -> dict[str, Any]:
        """What an analysis result records: what it set aside or kept, and the floor."""
        return {"include_unverified": self.include, "floor": self.floor,
                "set_aside": {} if self.include else dict(sorted(self.unverified.items())),
                "included_unverified": dict(sorted(self.unverified.items()))
                if self.include else {},
                "below_floor": dict(sorted(self.below_floor.items()))}

    def note(self, used: set[str]) -> str | None:
        """One line for an analysis' notes about the perturbations it used (`used`) or set
        aside; None when no unverified variant is involved."""
        named = sorted(self.unverified) if not self.include else sorted(
            set(self.unverified) & used)
        if not named:
            return None
        total = sum(self.unverified[n] for n in named)
        attacks = ", ".join(f"{n} (precision {_num(self.below_floor.get(n))})" for n in named)
        floor = _num(self.floor)
        if self.include:
            return (f"{total} unverified LLM-written variant(s) kept by include_unverified "
                    f"({attacks}; checks below the precision floor {floor}): the verdicts on "
                    "them count them in n_unverified")
        return (f"{total} unverified LLM-written variant(s) set aside ({attacks}; checks below "
                f"the precision floor {floor}, no verifier): --include-unverified puts them "
                "back, --verifier SPEC checks them")


def _num(value: float | None) -> str:
    return "unmeasured" if value is None else f"{value:.2f}"
