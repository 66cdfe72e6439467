"""A small SQLite (WAL) key-value store with JSON values: the persistent memory of a run.

Each value is written as soon as it exists, so a run killed halfway resumes from what it had.
Score caches and the LLM response cache both build on it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalstress.core.storage import StorageError, reason_of

_CHUNK = 500  # SQLite limits the number of bound parameters per statement
_BUSY_SECONDS = 30.0  # how long an open or a write waits for another process's lock


def _enter_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, waiting while another process holds the file.

    SQLite answers "database is locked" at once, without its busy handler, when two processes
    open the same new file together (two runs sharing one --cache-dir), so the wait is ours.
    """
    deadline = time.monotonic() + _BUSY_SECONDS
    pause = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def default_cache_dir() -> Path:
    """$EVALSTRESS_CACHE_DIR, else ~/.cache/evalstress."""
    env = os.environ.get("EVALSTRESS_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "evalstress"


class SQLiteCache:
    """Namespaced JSON values by key; safe to share between threads of one process."""

    def __init__(self, path: str | Path, table: str = "entries"):
        if not table.isidentifier():
            raise ValueError(f"bad table name {table!r}")
        self.path = Path(path)
        self.table = table
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False,
                                         timeout=_BUSY_SECONDS)
            _enter_wal(self._conn)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (namespace TEXT NOT NULL, key TEXT NOT "
                "NULL, value TEXT NOT NULL, created REAL DEFAULT (unixepoch('subsec')), "
                "PRIMARY KEY (namespace, key))"
            )
            self._conn.commit()
        except (OSError, sqlite3.Error) as exc:
            raise self._storage_error(exc) from None

    def _storage_error(self, exc: BaseException) -> Exception:
        """A full disk or a read-only file is one line naming the cache file (a bug is not)."""
        meaning = reason_of(exc)
        if meaning is None:
            return exc if isinstance(exc, Exception) else RuntimeError(str(exc))
        return StorageError(f"cache file {self.path}: {meaning} (choose another folder with "
                            "--cache-dir, or --no-cache)")

    @contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                error = self._storage_error(exc)
                if error is exc:
                    raise
                with contextlib.suppress(sqlite3.Error):
                    self._conn.rollback()
                raise error from None

    def get(self, namespace: str, key: str) -> Any | None:
        return self.get_many(namespace, [key]).get(key)

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with self._locked() as conn:
            for start in range(0, len(keys), _CHUNK):
                chunk = list(keys[start:start + _CHUNK])
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, value FROM {self.table} WHERE namespace=? AND key IN ({marks})",
                    [namespace, *chunk],
                )
                for key, value in rows:
                    found[key] = json.loads(value)
        return found

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.put_many(namespace, [(key, value)])

    def put_many(self, namespace: str, items: Iterable[tuple[str, Any]]) -> None:
        rows = [(namespace, k, json.dumps(v, ensure_ascii=False, sort_keys=True))
                for k, v in items]
        if not rows:
            return
        with self._locked() as conn:
            conn.executemany(
                f"INSERT OR REPLACE INTO {self.table} (namespace, key, value) VALUES (?, ?, ?)",
                rows)
            conn.commit()

    def count(self, namespace: str | None = None) -> int:
        with self._locked() as conn:
            if namespace is None:
                return int(conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])
            return int(conn.execute(f"SELECT COUNT(*) FROM {self.table} WHERE namespace=?",
                                    (namespace,)).fetchone()[0])

    def namespaces(self) -> dict[str, int]:
        with self._locked() as conn:
            rows = conn.execute(
                f"SELECT namespace, COUNT(*) FROM {self.table} GROUP BY namespace ORDER BY 1")
            return {ns: int(n) for ns, n in rows}

    def merge_from(self, other: str | Path) -> int:
        """Copy every entry of another cache file's same-named table; returns the entries added.

        Keys name everything that changes a value, so entries of shards never disagree: an entry
        already here is kept as it is.
        """
        other = Path(other)
        if not other.exists():
            raise FileNotFoundError(f"{other}: no such cache file")
        with self._locked() as conn:
            before = conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
            conn.execute("ATTACH DATABASE ? AS other", (str(other),))
            try:
                found = conn.execute("SELECT COUNT(*) FROM other.sqlite_master WHERE type='table' "
                                     "AND name=?", (self.table,)).fetchone()[0]
                if found:
                    conn.execute(f"INSERT OR IGNORE INTO {self.table} (namespace, key, value, created) "
                                 f"SELECT namespace, key, value, created FROM other.{self.table}")
                conn.commit()
            finally:
                conn.execute("DETACH DATABASE other")
            after = conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
        return int(after - before)

    def close(self) -> None:
        with self._locked() as conn:
            conn.close()
