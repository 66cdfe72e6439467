"""Verdicts on unverified LLM-written variants (analyses/trust.py): criteria confusion and
discernment set them aside by default and say how many, keep them on request and mark every
verdict that rests on them, and count the pairs from attacks below the precision floor."""

from __future__ import annotations

import pandas as pd

from evalstress.analyses.confusion import criteria_confusion
from evalstress.analyses.discernment import discernment_analysis
from evalstress.analyses.outcomes import confusion_outcomes, discernment_outcomes
from evalstress.analyses.trust import VariantTrust

ORIG = [4.0, 5.0, 4.0, 5.0, 3.0, 4.0, 5.0, 4.0, 4.0, 5.0, 3.0, 4.0]
WORSE = [2.0, 3.0, 3.0, 2.0, 2.0, 3.0, 4.0, 2.0, 3.0, 3.0, 1.0, 2.0]
#: a generation block as a run writes it: uncommon-phrase unverified (12 variants),
#: rewriting-and-insertion below the floor but checked by a verifier, spelling-mistake a rule
BLOCK = {"precision": {"floor": 0.95},
         "perturbations": {
             "uncommon-phrase": {"accepted": 12, "unverified": 12, "verification": "unverified",
                                 "check_precision": 0.6667, "below_floor": True},
             "rewriting-and-insertion": {"accepted": 12, "unverified": 0,
                                         "verification": "verifier",
                                         "check_precision": 0.7273, "below_floor": True}}}


def _table(make_table) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    parts = [make_table(ORIG, {("uncommon-phrase", "default"): WORSE,
                               ("rewriting-and-insertion", "minor"): WORSE,
                               ("spelling-mistake", "minor"): WORSE}, aspect=aspect)
             for aspect in ("fluency", "simplicity")]
    return pd.concat(parts, ignore_index=True)


def test_the_trust_of_a_run_comes_from_its_generation_block() -> None:
    trust = VariantTrust.of_generation(BLOCK)
    assert trust.unverified == {"uncommon-phrase": 12}
    assert trust.below_floor == {"uncommon-phrase": 0.6667, "rewriting-and-insertion": 0.7273}
    assert not trust.keeps("uncommon-phrase") and trust.keeps("rewriting-and-insertion")
    assert VariantTrust.of_generation(BLOCK, include=True).keeps("uncommon-phrase")
    assert VariantTrust.of_generation(None).keeps("uncommon-phrase")  # nothing generated


def test_confusion_sets_unverified_variants_aside_and_says_so(make_table) -> None:  # type: ignore[no-untyped-def]
    result = criteria_confusion(_table(make_table), trust=VariantTrust.of_generation(BLOCK))
    assert {i.perturbation for i in result.items} == {"rewriting-and-insertion",
                                                       "spelling-mistake"}
    note = next(n for n in result.notes if "set aside" in n)
    assert note.startswith("12 unverified LLM-written variant(s) set aside (uncommon-phrase "
                           "(precision 0.67)")
    assert "--include-unverified puts them back" in note
    data = result.to_dict()
    assert data["trust"]["set_aside"] == {"uncommon-phrase": 12}
    assert all(i["n_unverified"] == 0 for i in data["items"])


def test_confusion_keeps_them_on_request_and_every_verdict_on_them_says_so(make_table) -> None:  # type: ignore[no-untyped-def]
    trust = VariantTrust.of_generation(BLOCK, include=True)
    result = criteria_confusion(_table(make_table), trust=trust)
    mine = [i for i in result.items if i.perturbation == "uncommon-phrase"]
    assert len(mine) == 2 and all(i.n_unverified == i.n == 12 for i in mine)
    assert all(i.n_below_floor == 12 for i in mine)
    rules = [i for i in result.items if i.perturbation == "spelling-mistake"]
    assert rules and all(i.n_unverified == i.n_below_floor == 0 for i in rules)
    assert any("kept by include_unverified" in n for n in result.notes)
    verdicts = confusion_outcomes(result.to_dict())
    on_them = [o for o in verdicts if o.perturbation == "uncommon-phrase"]
    assert on_them and all("rests on 12 unverified LLM-written variant pair(s)" in o.detail
                           for o in on_them)
    assert not any("unverified" in o.detail for o in verdicts
                   if o.perturbation != "uncommon-phrase")


def test_discernment_counts_the_pairs_below_the_floor(make_table) -> None:  # type: ignore[no-untyped-def]
    default = discernment_analysis(_table(make_table), trust=VariantTrust.of_generation(BLOCK))
    units = {u.perturbation: u for u in default.units}
    assert "uncommon-phrase" not in units
    # checked by a verifier: kept, but its pairs come from an attack below the floor
    assert units["rewriting-and-insertion"].n_below_floor == 12
    assert units["rewriting-and-insertion"].n_unverified == 0
    assert units["spelling-mistake"].n_below_floor == 0
    assert any("12 unverified LLM-written variant(s) set aside" in n for n in default.notes)
    kept = discernment_analysis(_table(make_table),
                                trust=VariantTrust.of_generation(BLOCK, include=True))
    [unit] = [u for u in kept.units if u.perturbation == "uncommon-phrase"]
    assert unit.n_unverified == 12
    [verdict] = [o for o in discernment_outcomes(kept.to_dict())
                 if o.perturbation == "uncommon-phrase"]
    assert "unverified LLM-written variant pair(s)" in verdict.detail


def test_without_a_generation_block_nothing_changes(make_table) -> None:  # type: ignore[no-untyped-def]
    plain = criteria_confusion(_table(make_table))
    assert "uncommon-phrase" in {i.perturbation for i in plain.items}
    assert not any("unverified" in n for n in plain.notes)
