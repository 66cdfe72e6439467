"""The one rule of what evalstress may write, replace or delete in a folder.

Ownership goes file by file, as `evalstress data` does it (`engine.samplefiles`). Every folder
evalstress writes holds a `MARKER` file recording each file it wrote there with its sha256 (a
run directory, a card folder, a published card, the folder of the atlas page). A file is
evalstress's to replace or delete only when the marker records it with the bytes it has now;
anything else there is the user's: a file added or changed since, a folder, a symbolic link,
the marker itself when it records nothing (an empty or forged marker makes nothing ours). A
folder inside with a marker of its own (a card's run directories) is judged by that marker.

- `check_out_dir`, before any work, lets `--out` be a new folder, an empty one, or one whose
  every file evalstress wrote, of the same kind (a run never replaces a card folder); a folder
  holding anything else is refused, naming it, unless the user says `--force`, and then those
  files are kept (`promote` carries them into the new folder; a file of the same name as one
  the run writes is replaced). The command's inputs, the cache folder and the current folder
  inside `--out` are refused even with `--force`. A symbolic link at `--out` is refused.
- The hidden siblings `.<out>.partial` (the staging folder) and `.<out>.old` (the folder being
  replaced) are checked in the same step: one evalstress did not make, or a symbolic link, is
  refused and never deleted (`check_siblings`). A staging folder is known by its staging
  marker alone, written when evalstress makes it (its parts change while the run works, so
  they are not recorded), and must hold no symbolic link.
- `OutLock` is held while a run writes `--out` (`.<name>.lock` beside it, with the writer's
  pid): a second writer is refused at once, naming that pid. The lock is opened without
  following a symbolic link and must be a plain file of one link, so a link planted there
  cannot make evalstress truncate another file.
- `check_owned_file` and `record_files` apply the rule to single files (the atlas page, a
  published card) and `remove_owned` deletes only recorded files; `check_output_file`
  refuses an output file that is a link, a folder or one of the command's inputs.
- `check_not_run_file` keeps commands that read a run (export, report, compare) from writing
  over one of its files.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalstress.core.storage import StorageError, atomic_write_text
from evalstress.core.userfile import read_json
from evalstress.core.version import __version__

#: in every folder evalstress writes: the files it wrote there and their sha256
MARKER = ".evalstress-run"
#: kinds of folder no command of another kind replaces, even with --force: a card folder (its
#: runs and the card people publish), a folder evalstress published cards or the atlas page in
KEPT_KINDS = ("card", "atlas")
#: files named in a refusal before "and N more"
_SHOWN = 5
#: a sha256 as the marker records it
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: a lock file a killed writer left: `.<name>.lock` holding a pid
_LOCK_NAME = re.compile(r"\..+\.lock")
#: the staging folder of a run directory inside this one (a card's runs/.<method>.partial)
_STAGING_NAME = re.compile(r"\..+\.partial")


class OutDirError(StorageError):
    """An output target evalstress will not write (foreign files, an input inside it, another
    run writing it); the message is one line naming the folder and why."""


def staging_path(out: Path) -> Path:
    """The staging folder of a target: beside it, so the final rename stays atomic."""
    out = Path(out).expanduser().resolve()
    return out.parent / f".{out.name}.partial"


def old_path(out: Path) -> Path:
    """Where the folder a run replaces waits, between the two renames, to be deleted."""
    out = Path(out).expanduser().resolve()
    return out.parent / f".{out.name}.old"


def file_digest(path: Path) -> str:
    """The sha256 of a file, read without following a symbolic link."""
    digest = hashlib.sha256()
    handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(handle, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of `folder` as a JSON object, or None (absent, a link, unreadable)."""
    path = Path(folder) / MARKER
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of the files the marker of `folder` says evalstress wrote; a
    file being rewritten (`write_owned_text`, killed between its write and its record) counts
    with the digest it was announced with, when it holds those bytes."""
    marker = read_marker(folder) or {}
    out = _digests(marker.get("files"))
    for rel, digest in _digests(marker.get("pending")).items():
        with contextlib.suppress(OSError):
            path = Path(folder) / rel
            if not path.is_symlink() and file_digest(path) == digest:
                out[rel] = digest
    return out


def _digests(files: Any) -> dict[str, str]:
    if not isinstance(files, dict):
        return {}
    return {str(k): v for k, v in files.items()
            if isinstance(v, str) and _DIGEST.fullmatch(v) and ".." not in Path(k).parts
            and not Path(k).is_absolute()}


def write_owned_text(folder: Path, rel: str, text: str, command: str, kind: str) -> None:
    """Rewrite a file `folder`'s marker records, so that a kill at any instant leaves it
    recorded: the new bytes' digest is announced in the marker (`pending`) before the file is
    replaced, then recorded. (Written, then recorded, a kill between the two left a file that
    "changed since", and the resume refused the folder.)"""
    folder = Path(folder)
    data = text.encode("utf-8")
    write_marker(folder, command, kind=kind, files=[],
                 pending={rel: hashlib.sha256(data).hexdigest()})
    atomic_write_text(folder / rel, data)
    record_files(folder, [rel], command, kind)


def marker_kind(folder: Path) -> str | None:
    """What evalstress made `folder` as (run, card, atlas, staging), or None without a
    marker."""
    marker = read_marker(folder)
    if marker is None:
        return None
    if marker.get("staging") is True:
        return "staging"
    kind = marker.get("kind")
    return str(kind) if isinstance(kind, str) else "run"


def _is_lock_leftover(entry: os.DirEntry[str]) -> bool:
    """A lock file a killed writer left behind: `.<name>.lock`, one link, a pid or nothing."""
    if not _LOCK_NAME.fullmatch(entry.name):
        return False
    info = entry.stat(follow_symlinks=False)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > 20:
        return False
    with contextlib.suppress(OSError):
        return Path(entry.path).read_text(encoding="ascii").strip().isdigit() or \
            info.st_size == 0
    return False


def _ours(entry: os.DirEntry[str], digest: str | None) -> bool:
    if digest is None:
        return False
    info = entry.stat(follow_symlinks=False)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        return False  # a hard link: replacing it in place would change another name's file
    try:
        return file_digest(Path(entry.path)) == digest
    except OSError:
        return False


def _scan(root: Path, prefix: str, files: dict[str, str], found: list[str]) -> None:
    with os.scandir(root / prefix if prefix else root) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        rel = prefix + entry.name
        if entry.is_symlink():
            found.append(rel)
        elif entry.is_dir(follow_symlinks=False):
            kind = marker_kind(Path(entry.path))
            if kind == "staging" and _STAGING_NAME.fullmatch(entry.name):
                continue  # a staging folder of a nested run: its run resumes or replaces it
            if kind is not None:
                found += [f"{rel}/{name}" for name in foreign_entries(Path(entry.path))]
            elif any(name.startswith(rel + "/") for name in files):
                _scan(root, rel + "/", files, found)
            else:
                found.append(rel + "/")
        elif rel == MARKER and read_marker(root) is not None:
            continue
        elif not _ours(entry, files.get(rel)) and not _is_lock_leftover(entry):
            found.append(rel)


def foreign_entries(folder: Path) -> list[str]:
    """What in `folder` evalstress did not write, or changed since it did, as paths relative
    to it (a folder holding none of ours is named once, with a trailing /)."""
    found: list[str] = []
    _scan(Path(folder), "", recorded(folder), found)
    return found


def is_owned(folder: Path) -> bool:
    """Whether every file in `folder` is one evalstress wrote and nobody changed since."""
    folder = Path(folder)
    return read_marker(folder) is not None and not foreign_entries(folder)


def _paths_in(folder: Path) -> list[str]:
    found: list[str] = []
    for base, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(base, d))]
        for name in names:
            path = Path(base) / name
            if path.is_symlink() or not path.is_file():
                continue
            rel = path.relative_to(folder).as_posix()
            if rel != MARKER:
                found.append(rel)
    return found


def write_marker(folder: Path, command: str, *, kind: str = "run",
                 files: Iterable[str] | None = None,
                 pending: Mapping[str, str] | None = None) -> None:
    """Record, in the marker of `folder`, that evalstress (`command`) wrote `files` (paths
    relative to it) as they are now; None: every file in the folder, for a folder evalstress
    made whole (a run directory in its staging folder). Records of files still unchanged are
    kept; `pending`: files about to be rewritten, with their new bytes' digests
    (`write_owned_text`). The marker is replaced atomically."""
    folder = Path(folder)
    names = _paths_in(folder) if files is None else list(files)
    kept = {} if files is None else {
        rel: digest for rel, digest in recorded(folder).items()
        if (folder / rel).is_file() and not (folder / rel).is_symlink()
        and file_digest(folder / rel) == digest}
    for rel in names:
        kept[rel] = file_digest(folder / rel)
    record = {"evalstress": __version__, "command": command, "kind": kind,
              "files": dict(sorted(kept.items())), **({"pending": dict(pending)} if pending
                                                      else {})}
    atomic_write_text(folder / MARKER, json.dumps(record, indent=1) + "\n")


def write_staging_marker(folder: Path) -> None:
    """Mark a staging folder evalstress just made (what `check_siblings` looks for)."""
    atomic_write_text(Path(folder) / MARKER,
                      json.dumps({"evalstress": __version__, "staging": True}) + "\n")


def _contains(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _symlinks_in(folder: Path) -> list[str]:
    found = []
    for base, dirs, names in os.walk(folder):
        for name in (*dirs, *names):
            if os.path.islink(os.path.join(base, name)):
                found.append(Path(base, name).relative_to(folder).as_posix())
    return found


def check_siblings(out: Path, what: str = "--out") -> None:
    """Refuse (OutDirError) a hidden sibling of `out` evalstress did not make: the staging
    folder `.<out>.partial` without its marker, `.<out>.old` holding anything it did not
    write, either as a symbolic link or a file. Nothing is deleted here."""
    for sibling, role in ((staging_path(out), "staging"), (old_path(out), "old")):
        try:
            mode = os.lstat(sibling).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise OutDirError(f"{what} {out}: {sibling} is a symbolic link evalstress did not "
                              "make, where it keeps its own folder; remove the link, or "
                              "choose another folder")
        if not stat.S_ISDIR(mode):
            raise OutDirError(f"{what} {out}: {sibling} is a file evalstress did not make, "
                              "where it keeps its own folder; move it away, or choose another "
                              "folder")
        if role == "staging":
            links = _symlinks_in(sibling)
            if marker_kind(sibling) != "staging" or links:
                held = sorted(entry.name for entry in sibling.iterdir())
                why = (f"holds symbolic links ({_listing(links)})" if links
                       else f"holds {_listing(held)} but no staging marker" if held
                       else "holds no staging marker")
                raise OutDirError(f"{what} {out}: {sibling} is not a staging folder evalstress "
                                  f"made ({why}); move it away, or choose another folder")
            continue
        foreign = foreign_entries(sibling)
        if foreign or read_marker(sibling) is None:
            shown = _listing(foreign) if foreign else "no marker"
            raise OutDirError(f"{what} {out}: {sibling} holds files evalstress did not write "
                              f"({shown}); move them away, or choose another folder")


def check_out_dir(out: Path, *, force: bool = False, inputs: Iterable[tuple[str, Path]] = (),
                  what: str = "--out", kind: str = "run") -> None:
    """Refuse (OutDirError) an output folder whose replacement would delete what evalstress did
    not write, before any work. `inputs` are (what, path) pairs of files and folders the
    command reads or keeps (data, cache, config): none may lie inside `out`, whatever `force`
    says. `kind`: what the command makes there (run, card); a folder evalstress made as
    another kind is refused unless `force`."""
    given = Path(out).expanduser()
    if given.is_symlink():
        real = given.resolve()
        held = foreign_entries(real) if real.is_dir() else []
        where = f"to {real}" + (f", which holds {_listing(held)}" if held else "")
        raise OutDirError(f"{what} {out}: is a symbolic link ({where}); evalstress does not "
                          "write through a link it did not make: name a folder of its own")
    target = given.resolve()
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
    check_siblings(given, what)
    if not target.exists():
        return
    if not target.is_dir():
        raise OutDirError(f"{what} {out}: exists and is not a directory")
    found = marker_kind(target)
    if found in KEPT_KINDS and found != kind:  # a published document: never replaced whole
        raise OutDirError(f"{what} {out}: is an evalstress {found} folder, which a {kind} "
                          "would replace; choose another folder (remove the old one yourself "
                          "if you mean to)")
    if found not in (None, kind) and not force:
        raise OutDirError(f"{what} {out}: is an evalstress {found} folder, which a {kind} "
                          "would replace; choose another folder, or add --force to replace "
                          "it")
    foreign = foreign_entries(target)
    if not foreign or force:
        return
    raise OutDirError(f"{what} {out}: the folder holds files evalstress did not write or that "
                      f"changed since ({_listing(foreign)}); choose a new or empty folder, or "
                      "add --force to write there anyway (those files are kept, except any "
                      "the command writes anew)")


def check_owned_file(path: Path, what: str, *, force: bool = False,
                     root: Path | None = None) -> None:
    """Refuse (OutDirError) to replace a single file evalstress did not write (the marker of
    `root`, by default its folder, records it with the bytes it has now), or a symbolic link,
    unless `force`."""
    path = Path(path)
    root = path.parent if root is None else Path(root)
    if path.is_symlink():
        raise OutDirError(f"{what} {path}: is a symbolic link; evalstress does not write "
                          "through a link it did not make")
    if path.is_dir():
        raise OutDirError(f"{what} {path}: is a folder, not a file")
    if not path.exists() or force:
        return
    if not is_recorded(root, path.relative_to(root).as_posix()) or path.stat().st_nlink != 1:
        raise OutDirError(f"{what} {path}: exists and evalstress did not write it (or it "
                          "changed since); move it away, or add --force to replace it")


def check_output_file(path: Path, what: str, inputs: Iterable[Path] = ()) -> None:
    """Refuse (OutDirError) a single output file that is a symbolic link, a folder, or one of
    the files the command reads (`inputs`), before any work."""
    path = Path(path)
    if path.is_symlink():
        raise OutDirError(f"{what} {path}: is a symbolic link; evalstress does not write "
                          "through a link it did not make")
    if path.is_dir():
        raise OutDirError(f"{what} {path}: is a folder, not a file")
    resolved = path.expanduser().resolve()
    for given in inputs:
        if Path(given).expanduser().resolve() == resolved:
            raise OutDirError(f"{what} {path}: is {given}, a file this command reads; writing "
                              "it would destroy it: name another file")


def record_files(folder: Path, files: Iterable[str], command: str | None = None,
                 kind: str | None = None) -> None:
    """Record files evalstress just wrote into `folder`'s marker (the others' records kept;
    `command` and `kind`: as the marker says when None)."""
    marker = read_marker(folder) or {}
    write_marker(folder, command or str(marker.get("command") or "run"),
                 kind=kind or str(marker.get("kind") or "run"), files=files)


def is_recorded(folder: Path, rel: str) -> bool:
    """Whether `folder`'s marker records the file `rel` with the bytes it has now."""
    path = Path(folder) / rel
    digest = recorded(folder).get(rel)
    try:
        return digest is not None and not path.is_symlink() and file_digest(path) == digest
    except OSError:
        return False


def remove_owned(folder: Path) -> list[str]:
    """Delete, in `folder`, the files its marker records unchanged, and the marker and folders
    left empty; returns what stays (the user's)."""
    folder = Path(folder)
    files = recorded(folder)
    for rel, digest in files.items():
        path = folder / rel
        with contextlib.suppress(OSError):
            if not path.is_symlink() and path.stat().st_nlink == 1 and \
                    file_digest(path) == digest:
                path.unlink()
    with contextlib.suppress(FileNotFoundError):
        (folder / MARKER).unlink()
    made = _recorded_dirs(files)
    for base, dirs, _ in sorted(os.walk(folder), key=lambda t: -len(Path(t[0]).parts)):
        for name in dirs:
            path = Path(base) / name
            if path.relative_to(folder).as_posix() + "/" in made:
                with contextlib.suppress(OSError):
                    path.rmdir()  # only once empty: a file of the user's keeps its folder
    with contextlib.suppress(OSError):
        folder.rmdir()
    return foreign_entries(folder) if folder.exists() else []


def _recorded_dirs(files: dict[str, str]) -> set[str]:
    dirs = set()
    for rel in files:
        parts = Path(rel).parts[:-1]
        for depth in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:depth]) + "/")
    return dirs


def remove_staging(folder: Path) -> None:
    """Delete a staging folder evalstress made (it holds the staging marker); anything else
    at that path is refused, not deleted."""
    folder = Path(folder)
    if not os.path.lexists(folder):
        return
    if folder.is_symlink() or marker_kind(folder) != "staging":
        raise OutDirError(f"{folder}: not a staging folder evalstress made; it is left as it "
                          "is: move it away")
    shutil.rmtree(folder)


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
            handle = self._open()
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(handle, 64).decode("ascii", "replace").strip() or "unknown"
                os.close(handle)
                raise OutDirError(f"{self.what} {self.out}: another evalstress run (pid "
                                  f"{holder}) is writing it; wait for it to finish or choose "
                                  "another folder") from None
            try:
                same = os.fstat(handle).st_ino == os.lstat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(handle)  # the holder removed the file as we opened it: lock the new one
        os.ftruncate(handle, 0)
        os.write(handle, str(os.getpid()).encode("ascii"))
        self._handle = handle

    def _open(self) -> int:
        """The lock file, opened without following a link; a link, a special file or a file
        with other names (a hard link) is refused before anything is written to it."""
        try:
            handle = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise OutDirError(f"{self.what} {self.out}: its lock file {self.path} is a "
                              "symbolic link evalstress did not make; remove the link") from None
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(handle)
            raise OutDirError(f"{self.what} {self.out}: its lock file {self.path} is not one "
                              "evalstress made (a hard link or a special file); remove it")
        return handle

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
                       allowed: Iterable[str] = (), kind: str = "run") -> None:
    """Refuse to write `target` over a file of a run (or another `kind` of folder, a card's)
    the command reads (`allowed`: names the command may rewrite, such as report.html for
    `report`)."""
    resolved = Path(target).expanduser().resolve()
    keep = set(allowed)
    for run in runs:
        folder = Path(run).expanduser().resolve()
        if folder.is_file():  # a results.json given for its run
            folder = folder.parent
        if resolved.parent == folder and resolved.exists() and resolved.name not in keep:
            raise OutDirError(f"{what} {target}: it is a file of the {kind} {run} this "
                              f"command reads; writing it would break the {kind}: name a file "
                              "outside it")


__all__ = ["KEPT_KINDS", "MARKER", "OutDirError", "OutLock", "check_not_run_file",
           "check_out_dir", "check_output_file", "check_owned_file", "check_siblings",
           "file_digest", "foreign_entries", "is_owned", "is_recorded", "lock_path",
           "marker_kind", "old_path", "read_marker", "record_files", "recorded",
           "remove_owned", "remove_staging", "staging_path", "write_marker",
           "write_staging_marker"]
