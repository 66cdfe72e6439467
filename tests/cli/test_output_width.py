"""The command line's output piped to a file or another program is laid out at $COLUMNS when
set, else at 100 columns (it was 132, whatever $COLUMNS said); a path is never cut."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app


def _quickstart(tmp_path: Path, columns: str | None) -> list[str]:
    result = CliRunner().invoke(app, ["quickstart", "--limit", "1", "--out",
                                      str(tmp_path / f"run{columns}"), "--workers", "1",
                                      "--cache-dir", str(tmp_path / "cache")],
                                env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_piped_output_follows_columns_and_is_100_wide_without(tmp_path: Path) -> None:
    narrow = _quickstart(tmp_path, "80")
    # lines filled to 80, none wider but a path too long for any line: whole on its own line
    assert max(len(line) for line in narrow if len(line.split()) > 1) == 80
    assert all(line.strip().startswith(str(tmp_path)) for line in narrow if len(line) > 80)
    default = _quickstart(tmp_path, None)
    assert 80 < max(len(line) for line in default) <= 100
    assert any(line.startswith("  bleu: ") and len(line) > 80 for line in default)
