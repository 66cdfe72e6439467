"""The LLM attacks' acceptance measured as a classifier on the tuning set of labelled replies
(tests/perturb/labelled/, the replies the checks were tightened on): every attack has its set,
the floors hold there (precision of "accept" >= 0.95, recall >= 0.9) but for the two attacks
known to fall below, which write unverified variants, and a verifier model is measured the
same way (fake server). The held-out set and the shipped table: test_heldout.py."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from evalstress.core.text import TextParser
from evalstress.perturb.labelled import (
    LabelledError,
    Measurement,
    load_labelled,
    measure,
)
from evalstress.perturb.llm import builtin_attacks
from evalstress.perturb.precision import FLOOR, attack_trust, precision_table
from tests.perturb.conftest import assert_every_kind_of_reply

ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(__file__).resolve().parent / "labelled"
PRECISION, RECALL = 0.95, 0.9
#: attacks whose checks cannot see some wrong replies of their set (the meaning changed in words
#: the checks accept): below the floor even on the set they were tuned on
BELOW_PRECISION = {
    "uncommon-phrase": "a rare word of another meaning ('spotted' -> 'obliterated') passes: "
                       "neither WordNet relations nor MiniLM similarity tell it from a rare "
                       "synonym",
    "rewriting-and-insertion": "a new fact that no-new-facts cannot see passes: stated through a "
                               "function word ('back from the war') or through a word sharing a "
                               "WordNet sense with the text ('forced' ~ 'power')",
}
#: the words of each wrong reply those attacks accept, all of them
MISSED = {
    "uncommon-phrase": {"have obliterated a comet", "squandered", "will sequester", "demurs",
                        "relinquish", "and lamented", "incinerating", "confiscates", "obscures",
                        "decommissioned"},
    "rewriting-and-insertion": {"back from the war", "a window had been forced"},
}


@pytest.fixture(scope="module")
def parser() -> TextParser:
    return TextParser()


@pytest.fixture(scope="module")
def results(parser: TextParser) -> dict[str, Measurement]:
    return measure(load_labelled(FOLDER), builtin_attacks(), parser)


def test_every_llm_attack_has_a_labelled_set_of_each_kind() -> None:
    assert_every_kind_of_reply(load_labelled(FOLDER), min_kinds=5)


@pytest.mark.parametrize("attack", sorted(builtin_attacks()))
def test_recall_floor(results: dict[str, Measurement], attack: str) -> None:
    result = results[attack]
    assert result.recall is not None and result.recall >= RECALL, [
        f"{case.where}: {why}" for case, why in result.errors]


@pytest.mark.parametrize("attack", sorted(set(builtin_attacks()) - set(BELOW_PRECISION)))
def test_precision_floor(results: dict[str, Measurement], attack: str) -> None:
    result = results[attack]
    assert result.precision is not None and result.precision >= PRECISION, [
        f"{case.where}: {why}" for case, why in result.errors]


@pytest.mark.parametrize("attack", sorted(builtin_attacks()))
def test_the_floor_holds_for_every_attack_whose_variants_count_as_verified(
        results: dict[str, Measurement], attack: str) -> None:
    # an attack whose variants the checks alone verify is at the floor on both sets; any other
    # attack writes unverified variants (without a verifier)
    trust = attack_trust(builtin_attacks()[attack])
    held_out = precision_table()["checks"][attack]["precision"]
    if trust.verification == "checks":
        assert held_out >= FLOOR and results[attack].precision >= FLOOR  # type: ignore[operator]
    else:
        assert trust.verification == "unverified" and (held_out is None or held_out < FLOOR)


@pytest.mark.parametrize("attack", sorted(BELOW_PRECISION))
def test_the_attacks_below_the_floor_write_unverified_variants(
        results: dict[str, Measurement], attack: str) -> None:
    result = results[attack]
    assert result.precision is not None and result.precision < PRECISION
    trust = attack_trust(builtin_attacks()[attack])
    assert trust.below_floor and trust.verification == "unverified"
    assert trust.check_precision == precision_table()["checks"][attack]["precision"] < FLOOR


def test_the_known_misses_are_the_documented_ones(results: dict[str, Measurement]) -> None:
    # the accepted wrong replies of each attack below the floor are exactly the ones named above
    for name in BELOW_PRECISION:
        accepted = [c.answer for c, _ in results[name].errors if not c.correct]
        assert len(accepted) == len(MISSED[name]), name
        for words in MISSED[name]:
            assert sum(words in answer for answer in accepted) == 1, (name, words)


def test_no_new_facts_rejects_the_meteor_shower_the_lexical_checks_let_through(
        results: dict[str, Measurement]) -> None:
    # the new-fact restatement ("and may cause a meteor shower") is rejected by the meaning
    # check, and no correct restatement of the set is rejected by it
    result = results["rewriting-and-insertion"]
    assert not any("meteor shower" in c.answer for c, _ in result.errors)
    assert not any("no-new-facts" in why for c, why in result.errors if c.correct)


def test_counts_are_those_of_a_hand_count(parser: TextParser) -> None:
    # two replies by hand: a correct continuation (accepted), an unchanged text (rejected), and
    # a refusal labelled correct on purpose, which the checks must count as a false negative
    cases = load_labelled(FOLDER)["continuation"]
    correct = next(c for c in cases if c.correct)
    unchanged = next(c for c in cases if c.kind == "unchanged")
    mislabelled = type(correct)(**{**correct.__dict__, "answer": "I'm sorry, I can't.",
                                   "where": "hand"})
    [result] = measure({"continuation": [correct, unchanged, mislabelled]}, builtin_attacks(),
                       parser).values()
    assert (result.true_positives, result.true_negatives, result.false_negatives,
            result.false_positives) == (1, 1, 1, 0)
    assert result.precision == 1.0 and result.recall == 0.5
    assert "refusal" in result.errors[0][1]


def test_bad_labelled_files_name_the_file_case_and_field(tmp_path: Path) -> None:
    (tmp_path / "_originals.yaml").write_text("a:\n  task: qa\n  text: Cats purr.\n", "utf-8")
    (tmp_path / "x.yaml").write_text(
        "attack: hypernym\ncases:\n  - {original: a, kind: correct, answer: 'Pets purr.'}\n"
        "  - {original: a, kind: wrong, answer: 'Cats.'}\n", "utf-8")
    with pytest.raises(LabelledError, match=r"x.yaml, case 2, field 'kind': 'wrong' is not"):
        load_labelled(tmp_path)
    (tmp_path / "x.yaml").write_text(
        "attack: hypernym\ncases:\n  - {original: b, kind: correct, answer: 'Pets purr.'}\n",
        "utf-8")
    with pytest.raises(LabelledError, match=r"case 1, field 'original': no original 'b'"):
        load_labelled(tmp_path)


def test_bench_prints_precision_and_recall_per_attack(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_validators.py", "--attack", "fact-negation",
                                      "--attack", "abbreviation"])
    runpy.run_path(str(ROOT / "bench" / "bench_validators.py"), run_name="__main__")
    out = capsys.readouterr().out
    tuning = out.split("held-out set")[0]  # the first table
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in tuning.splitlines() if line.startswith("| ") and "---" not in line}
    assert set(rows) == {"attack", "abbreviation", "fact-negation", "**all**"}
    assert rows["attack"] == ["correct", "wrong", "FP", "FN", "precision", "95% CI", "recall",
                              "95% CI"]
    # 10 correct and 10 wrong replies, all judged right: Wilson's interval of 10 out of 10
    assert rows["fact-negation"] == ["10", "10", "0", "0", "1.00", "[0.72, 1.00]", "1.00",
                                     "[0.72, 1.00]"]
