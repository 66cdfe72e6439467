"""`--out` on the command line: evalstress deletes nothing it did not write, refuses to write
over its own inputs, and lets one run write a target at a time."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.outdir import OutLock

runner = CliRunner()
SMALL = ["--limit", "2", "-p", "truncation", "--seeds", "1", "-e", "bleu", "--quiet"]


def _data(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": f"d{i}", "hypothesis": f"Ana met Bo in Oslo on "
                                        f"day {i}. They walked home together.",
                                        "references": ["Ana and Bo met."]}) + "\n"
                            for i in range(2)), encoding="utf-8")
    return path


def _flat(output: str) -> str:
    return " ".join(output.split())


def test_a_folder_of_the_users_files_survives_and_is_named(tmp_path: Path) -> None:
    out = tmp_path / "u2"
    out.mkdir()
    (out / "precious.txt").write_text("precious")
    result = runner.invoke(app, ["run", *SMALL, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "precious.txt" in _flat(result.output) and "--force" in _flat(result.output)
    assert (out / "precious.txt").read_text() == "precious"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging


def test_force_replaces_the_folder_and_a_rerun_replaces_its_own_run(tmp_path: Path) -> None:
    out = tmp_path / "u2"
    out.mkdir()
    (out / "precious.txt").write_text("precious")
    result = runner.invoke(app, ["run", *SMALL, "--out", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert not (out / "precious.txt").exists() and (out / "results.json").exists()
    again = runner.invoke(app, ["run", *SMALL, "--out", str(out)])  # ours now: no --force
    assert again.exit_code == 0, again.output


def test_a_run_never_replaces_the_folder_of_its_data_or_cache(tmp_path: Path) -> None:
    folder = tmp_path / "s3"
    data = _data(folder / "data.jsonl")
    result = runner.invoke(app, ["run", str(data), *SMALL, "--cache-dir", str(folder / "cache"),
                                 "--out", str(folder), "--force"])
    assert result.exit_code == 2, result.output
    assert "input data" in _flat(result.output)
    assert data.exists()
    cache_only = tmp_path / "c"
    cache_only.mkdir()
    result = runner.invoke(app, ["run", str(data), *SMALL, "--cache-dir",
                                 str(cache_only / "cache"), "--out", str(cache_only)])
    assert result.exit_code == 2 and "cache folder" in _flat(result.output)


@pytest.mark.parametrize("given", [".", ".."])
def test_the_current_folder_and_its_parent_are_refused_leaving_nothing_behind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str) -> None:
    here = tmp_path / "work"
    here.mkdir()
    (here / "notes.txt").write_text("mine")
    monkeypatch.chdir(here)
    result = runner.invoke(app, ["run", *SMALL, "--out", given, "--force"])
    assert result.exit_code == 2, result.output
    assert "current folder" in _flat(result.output)
    assert sorted(p.name for p in here.iterdir()) == ["notes.txt"]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def _hold(path: str, ready: multiprocessing.synchronize.Event,
          done: multiprocessing.synchronize.Event) -> None:
    with OutLock(Path(path)):
        ready.set()
        done.wait(60)


def test_a_second_run_on_the_same_target_is_refused_at_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    context = multiprocessing.get_context("spawn")
    ready, done = context.Event(), context.Event()
    first = context.Process(target=_hold, args=(str(out), ready, done))
    first.start()
    try:
        assert ready.wait(60)
        result = runner.invoke(app, ["run", *SMALL, "--out", str(out)])
    finally:
        done.set()
        first.join(30)
    assert result.exit_code == 2, result.output
    assert f"pid {first.pid}" in _flat(result.output)
    assert not out.exists()


def test_export_and_report_refuse_to_write_over_the_run_they_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert runner.invoke(app, ["run", *SMALL, "--out", str(run)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    for command in (["export", str(run), "--variants", str(run / "scores.parquet")],
                    ["report", str(run), "--out", str(run / "results.json")],
                    ["compare", str(run), str(run), "--out", str(run / "report.html")],
                    ["check", str(run), "--junit", str(run / "examples.jsonl")]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert "file of the run" in _flat(result.output)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    rebuilt = runner.invoke(app, ["report", str(run)])  # its own report.html: rebuilt in place
    assert rebuilt.exit_code == 0, rebuilt.output
    exported = runner.invoke(app, ["export", str(run), "--variants", str(run / "v.csv")])
    assert exported.exit_code == 0, exported.output
    assert os.path.getsize(run / "v.csv") > 0
