"""What every command shares: progress on a stderr that is a log rather than a terminal."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app

RUN = ["run", "--limit", "3", "-p", "truncation", "--seeds", "1", "-e", "bleu", "--workers", "1",
       "--no-cache"]


def test_run_writes_plain_progress_lines_to_a_stderr_that_is_no_terminal(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*RUN, "--out", str(tmp_path / "run")],
                                env={"EVALSTRESS_PROGRESS_INTERVAL": "0.01"})
    assert result.exit_code == 0, result.output
    said = result.stderr.splitlines()
    assert "examples: 0/3 (0%)" in said, result.stderr
    assert any(line.startswith("examples: 3/3 (100%), ") and " texts/s, took " in line
               for line in said), result.stderr
    assert "examples: " not in result.stdout


def test_quiet_run_writes_no_progress_lines(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*RUN, "--quiet", "--out", str(tmp_path / "run")],
                                env={"EVALSTRESS_PROGRESS_INTERVAL": "0.01"})
    assert result.exit_code == 0, result.output
    assert "examples: " not in result.output


def test_a_bad_progress_interval_ends_the_command_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*RUN, "--out", str(tmp_path / "run")],
                                env={"EVALSTRESS_PROGRESS_INTERVAL": "soon"})
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "error: EVALSTRESS_PROGRESS_INTERVAL='soon': give the seconds between two progress "
        "lines as a positive number, e.g. 30 or 0.5")
