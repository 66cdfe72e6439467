"""`evalstress cache` on a damaged cache file: one line naming it, exit 2."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app


def test_a_cache_file_that_is_not_sqlite_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "scores.sqlite").write_bytes(b"this is not a database, it is text" * 100)
    for args in (["cache", "stats", "--cache-dir", str(folder)],
                 ["cache", "merge", str(folder), "--cache-dir", str(tmp_path / "merged")]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        flat = " ".join(result.output.split())
        assert f"cache file {folder / 'scores.sqlite'}: it is not an SQLite cache" in flat
