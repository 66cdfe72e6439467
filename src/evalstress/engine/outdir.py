"""The output target: which folders a run may replace, and one writer per target at a time.

A run directory is written in a staging folder and renamed over `--out`, so whatever `--out`
held before is deleted. That is right for a run directory evalstress wrote and wrong for
anything else: a folder of the user's files, the folder holding the input data or the cache,
the current folder. So before any work:

- `check_out_dir` lets `--out` be a new folder, an empty one, or one evalstress wrote (it holds
  the `MARKER` file every run directory gets, or a results.json of ours from before the marker
  existed); anything else is refused, naming what is in it, unless the user says `--force`.
  Input files, the cache folder and the current folder inside or equal to `--out` are refused
  even with `--force`: replacing the folder would delete them.
- `OutLock` is held while a run writes `--out` (a lock file beside it, `.<name>.lock`, with the
  writer's pid): a second run asking for the same target is refused at once, naming that pid,
  instead of resetting the first one's staging folder.
- `check_not_run_file` keeps commands that read a run (export, report, compare) from writing
  over one of its files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path

from evalstress.core.storage import StorageError
from evalstress.core.userfile import read_json
from evalstress.core.version import __version__

#: written into every run directory evalstress makes; its presence says the folder is ours
MARKER = ".evalstress-run"
#: files named in a refusal before "and N more"
_SHOWN = 5


class OutDirError(StorageError):
    """An output target evalstress will not write (foreign files, an input inside it, another
    run writing it); the message is one line naming the folder and why."""


def is_owned(folder: Path) -> bool:
    """Whether `folder` is a run directory evalstress wrote: it holds the marker, or (written
    before the marker existed) a results.json object with evalstress' version in it."""
    folder = Path(folder)
    if (folder / MARKER).is_file():
        return True
    results = folder / "results.json"
    if not results.is_file():
        return False
    try:
        data = read_json(results)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("evalstress"), str)


def write_marker(folder: Path, command: str) -> None:
    """Mark `folder` as a run directory evalstress wrote (what `is_owned` looks for)."""

    (Path(folder) / MARKER).write_text(
        json.dumps({"evalstress": __version__, "command": command}) + "\n", encoding="utf-8")


def _contains(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents


def _listing(folder: Path) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def check_out_dir(out: Path, *, force: bool = False, inputs: Iterable[tuple[str, Path]] = (),
                  what: str = "--out") -> None:
    """Refuse (OutDirError) an output folder whose replacement would delete what evalstress did
    not write. `inputs` are (what, path) pairs of files and folders the command reads or keeps
    (data, cache, config): none may lie inside `out`, whatever `force` says."""
    target = Path(out).expanduser().resolve()
    here = Path.cwd().resolve()
    if _contains(target, here):
        raise OutDirError(f"{what} {out}: it holds the current folder ({here}), which "
                          "replacing it would delete; name a folder for the run, e.g. "
                          "runs/NAME")
    for name, path in inputs:
        if path is None:
            continue
        resolved = Path(path).expanduser().resolve()
        if _contains(target, resolved):
            raise OutDirError(f"{what} {out}: it holds the {name} ({path}), which replacing "
                              "the folder would delete; choose another folder")
    if not target.exists():
        return
    if not target.is_dir():
        raise OutDirError(f"{what} {out}: exists and is not a directory")
    if force or is_owned(target) or not any(target.iterdir()):
        return
    raise OutDirError(f"{what} {out}: the folder holds files evalstress did not write "
                      f"({_listing(target)}); a run replaces its folder whole: choose a new "
                      "or empty folder, or add --force to replace it")


def lock_path(out: Path) -> Path:
    """The lock file of a target: beside it, like the staging folder."""
    out = Path(out).expanduser().resolve()
    return out.parent / f".{out.name}.lock"


class OutLock:
    """An exclusive lock on an output target for as long as one run writes it.

    flock on a file beside the target: the kernel drops it when the process dies, so a killed
    run never leaves a target locked. The file is removed on release; a writer that locked a
    file removed in the meantime tries again on the new one."""

    def __init__(self, out: Path, what: str = "--out"):
        self.out = Path(out)
        self.what = what
        self.path = lock_path(out)
        self._handle: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(handle, 64).decode("ascii", "replace").strip() or "unknown"
                os.close(handle)
                raise OutDirError(f"{self.what} {self.out}: another evalstress run (pid "
                                  f"{holder}) is writing it; wait for it to finish or choose "
                                  "another folder") from None
            try:
                same = os.fstat(handle).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(handle)  # the holder removed the file as we opened it: lock the new one
        os.ftruncate(handle, 0)
        os.write(handle, str(os.getpid()).encode("ascii"))
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self._handle)
        self._handle = None

    def __enter__(self) -> OutLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_not_run_file(target: Path, runs: Iterable[Path], what: str,
                       allowed: Iterable[str] = ()) -> None:
    """Refuse to write `target` over a file of a run the command reads (`allowed`: names the
    command may rewrite, such as report.html for `report`)."""
    resolved = Path(target).expanduser().resolve()
    keep = set(allowed)
    for run in runs:
        folder = Path(run).expanduser().resolve()
        if folder.is_file():  # a results.json given for its run
            folder = folder.parent
        if resolved.parent == folder and resolved.exists() and resolved.name not in keep:
            raise OutDirError(f"{what} {target}: it is a file of the run {run} this command "
                              "reads; writing it would break the run: name a file outside it")


__all__ = ["MARKER", "OutDirError", "OutLock", "check_not_run_file", "check_out_dir",
           "is_owned", "lock_path", "write_marker"]
