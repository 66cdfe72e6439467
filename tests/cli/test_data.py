"""`evalstress data FOLDER` prints where each example file went, and exits 2 with one line
naming the file when the folder holds a file of the user's by one of their names."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app


def test_data_copies_the_examples_and_says_where(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["data", "examples"])
    assert result.exit_code == 0, result.output
    for name in ("summaries.jsonl", "translations.jsonl", "paragraphs.jsonl",
                 "sample.jsonl", "README.md"):
        assert f"examples/{name}" in result.output
        assert (tmp_path / "examples" / name).is_file()
    assert "5 example files in examples/" in result.output


def test_data_refuses_a_users_file_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "summaries.jsonl").write_text("mine\n")
    result = CliRunner().invoke(app, ["data", str(tmp_path)])
    assert result.exit_code == 2
    assert "summaries.jsonl" in result.output and "--force" in result.output
    assert (tmp_path / "summaries.jsonl").read_text() == "mine\n"
    forced = CliRunner().invoke(app, ["data", str(tmp_path), "--force"])
    assert forced.exit_code == 0, forced.output
    assert "summaries.jsonl" in forced.output and "replaced" in forced.output
