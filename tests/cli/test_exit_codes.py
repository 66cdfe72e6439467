"""Exit codes mean one thing each: an unexpected exception is one line and exit 4 (never 1,
which is `check`'s "expectations not met"), and a user's text never breaks the terminal output
as rich markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalstress.job.run as job_run
from evalstress.cli import app
from evalstress.cli.guard import EXIT_UNEXPECTED

runner = CliRunner()
SMALL = ["--limit", "2", "-p", "truncation", "--seeds", "1", "--quiet"]


def _boom(job: object) -> object:
    raise RuntimeError("the index\nwas -1 while scoring")


def test_an_unexpected_exception_is_one_line_and_exit_4(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_run, "score_job", _boom)
    result = runner.invoke(app, ["run", *SMALL, "-e", "bleu", "--out", str(tmp_path / "o")])
    assert result.exit_code == EXIT_UNEXPECTED == 4
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1
    flat = " ".join(result.output.split())
    assert "unexpected RuntimeError: the index was -1 while scoring" in flat
    assert "run again with --debug for the traceback" in flat
    assert "Traceback" not in result.output


def test_debug_shows_the_traceback_and_still_exits_4(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`--debug` turned exit 4 into Python's 1, the code the docs keep for `check`."""
    monkeypatch.setattr(job_run, "score_job", _boom)
    result = runner.invoke(app, ["--debug", "run", *SMALL, "-e", "bleu",
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 4
    assert "Traceback (most recent call last)" in result.output and "_boom" in result.output
    assert "unexpected RuntimeError" in " ".join(result.output.split())
    monkeypatch.setenv("EVALSTRESS_DEBUG", "1")
    result = runner.invoke(app, ["run", *SMALL, "-e", "bleu", "--out", str(tmp_path / "o")])
    assert result.exit_code == 4 and "Traceback (most recent call last)" in result.output


@pytest.mark.parametrize("label", ["[/]x", "[bold]mine[/bold]", "[link=http://x]y"])
def test_a_label_that_looks_like_markup_prints_as_written(tmp_path: Path, label: str) -> None:
    """`-e "bleu:name=[/]x"` crashed the summary after the outputs were written (exit 1)."""
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", "--limit", "2", "-p", "truncation", "--seeds", "1",
                                 "-e", f"bleu:name={label}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert label in result.output
    assert label in json.loads((out / "results.json").read_text())["evaluators"]


def test_a_write_that_fails_names_the_file_it_was_for(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A file object's write error knows no file name: `report` and a run's report said
    "cannot write: ..." (or exit 4 for EFBIG) without the file."""
    import errno

    import evalstress.report.html as html

    run = tmp_path / "run"
    assert runner.invoke(app, ["run", *SMALL, "-e", "bleu", "--out", str(run)]).exit_code == 0

    def full(*args: object, **kwargs: object) -> object:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(html, "write_html", full)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 2, result.output
    assert f"cannot write {run / 'report.html'}: the disk is full" in " ".join(
        result.output.split())
    again = runner.invoke(app, ["run", *SMALL, "-e", "bleu", "--out", str(run)])
    assert again.exit_code == 2, again.output
    flat = " ".join(again.output.split())
    assert "report.html: the disk is full" in flat and f"{run} keeps its previous contents" in flat


#: a window title, a bell, a cleared screen and a right-to-left override
CONTROLS = "\x1b]0;pwned\x07\x1b[2J\u202e"


def test_control_characters_of_the_data_reach_the_terminal_as_escapes(tmp_path: Path) -> None:
    """An example's id, its task and an evaluator's label printed their escape sequences raw:
    the terminal's title changed and the screen cleared."""
    data = tmp_path / "data.jsonl"
    rows = [{"id": f"a{CONTROLS}{i}", "task": "qa", "hypothesis": "The bridge opened in 1898. "
             "It has three stone arches over the river.", "references": ["It opened in 1898."]}
            for i in range(2)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    wide = CliRunner(env={"COLUMNS": "200"})
    result = wide.invoke(app, ["run", str(data), "-p", "truncation", "--seeds", "1",
                               "-e", f"bleu:name=b{CONTROLS}", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    shown = "\\x1b]0;pwned\\x07\\x1b[2J\\u202e"
    assert f"b{shown}" in result.output
    assert not any(raw in result.output for raw in ("\x1b", "\x07", "\u202e"))
    rows[0]["task"] = f"qa{CONTROLS}"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    result = wide.invoke(app, ["run", str(data), "-e", "bleu", "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and f"unknown task 'qa{shown}'" in result.output
    assert not any(raw in result.output for raw in ("\x1b", "\x07", "\u202e"))
    rows[0].update(task="qa", id=rows[1]["id"])
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    result = wide.invoke(app, ["run", str(data), "-e", "bleu", "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and f"duplicate id 'a{shown}1'" in result.output
    assert not any(raw in result.output for raw in ("\x1b", "\x07", "\u202e"))
