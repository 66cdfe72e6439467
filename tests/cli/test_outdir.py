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


def test_force_writes_beside_the_users_files_and_a_rerun_replaces_only_its_own(
        tmp_path: Path) -> None:
    out = tmp_path / "u2"
    out.mkdir()
    (out / "precious.txt").write_text("precious")
    result = runner.invoke(app, ["run", *SMALL, "--out", str(out), "--force"])
    assert result.exit_code == 0, result.output
    # --force no longer deletes the user's file: it stays beside the run's
    assert (out / "precious.txt").read_text() == "precious" and (out / "results.json").exists()
    again = runner.invoke(app, ["run", *SMALL, "--out", str(out)])  # still the user's file
    assert again.exit_code == 2 and "precious.txt" in _flat(again.output)
    (out / "precious.txt").unlink()
    again = runner.invoke(app, ["run", *SMALL, "--out", str(out)])  # ours alone: replaced
    assert again.exit_code == 0, again.output


def test_a_file_added_to_a_run_directory_is_never_deleted_by_a_rerun(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", *SMALL, "--out", str(out)]).exit_code == 0
    (out / "notes.txt").write_text("what I saw")
    (out / "plots").mkdir()
    (out / "plots" / "mine.png").write_bytes(b"png")
    result = runner.invoke(app, ["run", *SMALL, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "notes.txt" in _flat(result.output) and "plots/" in _flat(result.output)
    forced = runner.invoke(app, ["run", *SMALL, "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    assert (out / "notes.txt").read_text() == "what I saw"
    assert (out / "plots" / "mine.png").read_bytes() == b"png"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_an_empty_marker_does_not_make_the_users_files_ours(tmp_path: Path) -> None:
    out = tmp_path / "forged"
    out.mkdir()
    (out / "precious.txt").write_text("precious")
    (out / ".evalstress-run").write_text("")
    result = runner.invoke(app, ["run", *SMALL, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "precious.txt" in _flat(result.output)
    assert (out / "precious.txt").read_text() == "precious"


def test_a_symbolic_link_at_the_lock_leaves_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim.conf"
    victim.write_text("precious settings")
    (tmp_path / ".X.lock").symlink_to(victim)
    result = runner.invoke(app, ["run", *SMALL, "--out", str(tmp_path / "X")])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _flat(result.output) and ".X.lock" in _flat(result.output)
    assert victim.read_text() == "precious settings"
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("sibling", [".X.old", ".X.partial"])
def test_a_hidden_sibling_evalstress_did_not_make_is_refused_before_any_work(
        tmp_path: Path, sibling: str) -> None:
    folder = tmp_path / sibling
    folder.mkdir()
    (folder / "thesis.tex").write_text("mine")
    result = runner.invoke(app, ["run", *SMALL, "--out", str(tmp_path / "X"), "--force"])
    assert result.exit_code == 2, result.output
    assert sibling in _flat(result.output)
    assert (folder / "thesis.tex").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [sibling]  # no run was made


@pytest.mark.parametrize("sibling", [".X.old", ".X.partial"])
def test_a_file_at_a_sibling_is_refused_before_any_work(tmp_path: Path, sibling: str) -> None:
    (tmp_path / sibling).write_text("mine")
    out = tmp_path / "X"
    result = runner.invoke(app, ["run", *SMALL, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert sibling in _flat(result.output) and "nothing was written" not in result.output
    assert (tmp_path / sibling).read_text() == "mine" and not out.exists()


@pytest.mark.parametrize("sibling", [".X.old", ".X.partial"])
def test_a_symlinked_sibling_is_refused_with_exit_2(tmp_path: Path, sibling: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (tmp_path / sibling).symlink_to(elsewhere)
    out = tmp_path / "X"
    assert runner.invoke(app, ["run", *SMALL, "--out", str(out)]).exit_code == 2
    assert (elsewhere / "keep.txt").read_text() == "mine" and not out.exists()


def test_a_run_never_replaces_a_card_folder(tmp_path: Path) -> None:
    card = tmp_path / "card"
    made = runner.invoke(app, ["card", "bleu", "--budget", "small", "--out", str(card),
                               "--quiet", "--cache-dir", str(tmp_path / "cache")])
    assert made.exit_code == 0, made.output
    before = (card / "card.json").read_bytes()
    for extra in ([], ["--force"]):
        result = runner.invoke(app, ["run", *SMALL, "--out", str(card), *extra])
        assert result.exit_code == 2, result.output
        assert "card folder" in _flat(result.output)
    assert (card / "card.json").read_bytes() == before


def test_no_cache_with_force_never_deletes_the_shared_cache(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    cache = folder / "cache"
    cache.mkdir(parents=True)
    (cache / "scores.sqlite").write_bytes(b"cached scores")
    result = runner.invoke(app, ["run", *SMALL, "--cache-dir", str(cache), "--out",
                                 str(folder), "--force", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "cache folder" in _flat(result.output)
    assert (cache / "scores.sqlite").read_bytes() == b"cached scores"


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


def test_report_and_check_never_write_through_a_link(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert runner.invoke(app, ["run", *SMALL, "--out", str(run)]).exit_code == 0
    victim = tmp_path / "victim.conf"
    victim.write_text("precious settings")
    link = tmp_path / "link.html"
    link.symlink_to(victim)
    for command in (["report", str(run), "--out", str(link)],
                    ["check", str(run), "--junit", str(link)],
                    ["compare", str(run), str(run), "--out", str(link)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert "symbolic link" in _flat(result.output)
    assert victim.read_text() == "precious settings" and link.is_symlink()
    rebuilt = runner.invoke(app, ["report", str(run)])  # its own report: still the run's
    assert rebuilt.exit_code == 0, rebuilt.output
    assert runner.invoke(app, ["run", *SMALL, "--out", str(run)]).exit_code == 0
