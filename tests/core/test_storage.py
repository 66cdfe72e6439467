"""Storage the machine refuses: one line naming the path and why, before any work if possible."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.storage import (
    StorageError,
    atomic_write_parts,
    atomic_write_text,
    check_cache_dir,
    check_target,
    describe,
)


def test_a_full_disk_is_described_in_one_line_naming_the_path() -> None:
    exc = OSError(errno.ENOSPC, "No space left on device", "/runs/x/scores.parquet")
    assert describe(exc) == "cannot write /runs/x/scores.parquet: the disk is full"
    # SQLite and pyarrow lose the errno: their wording is recognised too
    assert describe(sqlite3.OperationalError("database or disk is full"), "cache.sqlite") == (
        "cannot write cache.sqlite: the disk is full")
    assert describe(ValueError("not a storage problem")) is None


def test_a_cache_folder_that_cannot_exist_fails_before_any_work(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    with pytest.raises(StorageError, match=r"cache folder .*a-file/cache.*--cache-dir"):
        check_cache_dir(blocker / "cache")


def test_an_output_file_where_a_folder_stands_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="is a folder, not a file"):
        check_target(tmp_path, "JUnit file")


def test_an_atomic_write_that_fails_leaves_the_old_file(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.html"
    target.write_text("old report", encoding="utf-8")

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("evalstress.core.storage.os.replace", full)
    with pytest.raises(OSError):
        atomic_write_text(target, "new report")
    assert target.read_text(encoding="utf-8") == "old report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left


def test_parts_are_written_in_order_and_a_failing_part_leaves_the_old_file(
        tmp_path: Path) -> None:
    """A page written in pieces is the pieces joined, as UTF-8; a piece that fails to come
    (an error while the page is rendered) leaves the old file and no temporary."""
    target = tmp_path / "report.html"
    atomic_write_parts(target, iter(["<p>", "café ", "</p>"]))
    assert target.read_bytes() == "<p>café </p>".encode()

    def broken() -> object:
        yield "<p>half"
        raise ValueError("a value the page cannot show")

    with pytest.raises(ValueError, match="cannot show"):
        atomic_write_parts(target, broken())  # type: ignore[arg-type]
    assert target.read_bytes() == "<p>café </p>".encode()
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_cli_names_a_bad_cache_dir_without_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    result = CliRunner().invoke(app, ["quickstart", "--limit", "2", "--quiet",
                                      "--out", str(tmp_path / "run"),
                                      "--cache-dir", str(blocker / "cache")])
    assert result.exit_code == 2
    assert "a-file" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()  # nothing started


def test_a_bad_environment_cache_dir_does_not_matter_when_cache_dir_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(blocker / "cache"))
    result = CliRunner().invoke(app, ["quickstart", "--limit", "2", "--quiet", "--workers", "1",
                                      "--out", str(tmp_path / "run"),
                                      "--cache-dir", str(tmp_path / "good-cache")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "results.json").exists()


def test_a_file_size_limit_and_a_damaged_sqlite_file_are_storage_errors() -> None:
    """EFBIG (a process under `ulimit -f`) ended a run as an unexpected error (exit 4)."""
    line = describe(OSError(errno.EFBIG, "File too large", "runs/x/scores.parquet"))
    assert line == ("cannot write runs/x/scores.parquet: the file grew past the size this "
                    "process may write (ulimit -f)")
    assert "not an SQLite cache" in (describe(sqlite3.DatabaseError("file is not a database"))
                                     or "")
