"""The verifier's questions (perturb/verifier.py) and its measurement on the labelled sets: a
verifier scripted to answer from the labels (fake server) lifts both attacks below the floor to
precision 1.0, which proves the wiring from questions to verdicts."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest

from evalstress.core.text import TextParser
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.perturb.checks_core import normalized, sentences
from evalstress.perturb.labelled import load_labelled, measure
from evalstress.perturb.llm import builtin_attacks
from evalstress.perturb.llm_checks import read_rewrite
from evalstress.perturb.verifier import (
    GRAMMAR,
    changed_sentences,
    decide,
    inserted_sentences,
    read_verdict,
    verifier_questions,
)

ROOT = Path(__file__).resolve().parents[2]
SETS = {"tuning": ROOT / "tests" / "perturb" / "labelled",
        "held-out": ROOT / "tests" / "perturb" / "heldout"}
ORIGINAL = "Mei tells Arjun about the meeting. Arjun will book the room. Mei will order lunch."


@pytest.fixture(scope="module")
def parser() -> TextParser:
    return TextParser()


def _said(messages: list[dict[str, str]]) -> str:
    return messages[-1]["content"]


def test_uncommon_phrase_asks_both_ways_for_each_changed_sentence(parser: TextParser) -> None:
    rewrite = ("Mei apprises Arjun about the meeting. Arjun will book the room. Mei will "
               "procure lunch.")
    resolved = builtin_attacks()["uncommon-phrase"].resolve("default")
    assert changed_sentences(ORIGINAL, rewrite, parser) == [
        ("Mei tells Arjun about the meeting.", "Mei apprises Arjun about the meeting."),
        ("Mei will order lunch.", "Mei will procure lunch.")]
    questions = verifier_questions("uncommon-phrase", ORIGINAL, rewrite, resolved, parser)
    assert len(questions) == 4  # two changed sentences, each asked both ways
    first, back = _said(questions[0]), _said(questions[1])
    assert "Sentence A: Mei tells Arjun about the meeting.\nSentence B: Mei apprises" in first
    assert "Sentence A: Mei apprises Arjun about the meeting.\nSentence B: Mei tells" in back
    assert all("Answer with one word: yes or no." in _said(q) for q in questions)


def test_rewriting_and_insertion_asks_whether_the_text_entails_each_new_sentence(
        parser: TextParser) -> None:
    rewrite = ("Mei tells Arjun about the meeting. Arjun hears about the meeting from Mei. "
               "Arjun will book the room. Mei will order lunch. Lunch will be ordered by Mei.")
    resolved = builtin_attacks()["rewriting-and-insertion"].resolve("major")
    assert inserted_sentences(ORIGINAL, rewrite, parser) == [
        "Arjun hears about the meeting from Mei.", "Lunch will be ordered by Mei."]
    questions = verifier_questions("rewriting-and-insertion", ORIGINAL, rewrite, resolved,
                                   parser)
    assert [_said(q).split("New sentence: ")[1].split("\n")[0] for q in questions] == [
        "Arjun hears about the meeting from Mei.", "Lunch will be ordered by Mei."]
    assert all(_said(q).startswith(f"Text: {ORIGINAL}") for q in questions)


def test_other_attacks_get_the_one_general_question(parser: TextParser) -> None:
    resolved = builtin_attacks()["fact-negation"].resolve("default")
    rewrite = ORIGINAL.replace("will book", "will not book")
    [question] = verifier_questions("fact-negation", ORIGINAL, rewrite, resolved, parser)
    assert "Does the rewrite make this change, and no other kind of change?" in _said(question)


def test_answers_decide_all_yes_or_the_first_no() -> None:
    assert decide(["yes", "Yes, it does."]) is True
    assert decide(["yes", "No."]) is False and decide(["Maybe", "no"]) is False
    assert decide(["yes", "Maybe"]) is None
    assert read_verdict("Verdict: yes") is True and read_verdict("no, it adds facts") is False
    assert GRAMMAR.strip() == 'root ::= "yes" | "no"'


def _oracle(parser: TextParser, attack: str):  # type: ignore[no-untyped-def]
    """A verifier that answers from the labels: no when a question quotes a sentence found only
    in wrong replies of the attack's sets, yes otherwise."""
    good: set[tuple[str, ...]] = set()
    for folder in SETS.values():
        for case in load_labelled(folder)[attack]:
            good.update(normalized(s) for s in sentences(parser.parse(case.text)))
            if case.correct:
                text = read_rewrite(case.answer, case.finish)
                assert isinstance(text, str)
                good.update(normalized(s) for s in sentences(parser.parse(text)))
    asked: list[str] = []

    def reply(request: dict[str, Any]) -> Reply:
        said = _said(request["messages"])
        asked.append(said)
        quoted = re.findall(r"(?:Sentence [AB]|New sentence): (.*)", said)
        assert quoted, said
        return Reply("yes" if all(normalized(q) in good for q in quoted) else "no")

    return reply, asked


@pytest.mark.parametrize("attack", ["uncommon-phrase", "rewriting-and-insertion"])
@pytest.mark.parametrize("label", sorted(SETS))
def test_a_verifier_that_knows_the_labels_lifts_precision_to_one(
        parser: TextParser, attack: str, label: str) -> None:
    bench = runpy.run_path(str(ROOT / "bench" / "bench_validators.py"), run_name="bench")
    cases = {attack: load_labelled(SETS[label])[attack]}
    [checks] = measure(cases, builtin_attacks(), parser).values()
    reply, asked = _oracle(parser, attack)
    with FakeServer(responder=reply) as server:
        spec = f"model=fake,base_url={server.base_url},cache=false,max_attempts=1"
        [both] = measure(cases, builtin_attacks(), parser,
                         bench["verifier_verdict"](spec, parser)).values()
    assert checks.false_positives > 0  # the checks alone let wrong replies through
    assert both.false_positives == 0 and both.precision == 1.0
    assert both.true_positives == checks.true_positives  # no correct reply lost
    # every reply the checks accepted was asked about, with the attack's own questions
    assert len(asked) >= checks.accepted
    marker = "Sentence A:" if attack == "uncommon-phrase" else "New sentence:"
    assert all(marker in a for a in asked)
