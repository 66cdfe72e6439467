"""The LLM attacks' acceptance measured as a classifier on the project's labelled replies
(tests/perturb/labelled/): every attack has its set, the floors hold (precision of "accept" >=
0.95, recall >= 0.9), the bench prints the table, and a verifier model is measured the same way
(fake server)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

from evalstress.core.text import TextParser
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.perturb.labelled import (
    KINDS,
    LabelledError,
    Measurement,
    load_labelled,
    measure,
)
from evalstress.perturb.llm import builtin_attacks

ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(__file__).resolve().parent / "labelled"
PRECISION, RECALL = 0.95, 0.9
#: attacks whose checks cannot see some wrong replies of their set (the meaning changed in words
#: the checks accept); the precision floor is expected to fail until the checks can
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
    cases = load_labelled(FOLDER)
    assert set(cases) == set(builtin_attacks())  # all 17
    wrong_kinds = set(KINDS) - {"correct"}
    for name, answers in cases.items():
        correct = [a for a in answers if a.correct]
        wrong = [a for a in answers if not a.correct]
        assert len(correct) >= 8 and len(wrong) >= 8, name
        kinds = {a.kind for a in wrong}
        # unchanged or over-rewritten, the wrong attack or a new fact, cut off, refusal, remarks
        assert {"cut-off", "refusal", "preamble"} <= kinds, (name, kinds)
        assert kinds & {"unchanged", "over-rewritten"}, (name, kinds)
        assert kinds & {"wrong-attack", "new-fact"}, (name, kinds)
        assert len(kinds) >= 5 and kinds <= wrong_kinds, (name, kinds)
        spec = builtin_attacks()[name]
        for level in spec.grid:  # graded attacks have correct replies at every severity
            assert any(a.level in (level, None) for a in correct), (name, level)


@pytest.mark.parametrize("attack", sorted(builtin_attacks()))
def test_recall_floor(results: dict[str, Measurement], attack: str) -> None:
    result = results[attack]
    assert result.recall is not None and result.recall >= RECALL, [
        f"{case.where}: {why}" for case, why in result.errors]


@pytest.mark.parametrize("attack", [
    pytest.param(name, marks=pytest.mark.xfail(reason=BELOW_PRECISION[name], strict=True))
    if name in BELOW_PRECISION else name for name in sorted(builtin_attacks())])
def test_precision_floor(results: dict[str, Measurement], attack: str) -> None:
    result = results[attack]
    assert result.precision is not None and result.precision >= PRECISION, [
        f"{case.where}: {why}" for case, why in result.errors]


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
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith("| ") and "---" not in line}
    assert set(rows) == {"attack", "abbreviation", "fact-negation", "**all**"}
    assert rows["attack"] == ["correct", "wrong", "FP", "FN", "precision", "recall"]
    assert rows["fact-negation"][:2] == ["10", "10"]


def test_a_verifier_model_is_measured_the_same_way(parser: TextParser) -> None:
    # a verifier (fake server) that says no to the meaning-changing rewrites the checks let
    # through, yes to everything else: with it, uncommon-phrase reaches the precision floor
    bench = runpy.run_path(str(ROOT / "bench" / "bench_validators.py"), run_name="bench")
    asked: list[str] = []

    def verdict(request: dict[str, Any]) -> Reply:
        rewrite = request["messages"][-1]["content"].split("Rewrite:", 1)[1]
        asked.append(rewrite)
        wrong = any(words in rewrite for words in MISSED["uncommon-phrase"])
        return Reply("no" if wrong else "Yes.")

    cases = {"uncommon-phrase": load_labelled(FOLDER)["uncommon-phrase"]}
    with FakeServer(responder=verdict) as server:
        spec = f"model=fake,base_url={server.base_url},cache=false,max_attempts=1"
        [result] = measure(cases, builtin_attacks(), parser,
                           bench["verifier_verdict"](spec)).values()
    assert result.false_positives == 0 and result.precision == 1.0
    assert result.recall == 1.0
    # only the replies the checks accepted were put to the verifier: 15 correct, 10 wrong
    assert len(asked) == 25
