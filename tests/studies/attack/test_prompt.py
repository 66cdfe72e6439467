"""The generation prompt, criteria resolution and the command line's clear errors."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.data import builtin_corpus
from evalstress.core.text import TextParser
from evalstress.perturb.base import PerturbContext, Skip
from evalstress.studies.attack.prompt import build_messages, next_speaker, split_answer
from evalstress.studies.attack.rules import get_rule
from evalstress.studies.attack.scoring import split_victim_spec
from evalstress.studies.attack.setup import resolve_criteria
from evalstress.studies.attack.trajectory import Candidate

from .conftest import SOURCE, example


def test_prompt_holds_task_criteria_trajectory_and_source() -> None:
    history = [Candidate("low one", 1, 50, 50, -12.5, False),
               Candidate("high one", 1, 50, 50, 30.0, False)]
    [system, user] = build_messages(example(), history, criteria="Stick to the facts.")
    text = user["content"]
    assert system["role"] == "system" and "<text>" in system["content"]
    assert text.startswith("Your task is to write a summary of the document. Keep it to at "
                           "most 3 sentences and 40 words.")  # the released prompt's bound
    assert "Stick to the facts." in text and SOURCE in text
    assert text.index("low one") < text.index("high one")
    assert "Score: -12.5" in text and "Score: 30.0" in text
    assert text.index("high one") < text.index(SOURCE)
    plain = build_messages(example(), history)[1]["content"]
    assert "criteria" not in plain


def prompt_of(example_id: str) -> str:
    [chosen] = [e for e in builtin_corpus() if e.id == example_id]
    return build_messages(chosen, [Candidate(chosen.hypothesis, 0, 50, 50, 0.0, False)])[1][
        "content"]


def test_a_dialogue_response_prompt_names_who_speaks_next() -> None:
    # rsp-01 ends with Lena asking the waiter a question: the reply is the waiter's turn
    text = prompt_of("rsp-01")
    assert text.startswith("Your task is to write the next turn of the conversation")
    assert "Lena: Is it very rich?" in text
    assert "The text you write is the next turn, spoken by Waiter." in text
    assert "at most 2 sentences and 30 words" in text
    assert next_speaker("A: hi\nB: hello\nB: anyone there?") == "A"
    assert next_speaker("no speakers here") is None


def test_a_question_generation_prompt_shows_passage_and_answer_apart() -> None:
    text = prompt_of("qg-01")
    assert text.startswith("Your task is to write a question about the passage")
    passage = text.split("Passage:\n", 1)[1].split("\n\n", 1)[0]
    assert passage.endswith("footpath and cycle lane.") and "Answer:" not in passage
    assert "The answer your question must have:\n1971" in text
    assert "one sentence of at most 25 words" in text
    assert split_answer("Some passage.") == ("Some passage.", None)


def test_data_to_text_and_dialogue_summaries_have_bounds_too() -> None:
    data = prompt_of("d2t-01")
    assert "Data:\nname[The Copper Kettle]" in data and "at most 3 sentences and 60 words" in data
    assert "at most 2 sentences and 30 words" in prompt_of("dlg-01")  # the released bound


def test_the_corpus_has_examples_of_paper_004s_tasks_and_their_rules_apply() -> None:
    corpus = builtin_corpus()
    for task in ("dialogue-response", "question-generation", "data-to-text"):
        assert sum(e.task == task for e in corpus) >= 3, task
    parser = TextParser()
    for item in corpus:
        if item.task == "dialogue-response":
            last = item.source.splitlines()[-1].split(": ", 1)[1]
            variant = get_rule("negate-previous").apply(PerturbContext(item, parser, corpus),
                                                        1.0, 0)
            # the response becomes the last utterance with a negation in it
            assert not isinstance(variant, Skip)
            assert "not" in variant.text.split() and variant.text != last
        if item.task == "question-generation":
            variant = get_rule("question-word-change").apply(
                PerturbContext(item, parser, corpus), 1.0, 0)
            assert not isinstance(variant, Skip) and variant.text != item.hypothesis


def test_criteria_from_an_aspect_a_file_or_text(tmp_path: Path) -> None:
    assert resolve_criteria(None) is None
    assert resolve_criteria("faithfulness") not in (None, "faithfulness")
    path = tmp_path / "c.txt"
    path.write_text("Only facts from the article.", encoding="utf-8")
    assert resolve_criteria(str(path)) == "Only facts from the article."
    assert resolve_criteria("Be brief.") == "Be brief."


def test_victim_spec_aspect_suffix() -> None:
    assert split_victim_spec("rouge@rougeL") == ("rouge", "rougeL")
    assert split_victim_spec("bleu") == ("bleu", None)
    url = "judge:model=m,base_url=http://user@host/v1"
    assert split_victim_spec(url) == (url, None)


def test_command_line_errors_name_the_problem(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "task": "summarization", "source": "s", "hypothesis": "h", '
                    '"references": ["r"]}\n', encoding="utf-8")
    base = ["attack", str(data), "-v", "bleu", "-g", "judge:model=g,base_url=http://127.0.0.1:9/v1"]
    runner = CliRunner()
    result = runner.invoke(app, [*base, "--method", "textfoler"])
    assert result.exit_code == 2 and "did you mean 'textfooler'" in result.output
    result = runner.invoke(app, [*base, "--method", "adveval"])
    assert result.exit_code == 2 and "needs a generator" in result.output
    result = runner.invoke(app, [*base, "--method", "rules", "--range", "rouge=0:1"])
    assert result.exit_code == 2 and "--range names no victim" in result.output
    result = runner.invoke(app, [*base, "--method", "rules", "--direction", "up"])
    assert result.exit_code == 2 and "good, bad or both" in result.output
