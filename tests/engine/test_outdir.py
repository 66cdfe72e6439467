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
    check_output_file,
    check_owned_file,
    foreign_entries,
    is_owned,
    lock_path,
    record_files,
    remove_owned,
    write_marker,
    write_staging_marker,
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


def test_a_marked_folder_is_owned_and_a_results_json_claim_is_not(tmp_path: Path) -> None:
    marked, older, foreign = tmp_path / "marked", tmp_path / "older", tmp_path / "foreign"
    for folder in (marked, older, foreign):
        folder.mkdir()
        (folder / "scores.parquet").write_text("x")
    write_marker(marked, "run")
    # a results.json naming evalstress is a claim anyone can write: it no longer makes a
    # folder ours (only the marker's record of each file with its sha256 does)
    (older / "results.json").write_text(json.dumps({"evalstress": "0.9.0", "analyses": {}}))
    (foreign / "results.json").write_text(json.dumps({"model": "mine", "accuracy": 0.9}))
    assert is_owned(marked)
    assert not is_owned(older) and not is_owned(foreign)
    check_out_dir(marked)
    for folder in (older, foreign):
        with pytest.raises(OutDirError, match=r"results\.json"):
            check_out_dir(folder)


def test_a_file_added_or_changed_in_a_run_directory_is_named_not_replaced(
        tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "scores.parquet").write_text("ours")
    (out / "report.html").write_text("ours too")
    write_marker(out, "run")
    (out / "notes.txt").write_text("mine")
    (out / "analysis").mkdir()
    (out / "analysis" / "plot.py").write_text("mine")
    (out / "report.html").write_text("edited by hand")
    assert foreign_entries(out) == ["analysis/", "notes.txt", "report.html"]
    with pytest.raises(OutDirError) as caught:
        check_out_dir(out)
    assert "notes.txt" in str(caught.value) and "analysis/" in str(caught.value)
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("marker", ["", "{}", '{"evalstress": "0.1.0", "command": "run"}',
                                    '{"evalstress": "0.1.0", "files": {"a.txt": "00"}}',
                                    '{"files": {"a.txt": "' + "0" * 64 + '"}}'])
def test_an_empty_or_forged_marker_makes_no_file_ours(tmp_path: Path, marker: str) -> None:
    out = tmp_path / "forged"
    out.mkdir()
    (out / "a.txt").write_text("the user's")
    (out / MARKER).write_text(marker)
    assert "a.txt" in foreign_entries(out)
    with pytest.raises(OutDirError, match=r"a\.txt"):
        check_out_dir(out)
    assert remove_owned(out) and (out / "a.txt").read_text() == "the user's"


def test_only_the_recorded_unchanged_files_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "a.svg").write_text("ours")
    (out / "results.json").write_text("ours")
    write_marker(out, "run")
    (out / "figures" / "mine.svg").write_text("the user's")
    (out / "notes").mkdir()
    assert remove_owned(out) == ["figures/", "notes/"]  # the marker is gone with ours
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == \
        ["figures", "figures/mine.svg", "notes"]


def test_a_symbolic_link_at_the_lock_path_is_refused_and_its_target_untouched(
        tmp_path: Path) -> None:
    victim = tmp_path / "victim.conf"
    victim.write_text("precious settings")
    out = tmp_path / "X"
    lock_path(out).symlink_to(victim)
    with pytest.raises(OutDirError, match="symbolic link"):
        OutLock(out).acquire()
    assert victim.read_text() == "precious settings"
    lock_path(out).unlink()
    os.link(victim, lock_path(out))  # a hard link: truncating it truncates the victim
    with pytest.raises(OutDirError, match="hard link"):
        OutLock(out).acquire()
    assert victim.read_text() == "precious settings"


def test_hidden_siblings_evalstress_did_not_make_are_refused_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "X"
    old, staging = tmp_path / ".X.old", tmp_path / ".X.partial"
    old.mkdir()
    (old / "thesis.tex").write_text("mine")
    with pytest.raises(OutDirError, match=r"thesis\.tex"):
        check_out_dir(out, force=True)
    assert (old / "thesis.tex").read_text() == "mine"
    (old / "thesis.tex").unlink()
    old.rmdir()
    staging.mkdir()
    (staging / "draft.txt").write_text("mine")
    with pytest.raises(OutDirError, match="no staging marker"):
        check_out_dir(out, force=True)
    staging.rename(tmp_path / "elsewhere")
    elsewhere = tmp_path / "elsewhere"
    for sibling in (staging, old):
        sibling.symlink_to(elsewhere)
        with pytest.raises(OutDirError, match="symbolic link"):
            check_out_dir(out)
        sibling.unlink()
    old.write_text("a file")
    with pytest.raises(OutDirError, match="a file"):
        check_out_dir(out)
    assert (elsewhere / "draft.txt").read_text() == "mine"


def test_siblings_evalstress_made_are_accepted(tmp_path: Path) -> None:
    out = tmp_path / "X"
    old, staging = tmp_path / ".X.old", tmp_path / ".X.partial"
    old.mkdir()
    (old / "scores.parquet").write_text("ours")
    write_marker(old, "run")
    staging.mkdir()
    write_staging_marker(staging)
    check_out_dir(out)


def test_a_symbolic_link_at_out_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OutDirError, match="symbolic link"):
        check_out_dir(tmp_path / "link", force=True)


def test_a_card_folder_is_never_replaced_by_a_run_even_with_force(tmp_path: Path) -> None:
    card = tmp_path / "card"
    card.mkdir()
    (card / "card.json").write_text("{}")
    write_marker(card, "card", kind="card")
    with pytest.raises(OutDirError, match="card folder"):
        check_out_dir(card, force=True)
    check_out_dir(card, kind="card")
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text("{}")
    write_marker(run, "run")
    with pytest.raises(OutDirError, match="--force"):
        check_out_dir(run, kind="card")
    check_out_dir(run, kind="card", force=True)


def test_a_single_file_is_replaced_only_when_recorded_unchanged(tmp_path: Path) -> None:
    page = tmp_path / "atlas.md"
    check_owned_file(page, "--page")  # new
    page.write_text("the user's page")
    with pytest.raises(OutDirError, match="did not write"):
        check_owned_file(page, "--page")
    check_owned_file(page, "--page", force=True)
    record_files(tmp_path, ["atlas.md"], "atlas", "atlas")
    check_owned_file(page, "--page")
    page.write_text("edited since")
    with pytest.raises(OutDirError, match="changed since"):
        check_owned_file(page, "--page")
    (tmp_path / "link.md").symlink_to(page)
    with pytest.raises(OutDirError, match="symbolic link"):
        check_owned_file(tmp_path / "link.md", "--page", force=True)


def test_an_output_file_is_never_an_input_a_folder_or_a_link(tmp_path: Path) -> None:
    card = tmp_path / "card.json"
    card.write_text("{}")
    with pytest.raises(OutDirError, match="reads"):
        check_output_file(tmp_path / "." / "card.json", "--md", [card])
    with pytest.raises(OutDirError, match="folder"):
        check_output_file(tmp_path, "--html")
    (tmp_path / "out.md").symlink_to(card)
    with pytest.raises(OutDirError, match="symbolic link"):
        check_output_file(tmp_path / "out.md", "--md")
    check_output_file(tmp_path / "new.md", "--md", [card])


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


def test_a_card_killed_halfway_is_still_ours_and_a_file_added_to_its_runs_is_not(
        tmp_path: Path) -> None:
    card = tmp_path / "card"
    (card / "runs" / "blindspot").mkdir(parents=True)
    (card / "runs" / "blindspot" / "scores.parquet").write_text("ours")
    write_marker(card / "runs" / "blindspot", "card")
    (card / "runs" / "timings.json").write_text("{}")
    record_files(card, ["runs/timings.json"], "card", "card")
    staging = card / "runs" / ".discernment.partial"  # the method killed halfway
    (staging / "chunks").mkdir(parents=True)
    write_staging_marker(staging)
    (staging / "chunks" / "000000.json").write_text("{}")
    (card / "runs" / ".discernment.lock").write_text("4242")  # its killed writer's lock
    check_out_dir(card, kind="card")
    (card / "runs" / "blindspot" / "notes.txt").write_text("mine")
    (card / "runs" / ".mine.partial").mkdir()  # not a staging folder evalstress made
    assert foreign_entries(card) == ["runs/.mine.partial/", "runs/blindspot/notes.txt"]


@pytest.mark.parametrize("killed_before", ["the write", "the record"])
def test_a_file_rewritten_in_place_stays_ours_whenever_a_kill_lands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, killed_before: str) -> None:
    from evalstress.engine import outdir

    folder = tmp_path / "card"
    (folder / "runs").mkdir(parents=True)
    (folder / "runs" / "timings.json").write_text('{"a": 1}', encoding="utf-8")
    outdir.write_marker(folder, "card", kind="card", files=["runs/timings.json"])

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("killed")

    if killed_before == "the write":  # the announcement is in, the file not yet replaced
        real = outdir.atomic_write_text
        monkeypatch.setattr(outdir, "atomic_write_text", lambda path, text: (
            real(path, text) if Path(path).name == MARKER else killed()))
    else:  # the file is replaced, its record not yet written
        monkeypatch.setattr(outdir, "record_files", killed)
    with pytest.raises(KeyboardInterrupt):
        outdir.write_owned_text(folder, "runs/timings.json", '{"a": 2}', "card", "card")
    monkeypatch.undo()
    # the folder holds nothing evalstress did not write: the resume goes on without --force
    assert outdir.foreign_entries(folder) == []
    check_out_dir(folder, kind="card")
    # a finished rewrite records the new bytes and leaves nothing pending
    outdir.write_owned_text(folder, "runs/timings.json", '{"a": 3}', "card", "card")
    marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    assert "pending" not in marker and outdir.is_recorded(folder, "runs/timings.json")
    (folder / "runs" / "timings.json").write_text('{"edited": true}', encoding="utf-8")
    assert outdir.foreign_entries(folder) == ["runs/timings.json"]  # a user's edit still counts
