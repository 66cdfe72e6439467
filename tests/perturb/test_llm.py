"""LLM-written attacks as data: the built-in set, the chat they send, and user prompt files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evalstress.analyses.expectations import expectation_for
from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.perturb.base import PerturbContext, get_perturbation, registry
from evalstress.perturb.llm import (
    LLMPerturbation,
    PromptError,
    builtin_attacks,
    load_prompt_file,
)
from evalstress.perturb.llm_checks import validate

PAPER_000_LLM = {  # the 14 attacks paper 000 has GPT-4 write (its appendix B), by our names
    "phrase-repetition": "000:repetition", "passive-voice": "000:passive-voice",
    "inversion": "000:inversion", "improper-connective": "000:improper-connective",
    "incorrect-verb-form": "000:incorrect-verb-form", "uncommon-phrase": "000:uncommon-phrase",
    "complex-sentence": "000:complex-sentence", "abbreviation": "000:abbreviation",
    "hypernym": "000:hypernym", "complement": "000:complement",
    "continuation": "000:continuation", "different-entity": "000:different-entity",
    "conflicting-fact": "000:conflicting-fact", "fact-negation": "000:negation",
}
PAPER_003_LLM = {"fictional-named-entities": "word", "grammatical-errors": "word",
                 "rewriting-and-insertion": "sentence"}
TASKS = {"summarization", "dialogue", "story", "qa"}


def test_the_papers_llm_attacks_are_registered_with_their_identity() -> None:
    reg = registry()
    for name, attack in PAPER_000_LLM.items():
        cls = reg[name]
        assert cls.method == "llm" and cls.attack == attack and cls.source_papers == ("000",)
        row = expectation_for(name)
        assert row is not None and row.source == "table21" and row.level == cls.level
    for name, level in PAPER_003_LLM.items():
        cls = reg[name]
        assert cls.method == "llm" and cls.level == level and cls.grid == ("minor", "major")


@pytest.mark.parametrize("name", sorted(builtin_attacks()))
def test_each_severity_has_six_demonstrations_across_the_four_tasks(name: str) -> None:
    spec = builtin_attacks()[name]
    for severity in spec.grid:
        demos = spec.resolve(severity).demonstrations
        assert len(demos) >= 6, (name, severity)
        assert {d.task for d in demos} >= TASKS, (name, severity)


@pytest.mark.parametrize("name", sorted(builtin_attacks()))
def test_every_demonstration_passes_its_own_attack_checks(name: str) -> None:
    """The demonstrations show the model what the checks will accept: a demonstration that its
    own attack rejects would teach the model to fail."""
    parser = TextParser()
    spec = builtin_attacks()[name]
    for severity in spec.grid:
        resolved = replace(spec.resolve(severity), demonstrations=())
        for demo in spec.resolve(severity).demonstrations:
            rejection = validate(parser.parse(demo.original), demo.perturbed, resolved, parser)
            assert rejection is None, (severity, demo.task, str(rejection))


def test_the_chat_shows_instruction_demonstrations_then_the_text() -> None:
    pert = get_perturbation("fictional-named-entities")
    assert isinstance(pert, LLMPerturbation)
    chat = pert.messages("Ada Lovelace lived in London.", "qa", "major")
    assert chat[0]["role"] == "system" and "at least two different entities" in chat[0]["content"]
    assert "<text>" in chat[0]["content"]
    turns = chat[1:-1]
    assert [t["role"] for t in turns] == ["user", "assistant"] * 6
    assert all(t["content"].startswith("<text>\n") for t in turns[1::2])
    assert "Lovelace" in chat[-1]["content"] and chat[-1]["role"] == "user"
    # every text of the attack and severity shares the prefix (prefix caching on servers)
    other = pert.messages("The Nile flows north.", "story", "major")
    assert other[:-1] == chat[:-1]
    minor = pert.messages("Ada Lovelace lived in London.", "qa", "minor")
    assert "exactly one important entity" in minor[0]["content"] and minor[1:] != chat[1:]


def test_shots_limits_demonstrations_keeping_the_same_task_first() -> None:
    pert = get_perturbation("continuation", shots=2)
    chat = pert.messages("Some text here.", "story", "default")  # type: ignore[attr-defined]
    users = [t["content"] for t in chat[1:-1] if t["role"] == "user"]
    # continuation has one story demonstration: it is kept; the other is the file's first
    assert len(users) == 2 and "the ending of a story" in users[-1]
    assert "City officials in Harwick" in users[0]
    with pytest.raises(KeyError, match="Did you mean 'shots'"):
        get_perturbation("continuation", shot=2)


def test_apply_is_not_the_way_to_run_an_llm_attack() -> None:
    example = Example("e", "qa", "", "A text.")
    pert = get_perturbation("hypernym")
    with pytest.raises(RuntimeError, match="--generator"):
        pert.apply(PerturbContext(example, TextParser()), "default", 0)


def test_a_prompt_file_overrides_instruction_demonstrations_and_bounds(tmp_path: Path) -> None:
    file = tmp_path / "mine.yaml"
    file.write_text(
        "hypernym:\n"
        "  instruction: Use broader words.\n"
        "  bounds: {length_change: [-0.5, 0.5]}\n"
        "  add_demonstrations:\n"
        "    - {task: qa, original: The cat sat., perturbed: The animal sat.}\n", "utf-8")
    prompts = load_prompt_file(file)
    assert prompts.added == [] and set(prompts.overrides) == {"hypernym"}
    pert = get_perturbation("hypernym")
    builtin_chat = pert.messages("A dog barked.", "qa", "default")  # type: ignore[attr-defined]
    assert prompts.apply([pert]) == 1
    spec = pert.spec  # type: ignore[attr-defined]
    assert spec.bounds.length_change == (-0.5, 0.5)
    assert spec.bounds.edit_ratio == builtin_attacks()["hypernym"].bounds.edit_ratio  # merged
    assert len(spec.demonstrations) == len(builtin_attacks()["hypernym"].demonstrations) + 1
    chat = pert.messages("A dog barked.", "qa", "default")  # type: ignore[attr-defined]
    assert "Use broader words." in chat[0]["content"] and chat != builtin_chat
    assert chat[-3]["content"].endswith("The cat sat.\n</text>")  # appended: the last shown
    assert registry()["hypernym"].default_spec == builtin_attacks()["hypernym"]  # untouched


def test_a_prompt_file_can_add_a_new_attack(tmp_path: Path) -> None:
    file = tmp_path / "new.yaml"
    file.write_text(
        "tense-shift:\n"
        "  level: word\n"
        "  damages: [grammaticality]\n"
        "  description: Move verbs into the future tense.\n"
        "  instruction: Put every verb in the future tense.\n"
        "  checks: [verb-form-changed]\n"
        "  demonstrations:\n"
        "    - {task: story, original: She ran home., perturbed: She will run home.}\n", "utf-8")
    prompts = load_prompt_file(file)
    assert prompts.added == ["tense-shift"]
    pert = get_perturbation("tense-shift")
    assert pert.method == "llm" and pert.damages == ("grammaticality",)
    assert load_prompt_file(file).added == ["tense-shift"]  # loading twice is fine


@pytest.mark.parametrize(("body", "message"), [
    ("hypernym:\n  instrucion: x\n", "attack 'hypernym', field 'instrucion': unknown field; "
     "did you mean 'instruction'?"),
    ("hypernym:\n  checks: {noun-replaced: {}}\n", "field 'checks.noun-replaced': unknown "
     "check; did you mean 'nouns-replaced'?"),
    ("hypernym:\n  bounds: {edit_ratio: [0.5, 0.1]}\n", "field 'bounds.edit_ratio': low 0.5 is "
     "above high 0.1"),
    ("hypernym:\n  bounds: {length: [0, 1]}\n", "field 'bounds.length': unknown bound; did you "
     "mean 'length_change'?"),
    ("hypernym:\n  checks: {shortens: {minimum: 0.2}}\n", "field 'checks.shortens.minimum': "
     "unknown parameter; did you mean 'min'?"),
    ("hypernym:\n  demonstrations: [{task: qa, original: A b., perturbed: A b.}]\n",
     "field 'demonstrations[0].perturbed': is the original unchanged"),
    ("hypernim:\n  bounds: {edit_ratio: [0, 1]}\n", "is not a known LLM attack; did you mean "
     "'hypernym'?"),
    ("truncation:\n  instruction: x\n", "'truncation' is a rule-based perturbation"),
    ("newone:\n  instruction: Do it.\n  level: word\n  description: d\n  demonstrations: "
     "[{task: qa, original: A., perturbed: B.}]\n", "field 'damages': is required"),
    ("grammatical-errors:\n  levels: {huge: {instruction: x}}\n", "field 'levels.huge': 'huge' "
     "is not in the grid minor, major"),
])
def test_prompt_file_errors_name_file_attack_and_field(tmp_path: Path, body: str,
                                                       message: str) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(body, "utf-8")
    with pytest.raises(PromptError) as info:
        load_prompt_file(file)
    assert str(info.value).startswith(str(file))
    assert message in str(info.value)


def test_unreadable_prompt_files_say_so(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match=r"absent\.yaml: does not exist"):
        load_prompt_file(tmp_path / "absent.yaml")
    # 14 bytes on line 1, then 18 before the Latin-1 e-acute: offset 32
    (tmp_path / "latin.yaml").write_bytes("continuation:\n  instruction: caf\xe9\n"
                                          .encode("latin-1"))
    with pytest.raises(PromptError, match=r"latin\.yaml, line 2: is not UTF-8 text: byte 0xE9 at "
                       r"byte offset 32"):
        load_prompt_file(tmp_path / "latin.yaml")
    (tmp_path / "broken.yaml").write_text("a: [", "utf-8")
    with pytest.raises(PromptError, match="invalid YAML"):
        load_prompt_file(tmp_path / "broken.yaml")


NEWS = ("City officials in Harwick approved a plan on Monday to turn the closed Marlow paper mill "
        "into 300 affordable homes. Construction will begin next spring and should take three "
        "years.")


def test_grammatical_errors_take_paper_003s_count_per_task_under_rule_paper() -> None:
    """Paper 003, Table 2: one grammatical error in a story ending, one or more in an answer,
    two or more in a summary or a translation. Under rule=paper the minor level asks for that
    least count; a summary with one error ("approves") passes our minor level (one or two) but
    not the paper's, and one with two errors passes both."""
    parser = TextParser()
    ours = get_perturbation("grammatical-errors")
    paper = get_perturbation("grammatical-errors", rule="paper")
    assert isinstance(ours, LLMPerturbation) and isinstance(paper, LLMPerturbation)
    for task, wanted in (("story", "exactly one error"), ("qa", "exactly one error"),
                         ("summarization", "exactly two errors"),
                         ("translation", "exactly two errors")):
        assert wanted in paper.messages(NEWS, task, "minor")[0]["content"], task
        assert "one or two errors" in ours.messages(NEWS, task, "minor")[0]["content"], task
    original = parser.parse(NEWS)
    one = NEWS.replace("approved", "approves")
    two = one.replace("should take", "should takes")
    assert validate(original, one, ours.resolved("minor", "summarization"), parser) is None
    rejected = validate(original, one, paper.resolved("minor", "summarization"), parser)
    assert rejected is not None and "edit" in str(rejected)
    assert validate(original, two, paper.resolved("minor", "summarization"), parser) is None
    # major has no count in the paper: the same under both rules
    assert paper.resolved("major", "summarization") == ours.resolved("major", "summarization")


def test_paper_demonstrations_pass_the_papers_own_checks() -> None:
    parser = TextParser()
    spec = builtin_attacks()["grammatical-errors"]
    for task, levels in spec.paper.items():
        for level in levels:
            resolved = spec.resolve(level, task, paper=True)
            for demo in resolved.demonstrations:
                checked = replace(resolved, demonstrations=())
                rejection = validate(parser.parse(demo.original), demo.perturbed, checked, parser)
                assert rejection is None, (task, level, str(rejection))


def test_a_paper_setting_names_its_bad_field(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("grammatical-errors:\n  paper:\n    rule: r\n    tasks:\n      stroy:\n"
                   "        minor: {instruction: x}\n")
    with pytest.raises(PromptError, match=r"field 'paper.tasks.stroy'.*did you mean 'story'"):
        load_prompt_file(bad)


def test_an_attack_reaches_worker_processes_with_its_params_and_prompt_override() -> None:
    """Attack classes are made at run time; `--workers N` pickles the suite for its processes,
    which failed with "attribute lookup ContinuationLLM ... failed"."""
    import pickle

    pert = get_perturbation("continuation", shots=1)
    pert.with_spec(replace(pert.spec, instruction="Add one more sentence to the text."))
    copy = pickle.loads(pickle.dumps(pert))
    assert type(copy).__name__ == "ContinuationLLM" and copy.name == "continuation"
    assert copy.params == pert.params and copy.spec.instruction.startswith("Add one more")
    asked = copy.messages("The ferry left at dawn.", "story", "default")
    assert asked == pert.messages("The ferry left at dawn.", "story", "default")
    assert "Add one more sentence" in asked[0]["content"]
