"""Expectation rows are found by attack identity, never by a perturbation's bare name."""

from __future__ import annotations

from evalstress.analyses.expectations import attack_of, expectation_for
from evalstress.criteria import expectations


def test_paper_002_perturbations_sharing_a_name_get_their_own_metadata_rows() -> None:
    # paper 002's repetition (rep-k copies of the tail) and negation (auxiliary negation) are not
    # paper 000's attacks: Table 21's repetition row has an empty S_T on fluency, which would
    # make the directional test of paper 002's repetition vacuous
    for name in ("repetition", "negation"):
        row = expectation_for(name)
        assert row is not None and row.source == "metadata", name
        assert row.should_move, f"{name}: the derived row must have aspects that should move"
    assert "fluency" in expectation_for("repetition").should_move  # type: ignore[union-attr]
    assert "non-contradiction" in expectation_for("negation").should_move  # type: ignore[union-attr]


def test_rule_attacks_of_paper_000_pick_their_table_21_rows() -> None:
    table = expectations()
    for name in ("sentence-exchange", "word-exchange", "spelling-mistake", "sentence-deletion"):
        row = expectation_for(name)
        assert row is not None and row.source == "table21", name
        assert attack_of(name) == f"000:{name}"
        assert row.expected == table[f"000:{name}"].expected
        assert row.perturbation == name


def test_an_identity_names_a_row_directly_for_unregistered_variants() -> None:
    row = expectation_for("000:negation")
    assert row is not None and row.source == "table21"
    # Table 21: annotators judged negation to hurt non-hallucination, the paper's expectation
    # column did not
    assert row.disputed == {"non-hallucination"}
    assert expectation_for("negation-of-a-fact") is None
