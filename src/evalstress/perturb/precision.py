"""How far the acceptance of each LLM-written attack can be trusted: its measured precision.

The acceptance checks (`llm_checks.judge_answer`) are a classifier, and `validator_precision.json`
beside this module ships what it measured: per attack, the precision of "accept" and its recall
on replies held out from the checks' tuning (`tests/perturb/heldout/`), with Wilson 95%
intervals, the counts, the date and the evalstress version. `bench/bench_validators.py --write`
writes the file; `tests/perturb/test_heldout.py` fails when it no longer matches what the checks
measure. The same file keeps the measurements of verifier models (`--verifier SPEC --write`):
the precision of checks and verifier together, per attack, under the verifier's model name and
temperature.

An attack whose held-out precision is below `FLOOR` writes variants that are `unverified`
unless a verifier checked them: one accepted variant in more than twenty may not be the damage
its attack promises, and the analyses set such variants aside by default (`analyses.trust`).
The measurement applies to the acceptance it measured: an attack whose bounds, checks or
requirements a prompt file changed, or a new attack, has no measured precision, and its variants
are unverified as well.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from evalstress.perturb.llm import AttackSpec, builtin_attacks

#: the precision of "accept" an attack's variants need to count as verified
FLOOR = 0.95
#: the shipped table, beside this module
TABLE_FILE = "validator_precision.json"
#: what a variant that passed the acceptance is: verified by checks measured above the floor,
#: verified by the verifier model, or unverified
VERIFICATIONS = ("checks", "verifier", "unverified")


@functools.cache
def precision_table() -> dict[str, Any]:
    """The shipped measurements (`validator_precision.json`)."""
    text = (resources.files("evalstress") / "perturb" / TABLE_FILE).read_text("utf-8")
    return dict(json.loads(text))


def acceptance_of(spec: AttackSpec) -> tuple[Any, ...]:
    """What decides which answers the checks accept, per severity: the bounds, the checks and
    the requirements (instructions and demonstrations aside)."""
    out = []
    for level in spec.grid:
        resolved = spec.resolve(level)
        out.append((level, resolved.bounds, json.dumps(resolved.checks, sort_keys=True,
                                                        default=str),
                    json.dumps(dict(resolved.requires), sort_keys=True)))
    return tuple(out)


def measured_checks(spec: AttackSpec) -> Mapping[str, Any] | None:
    """The shipped measurement of this attack's checks, or None when there is none or the
    attack accepts otherwise than the built-in one that was measured."""
    entry = (precision_table().get("checks") or {}).get(spec.name)
    shipped = builtin_attacks().get(spec.name)
    if entry is None or shipped is None or acceptance_of(spec) != acceptance_of(shipped):
        return None
    return dict(entry)


def measured_verifier(model: str, temperature: float, attack: str) -> Mapping[str, Any] | None:
    """The shipped measurement of checks plus a verifier (by model name, at this temperature)
    on an attack, or None."""
    entry = (precision_table().get("verifiers") or {}).get(model)
    if not entry or float(entry.get("temperature", -1)) != float(temperature):
        return None
    found = (entry.get("attacks") or {}).get(attack)
    return dict(found) if found else None


@dataclass(frozen=True)
class AttackTrust:
    """How far an attack's accepted variants can be trusted in one run.

    `check_precision`: the held-out precision of its checks (None: unmeasured). With a verifier
    (`verifier`: its model name), `verifier_measured` says whether checks and verifier together
    were measured for that model, and `verifier_precision` is what that gave (None: measured,
    but together they accepted no held-out reply)."""

    attack: str
    check_precision: float | None
    verifier: str | None = None
    verifier_precision: float | None = None
    verifier_measured: bool = False

    @property
    def below_floor(self) -> bool:
        """Whether the checks alone fall short of the floor (or were never measured)."""
        return self.check_precision is None or self.check_precision < FLOOR

    @property
    def verification(self) -> str:
        """checks, verifier or unverified (see VERIFICATIONS). A verifier only ever raises the
        trust: one measured below the floor leaves the checks' own verdict standing."""
        if not self.below_floor:
            return "checks"
        if self.verifier is not None and (not self.verifier_measured or (
                self.verifier_precision is not None and self.verifier_precision >= FLOOR)):
            return "verifier"
        return "unverified"

    @property
    def quoted_precision(self) -> float | None:
        """The precision a report quotes for the variants: the verifier's measurement when the
        verifier is what verified them, else the checks'."""
        if self.verification == "verifier":
            return self.verifier_precision
        return self.check_precision

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verification": self.verification,
                               "check_precision": self.check_precision,
                               "below_floor": self.below_floor}
        if self.verifier is not None:
            out["verifier_precision"] = self.verifier_precision
            out["verifier_measured"] = self.verifier_measured
        return out


def attack_trust(spec: AttackSpec, verifier: str | None = None,
                 verifier_temperature: float | None = None) -> AttackTrust:
    """The trust of one attack's variants, with or without a verifier model."""
    checks = measured_checks(spec)
    precision = None if checks is None else checks.get("precision")
    found = None
    if verifier is not None and verifier_temperature is not None:
        found = measured_verifier(verifier, verifier_temperature, spec.name)
    verified = None if found is None else found.get("precision")
    return AttackTrust(spec.name, None if precision is None else float(precision), verifier,
                       None if verified is None else float(verified), found is not None)


def table_head() -> dict[str, Any]:
    """When and with what the shipped table was measured (for results.json)."""
    table = precision_table()
    return {"floor": FLOOR, "measured": table.get("measured"),
            "evalstress": table.get("evalstress"), "set": table.get("set")}
