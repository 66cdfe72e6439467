"""The output target: a run replaces only a folder evalstress wrote, never its own inputs, and
one run writes a target at a time."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from evalstress.engine.outdir import (
    MARKER,
    OutDirError,
    OutLock,
    check_not_run_file,
    check_out_dir,
    is_owned,
    lock_path,
    write_marker,
)


def test_a_new_or_empty_folder_is_accepted(tmp_path: Path) -> None:
    check_out_dir(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_out_dir(tmp_path / "empty")


def test_a_folder_of_foreign_files_is_refused_naming_them(tmp_path: Path) -> None:
    out = tmp_path / "u2"
    out.mkdir()
    (out / "precious.txt").write_text("precious")
    (out / "notes").mkdir()
    with pytest.raises(OutDirError) as caught:
        check_out_dir(out)
    message = str(caught.value)
    assert str(out) in message and "precious.txt" in message and "notes/" in message
    assert "--force" in message
    check_out_dir(out, force=True)  # the user said so


def test_a_long_listing_is_cut_with_a_count(tmp_path: Path) -> None:
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text("x")
    with pytest.raises(OutDirError, match="and 3 more"):
        check_out_dir(tmp_path)


def test_a_marked_folder_or_an_older_run_of_ours_is_owned(tmp_path: Path) -> None:
    marked, older, foreign = tmp_path / "marked", tmp_path / "older", tmp_path / "foreign"
    for folder in (marked, older, foreign):
        folder.mkdir()
        (folder / "scores.parquet").write_text("x")
    write_marker(marked, "run")
    (older / "results.json").write_text(json.dumps({"evalstress": "0.9.0", "analyses": {}}))
    (foreign / "results.json").write_text(json.dumps({"model": "mine", "accuracy": 0.9}))
    assert is_owned(marked) and is_owned(older)
    assert not is_owned(foreign)
    check_out_dir(marked)
    check_out_dir(older)
    with pytest.raises(OutDirError):
        check_out_dir(foreign)


def test_inputs_and_the_current_folder_inside_out_are_refused_even_with_force(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "s3"
    out.mkdir()
    (out / "data.jsonl").write_text("{}\n")
    write_marker(out, "run")  # even a run directory of ours: its replacement deletes the input
    with pytest.raises(OutDirError, match="input data"):
        check_out_dir(out, force=True, inputs=[("input data", out / "data.jsonl")])
    with pytest.raises(OutDirError, match="cache folder"):
        check_out_dir(out, force=True, inputs=[("cache folder", out / "cache")])
    monkeypatch.chdir(out)
    for given in (Path("."), Path(".."), out):
        with pytest.raises(OutDirError, match="current folder"):
            check_out_dir(given, force=True)


def test_a_file_where_the_folder_belongs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutDirError, match="not a directory"):
        check_out_dir(tmp_path / "f", force=True)


def _hold(path: str, ready: multiprocessing.synchronize.Event,
          done: multiprocessing.synchronize.Event) -> None:
    with OutLock(Path(path)):
        ready.set()
        done.wait(30)


def test_a_second_writer_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    out = tmp_path / "run"
    context = multiprocessing.get_context("spawn")
    ready, done = context.Event(), context.Event()
    holder = context.Process(target=_hold, args=(str(out), ready, done))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(OutDirError) as caught:
            OutLock(out).acquire()
        assert f"pid {holder.pid}" in str(caught.value)
    finally:
        done.set()
        holder.join(30)
    with OutLock(out):  # free again once the first writer is done
        assert lock_path(out).read_text() == str(os.getpid())
    assert not lock_path(out).exists()  # released: no lock file left behind


def test_a_killed_writer_leaves_the_target_free(tmp_path: Path) -> None:
    out = tmp_path / "run"
    context = multiprocessing.get_context("spawn")
    ready, done = context.Event(), context.Event()
    holder = context.Process(target=_hold, args=(str(out), ready, done))
    holder.start()
    assert ready.wait(60)
    holder.kill()
    holder.join(30)
    assert lock_path(out).exists()  # the file stays, the kernel's lock does not
    with OutLock(out):
        pass


def test_writing_over_a_file_of_the_run_read_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("scores.parquet", "report.html", "results.json"):
        (run / name).write_text("x")
    with pytest.raises(OutDirError, match="file of the run"):
        check_not_run_file(run / "scores.parquet", [run], "--variants")
    with pytest.raises(OutDirError):  # the run named by its results.json
        check_not_run_file(run / "scores.parquet", [run / "results.json"], "--variants")
    check_not_run_file(run / "report.html", [run], "--out", allowed=("report.html",))
    check_not_run_file(run / "variants.csv", [run], "--variants")  # a new file beside them
    check_not_run_file(tmp_path / "elsewhere.csv", [run], "--variants")


def test_the_marker_names_the_writer(tmp_path: Path) -> None:
    write_marker(tmp_path, "attack")
    data = json.loads((tmp_path / MARKER).read_text())
    assert data["command"] == "attack" and data["evalstress"]
