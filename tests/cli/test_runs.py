"""Commands on finished runs (cli/runs.py): an output that cannot be written ends the command
at once, in one line naming it, before any run is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app

runner = CliRunner()


@pytest.mark.parametrize(("args", "flag"), [
    (["compare", "{missing}", "{missing}", "--out", "{folder}"], "--out"),
    (["report", "{missing}", "--out", "{folder}"], "--out"),
    (["check", "{missing}", "--junit", "{folder}"], "--junit"),
    (["export", "{missing}", "--variants", "{folder}"], "--variants"),
])
def test_an_output_file_where_a_folder_stands_is_refused_first(
        tmp_path: Path, args: list[str], flag: str) -> None:
    folder = tmp_path / "taken.html"
    folder.mkdir()
    filled = [a.format(missing=tmp_path / "no-run", folder=folder) for a in args]
    result = runner.invoke(app, filled)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"{flag} {folder}: is a folder, not a file" in said
    assert "no-run" not in said  # refused before the run directory was looked at


def test_a_run_directory_where_a_file_stands_is_refused(tmp_path: Path) -> None:
    taken = tmp_path / "out"
    taken.write_text("not a folder")
    result = runner.invoke(app, ["run", "--limit", "1", "-e", "bleu", "--out", str(taken)])
    assert result.exit_code == 2, result.output
    assert f"--out {taken}: exists and is not a directory" in " ".join(result.output.split())
