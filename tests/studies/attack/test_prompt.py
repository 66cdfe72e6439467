"""The generation prompt, criteria resolution and the command line's clear errors."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.studies.attack.prompt import build_messages
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
    assert text.startswith("Your task is to write a summary of the document.")
    assert "Stick to the facts." in text and SOURCE in text
    assert text.index("low one") < text.index("high one")
    assert "Score: -12.5" in text and "Score: 30.0" in text
    assert text.index("high one") < text.index(SOURCE)
    plain = build_messages(example(), history)[1]["content"]
    assert "criteria" not in plain


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
