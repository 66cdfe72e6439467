"""How far an attack's variants are trusted (perturb/precision.py): the measured precision of
its checks decides, a verifier only ever raises the trust, and a measurement applies only to the
acceptance it measured."""

from __future__ import annotations

import pytest

from evalstress.perturb.llm import builtin_attacks, parse_attack
from evalstress.perturb.precision import (
    FLOOR,
    AttackTrust,
    attack_trust,
    measured_checks,
    precision_table,
)


@pytest.mark.parametrize(("trust", "verification"), [
    (AttackTrust("a", 0.95), "checks"),  # at the floor
    (AttackTrust("a", 0.94), "unverified"),
    (AttackTrust("a", None), "unverified"),  # unmeasured
    (AttackTrust("a", 0.6, "judge"), "verifier"),  # a verifier nobody measured
    (AttackTrust("a", 0.6, "judge", 0.97, True), "verifier"),
    (AttackTrust("a", 0.6, "judge", 0.8, True), "unverified"),  # measured below the floor
    (AttackTrust("a", 0.6, "judge", None, True), "unverified"),  # measured, accepted nothing
    (AttackTrust("a", 1.0, "judge", 0.5, True), "checks"),  # a verifier never lowers it
])
def test_what_verifies_a_variant(trust: AttackTrust, verification: str) -> None:
    assert trust.verification == verification
    assert trust.below_floor == (trust.check_precision is None or trust.check_precision < FLOOR)


def test_the_quoted_precision_is_the_verifiers_when_the_verifier_verified() -> None:
    assert AttackTrust("a", 0.6, "judge", 0.97, True).quoted_precision == 0.97
    assert AttackTrust("a", 0.6, "judge").quoted_precision is None  # unmeasured
    assert AttackTrust("a", 0.6).quoted_precision == 0.6
    assert AttackTrust("a", 0.6, "judge").to_json() == {
        "verification": "verifier", "check_precision": 0.6, "below_floor": True,
        "verifier_precision": None, "verifier_measured": False}


def test_a_prompt_file_that_changes_the_checks_leaves_the_attack_unmeasured() -> None:
    shipped = builtin_attacks()["grammatical-errors"]
    assert measured_checks(shipped) is not None
    assert attack_trust(shipped).verification == "checks"
    looser = parse_attack({"checks": {"same-words": {"min": 0.1}}}, "mine.yaml",
                          "grammatical-errors", shipped)
    assert measured_checks(looser) is None
    assert attack_trust(looser).check_precision is None
    assert attack_trust(looser).verification == "unverified"
    # an instruction of one's own asks differently but accepts the same: still measured
    worded = parse_attack({"instruction": "Make grammar mistakes."}, "mine.yaml",
                          "grammatical-errors", shipped)
    assert attack_trust(worded).check_precision == attack_trust(shipped).check_precision


def test_a_verifier_measurement_applies_to_its_model_and_temperature() -> None:
    spec = builtin_attacks()["uncommon-phrase"]
    local = precision_table()["verifiers"]["local"]["attacks"]["uncommon-phrase"]
    measured = attack_trust(spec, "local", 0.0)
    assert measured.verifier_measured and measured.verifier_precision == local["precision"]
    assert not attack_trust(spec, "local", 0.7).verifier_measured  # other sampling
    assert not attack_trust(spec, "gpt-4o", 0.0).verifier_measured
