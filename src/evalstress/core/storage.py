"""Files and folders the machine will not let us write: one clear line, before any work if we can.

A full disk, a read-only folder or a missing permission is the machine's state, not a bug: the
user needs to know which path and why, in one line, and that the previous run is untouched.
`describe` turns such an error (OSError, pyarrow's I/O errors, SQLite's) into that line; the
command line prints it instead of a traceback. `check_cache_dir` proves a cache folder writable
before a run spends anything, and `atomic_write_text` writes single files (reports, JUnit XML)
beside their target and renames them into place.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

#: errno -> what it means for the user.
_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder",
    errno.EFBIG: "the file grew past the size this process may write (ulimit -f)",
}
#: Phrases of libraries that lose the errno (pyarrow, SQLite) -> the same meanings.
_PHRASES = {
    "no space left on device": "the disk is full",
    "database or disk is full": "the disk is full",
    "disk quota exceeded": "the disk quota is used up",
    "read-only file system": "the file system is read-only",
    "readonly database": "the cache file or its folder is read-only",
    "unable to open database file": "cannot open or create the file (read-only or missing "
                                    "folder?)",
    "permission denied": "permission denied",
    "disk i/o error": "a disk I/O error",
    "file is not a database": "it is not an SQLite cache (damaged, or another file): move it "
                              "aside",
    "database disk image is malformed": "the cache file is damaged: move it aside",
    "file too large": "the file grew past the size this process may write (ulimit -f)",
}


class StorageError(Exception):
    """A path that cannot be read or written; the message is one line naming it and why."""


def reason_of(exc: BaseException) -> str | None:
    """What a storage error means, in a few words; None if it is not one."""
    code = getattr(exc, "errno", None)
    if isinstance(exc, OSError) and code in _ERRNOS:
        return _ERRNOS[code]
    if isinstance(exc, OSError | sqlite3.Error):
        text = str(exc).lower()
        for phrase, meaning in _PHRASES.items():
            if phrase in text:
                return meaning
    return None


def describe(exc: BaseException, path: str | Path | None = None) -> str | None:
    """One line for a storage error (naming the path when known), else None."""
    if isinstance(exc, StorageError):
        return str(exc)
    meaning = reason_of(exc)
    if meaning is None:
        return None
    where = path if path is not None else getattr(exc, "filename", None)
    return f"cannot write {where}: {meaning}" if where else f"cannot write: {meaning}"


def check_cache_dir(folder: Path, files: tuple[str, ...] = ("scores.sqlite", "llm.sqlite")
                    ) -> None:
    """Fail before any work when the cache folder cannot hold the caches: the folder must be
    creatable and writable and each existing cache file writable (SQLite takes its write lock
    and lets go). A disk that fills up later is reported when it happens."""
    folder = Path(folder)
    hint = " (choose another with --cache-dir, or --no-cache)"
    problem = folder_write_problem(folder, "")
    if problem is not None:
        raise StorageError(f"cache folder {folder}: "
                           f"{reason_of(problem) or problem.strerror or problem}{hint}")
    for name in files:
        path = folder / name
        if not path.exists():
            continue
        if not os.access(path, os.W_OK):
            raise StorageError(f"cache file {path}: not writable{hint}")
        try:
            conn = sqlite3.connect(path, timeout=30)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise StorageError(f"cache file {path}: {reason_of(exc) or exc}{hint}") from None


def folder_write_problem(folder: Path, name: str) -> OSError | None:
    """Why a file cannot be created in `folder` (made if missing), or None: a real probe file,
    since permission bits say nothing of read-only mounts or full disks."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{name}.probe-" if name
                                         else ".probe-"):
            pass
    except OSError as exc:
        return exc
    return None


def check_target(path: Path, what: str, *, folder: bool = False) -> None:
    """Fail before any work when an output cannot be written at `path`: a single file, or with
    `folder` a folder the command creates or fills (a run directory)."""
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise StorageError(f"{what} {path}: exists and is not a directory")
    if not folder and path.is_dir():
        raise StorageError(f"{what} {path}: is a folder, not a file")
    parent = path.parent if str(path.parent) else Path(".")
    problem = folder_write_problem(parent, path.name)
    if problem is not None:
        raise StorageError(f"{what} {path}: cannot write in {parent} "
                           f"({reason_of(problem) or problem.strerror or problem})")
    if path.exists() and not os.access(path, os.W_OK | (os.X_OK if folder else 0)):
        raise StorageError(f"{what} {path}: the {'directory' if folder else 'file'} is not "
                           "writable")


def atomic_write_text(path: Path, text: str | bytes) -> Path:
    """Write beside `path`, then rename over it: a failed write leaves the old file as it was.
    `bytes` are written as they are."""
    if isinstance(text, bytes):
        return _atomic_write(path, lambda handle: _write_bytes(handle, text))
    return atomic_write_parts(path, (text,))


def atomic_write_parts(path: Path, parts: Iterable[str]) -> Path:
    """`atomic_write_text` of the parts written one after another: a large page never has to
    be one string (and its encoded copy) in memory."""
    return _atomic_write(path, lambda handle: _write_parts(handle, parts))


def _write_bytes(handle: int, data: bytes) -> None:
    with os.fdopen(handle, "wb") as raw:
        raw.write(data)


def _write_parts(handle: int, parts: Iterable[str]) -> None:
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        for part in parts:
            out.write(part)


def _atomic_write(path: Path, write: Callable[[int], None]) -> Path:
    path = Path(path)
    handle, name = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".",
                                    prefix=f".{path.name}.", suffix=".tmp")
    try:
        write(handle)
        os.chmod(name, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["StorageError", "atomic_write_parts", "atomic_write_text", "check_cache_dir",
           "check_target", "describe", "reason_of"]
