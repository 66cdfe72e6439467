"""A small SQLite (WAL) key-value store with JSON values: the persistent memory of a run.

Each value is written as soon as it exists, so a run killed halfway resumes from what it had.
Score caches and the LLM response cache both build on it.

A score cache holds millions of small rows, so a row is kept lean (~45 bytes of a score where
the first layout took ~280): the table is WITHOUT ROWID (the primary key is the table, not a
second index beside it); a namespace is a small integer (its name, an evaluator signature's
hash, is stored once in `<table>_namespaces`); a key is 16 bytes (the first half of its
sha256 hex digest, or of the sha256 of any other key text); a value of the shape
{name: {"value": float}} (a complete score row) is packed as 8-byte doubles, exactly, in the
order of the names the namespace stores once (other names: each name before its double); any
other value is compact JSON text; the time of writing is kept only where it is asked for
(`stamped`, the LLM response cache). A cache file of the first layout is converted in place the
first time it is opened (its entries are kept).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import struct
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalstress.core.storage import StorageError, reason_of
from evalstress.core.userfile import parse_json

_CHUNK = 500  # SQLite limits the number of bound parameters per statement
_BUSY_SECONDS = 30.0  # how long an open or a write waits for another process's lock
KEY_BYTES = 16
_HEX_KEY = re.compile(r"[0-9a-f]{64}")
_DOUBLE = struct.Struct("<d")


def key_bytes(key: str) -> bytes:
    """A key as stored: a sha256 hex digest's first 16 bytes, or those of the text's sha256."""
    if len(key) == 64 and _HEX_KEY.fullmatch(key):
        return bytes.fromhex(key[:2 * KEY_BYTES])
    return hashlib.sha256(key.encode("utf-8")).digest()[:KEY_BYTES]


def _score_row(value: Any) -> list[tuple[str, float]] | None:
    """The (name, value) pairs of a value {name: {"value": float}, ...}; None for any other."""
    if not isinstance(value, dict) or not value:
        return None
    pairs = []
    for name, item in value.items():
        if not (isinstance(name, str) and 0 < len(name.encode("utf-8")) < 256
                and isinstance(item, dict) and len(item) == 1
                and isinstance(item.get("value"), float)):  # numpy's too; not an int
            return None
        pairs.append((name, item["value"]))
    return pairs


def encode_value(value: Any, fields: Sequence[str] | None = None) -> bytes | str:
    """A value as stored: a score row packed (a zero byte and doubles in the order of `fields`,
    the namespace's names, when it has exactly those; else each name, length first, before its
    double), anything else compact JSON text. Packing is exact: a double is the float."""
    pairs = _score_row(value)
    if pairs is None:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    if fields is not None and tuple(name for name, _ in pairs) == tuple(fields):
        return b"\x00" + b"".join(_DOUBLE.pack(v) for _, v in pairs)
    packed = bytearray()
    for name, number in pairs:
        raw = name.encode("utf-8")
        packed += bytes([len(raw)]) + raw + _DOUBLE.pack(number)
    return bytes(packed)


def decode_value(stored: bytes | str, fields: Sequence[str] | None = None) -> Any:
    """The value `encode_value` stored (`fields`: the same namespace's names)."""
    if isinstance(stored, str):  # a merged cache is someone else's file: bounded parsing
        return parse_json(stored, "a cached value")
    if stored[:1] == b"\x00":
        if fields is None:
            raise ValueError("a packed score row of a namespace without names")
        return {name: {"value": _DOUBLE.unpack_from(stored, 1 + 8 * i)[0]}
                for i, name in enumerate(fields)}
    out: dict[str, Any] = {}
    at = 0
    while at < len(stored):
        size = stored[at]
        name = stored[at + 1:at + 1 + size].decode("utf-8")
        at += 1 + size
        out[name] = {"value": _DOUBLE.unpack_from(stored, at)[0]}
        at += _DOUBLE.size
    return out


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


Space = tuple[int, "tuple[str, ...] | None"]  # a namespace's number and its score names


class SQLiteCache:
    """Namespaced JSON values by key; safe to share between threads of one process.
    `stamped`: keep each entry's time of writing (for `newest`)."""

    def __init__(self, path: str | Path, table: str = "entries", *, stamped: bool = False):
        if not table.isidentifier():
            raise ValueError(f"bad table name {table!r}")
        self.path = Path(path)
        self.table = table
        self.stamped = stamped
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False,
                                         timeout=_BUSY_SECONDS)
            _enter_wal(self._conn)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._spaces: dict[str, Space] = {}
            self._prepare()
        except (OSError, sqlite3.Error) as exc:
            raise self._storage_error(exc) from None

    @property
    def _names(self) -> str:
        return f"{self.table}_namespaces"

    def _prepare(self) -> None:
        """Create the tables, or convert a table of the first layout (text keys, a rowid)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")  # one process converts; the others then find it done
        try:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {self._names} (id INTEGER PRIMARY KEY, "
                         "name TEXT NOT NULL UNIQUE, fields TEXT)")
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({self.table})")}
            old = f"{self.table}_first_layout"
            if "namespace" in columns:
                conn.execute(f"ALTER TABLE {self.table} RENAME TO {old}")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (ns INTEGER NOT NULL, "
                         "key BLOB NOT NULL, value NOT NULL, created INTEGER, "
                         "PRIMARY KEY (ns, key)) WITHOUT ROWID")
            if "namespace" in columns:
                self._convert(old)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        if "namespace" in columns:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("VACUUM")  # give the first layout's pages back to the disk

    def _convert(self, old: str) -> None:
        rows = self._conn.execute(f"SELECT namespace, key, value, created FROM {old}")
        while batch := rows.fetchmany(_CHUNK):
            grouped: dict[str, list[tuple[bytes, Any, int | None]]] = {}
            for namespace, key, value, created in batch:
                grouped.setdefault(namespace, []).append(
                    (key_bytes(key), parse_json(value, self.path),
                     int(created) if created is not None else None))
            for namespace, group in grouped.items():
                self._insert(namespace, group, replace=False)
        self._conn.execute(f"DROP TABLE {old}")

    def _space(self, namespace: str, *, create: bool, names: Sequence[str] | None = None
               ) -> Space | None:
        """A namespace's number and score names (the caller holds the lock); None if it has
        none yet. `names`: the names to store for it when it has none."""
        found = self._spaces.get(namespace)
        if found is not None and (found[1] is not None or names is None):
            return found
        select = f"SELECT id, fields FROM {self._names} WHERE name=?"
        row = self._conn.execute(select, (namespace,)).fetchone()
        if row is None and not create:
            return None
        if row is None or (row[1] is None and names is not None):
            # OR IGNORE and IS NULL: another process may have written them since (they win)
            self._conn.execute(f"INSERT OR IGNORE INTO {self._names} (name) VALUES (?)",
                               (namespace,))
            if names is not None:
                self._conn.execute(f"UPDATE {self._names} SET fields=? WHERE name=? AND "
                                   "fields IS NULL", (json.dumps(list(names)), namespace))
            row = self._conn.execute(select, (namespace,)).fetchone()
        space: Space = (int(row[0]), tuple(parse_json(row[1], self.path)) if row[1] else None)
        self._spaces[namespace] = space
        return space

    def _insert(self, namespace: str, rows: Sequence[tuple[bytes, Any, int | None]], *,
                replace: bool = True) -> None:
        """Store (key, value, created) rows of a namespace (the caller holds the lock)."""
        first = next((pairs for _, v, _ in rows if (pairs := _score_row(v)) is not None), None)
        space = self._space(namespace, create=True,
                            names=None if first is None else [n for n, _ in first])
        assert space is not None
        ns, fields = space
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        self._conn.executemany(
            f"{verb} INTO {self.table} (ns, key, value, created) VALUES (?, ?, ?, ?)",
            [(ns, key, encode_value(value, fields), created) for key, value, created in rows])

    def _storage_error(self, exc: BaseException) -> Exception:
        """A full disk or a read-only file is one line naming the cache file (a bug is not)."""
        meaning = reason_of(exc)
        if meaning is None:
            return exc if isinstance(exc, Exception) else RuntimeError(str(exc))
        return StorageError(f"cache file {self.path}: {meaning} (choose another folder with "
                            "--cache-dir, or --no-cache)")

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The connection, held by this thread for the block; an SQLite error inside rolls
        back and becomes a StorageError naming the file. Public for a cache that keeps tables
        of its own in the same file (the LLM response cache's claims)."""
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                self._spaces.clear()  # a namespace added in a rolled-back write is gone
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
        with self.locked() as conn:
            space = self._space(namespace, create=False)
            if space is None:
                return found
            ns, fields = space
            for start in range(0, len(keys), _CHUNK):
                asked = {key_bytes(k): k for k in keys[start:start + _CHUNK]}
                marks = ",".join("?" * len(asked))
                rows = conn.execute(
                    f"SELECT key, value FROM {self.table} WHERE ns=? AND key IN ({marks})",
                    [ns, *asked])
                for key, value in rows:
                    found[asked[key]] = decode_value(value, fields)
        return found

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.put_many(namespace, [(key, value)])

    def put_many(self, namespace: str, items: Iterable[tuple[str, Any]]) -> None:
        now = int(time.time()) if self.stamped else None
        rows = [(key_bytes(k), v, now) for k, v in items]
        if not rows:
            return
        with self.locked() as conn:
            self._insert(namespace, rows)
            conn.commit()

    def count(self, namespace: str | None = None) -> int:
        with self.locked() as conn:
            if namespace is None:
                return int(conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])
            space = self._space(namespace, create=False)
            if space is None:
                return 0
            return int(conn.execute(f"SELECT COUNT(*) FROM {self.table} WHERE ns=?",
                                    (space[0],)).fetchone()[0])

    def namespaces(self) -> dict[str, int]:
        with self.locked() as conn:
            rows = conn.execute(
                f"SELECT n.name, COUNT(*) FROM {self.table} t JOIN {self._names} n "
                "ON n.id = t.ns GROUP BY n.name ORDER BY 1")
            return {ns: int(n) for ns, n in rows}

    def newest(self, namespace: str, limit: int) -> list[Any]:
        """Up to `limit` values of a namespace, the most recently written first."""
        with self.locked() as conn:
            space = self._space(namespace, create=False)
            if space is None:
                return []
            rows = conn.execute(f"SELECT value FROM {self.table} WHERE ns=? "
                                "ORDER BY created DESC LIMIT ?", (space[0], limit)).fetchall()
        return [decode_value(v, space[1]) for (v,) in rows]

    def merge_from(self, other: str | Path) -> int:
        """Copy every entry of another cache file's same-named table; returns the entries added.

        Keys name everything that changes a value, so entries of shards never disagree: an entry
        already here is kept as it is. A file of the first layout is converted first.
        """
        other = Path(other)
        if not other.exists():
            raise FileNotFoundError(f"{other}: no such cache file")
        try:
            with contextlib.closing(sqlite3.connect(other, timeout=_BUSY_SECONDS)) as probe:
                found = probe.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table' "
                                      "AND name=?", (self.table,)).fetchone()[0]
        except sqlite3.Error as exc:  # the file to merge is damaged or no cache at all
            meaning = reason_of(exc)
            raise StorageError(f"cache file {other}: {meaning or exc}") from None
        if not found:
            return 0
        SQLiteCache(other, self.table).close()  # converts a first-layout file
        with self.locked() as conn:
            before = conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
            conn.execute("ATTACH DATABASE ? AS other", (str(other),))
            try:
                for ns, name, fields in conn.execute(
                        f"SELECT id, name, fields FROM other.{self._names}").fetchall():
                    theirs = tuple(parse_json(fields, other)) if fields else None
                    space = self._space(name, create=True, names=theirs)
                    assert space is not None
                    if theirs is None or space[1] == theirs:  # stored alike: copied as stored
                        conn.execute(
                            f"INSERT OR IGNORE INTO {self.table} (ns, key, value, created) "
                            f"SELECT ?, key, value, created FROM other.{self.table} WHERE ns=?",
                            (space[0], ns))
                        continue
                    rows = conn.execute(f"SELECT key, value, created FROM other.{self.table} "
                                        "WHERE ns=?", (ns,))
                    while batch := rows.fetchmany(_CHUNK):
                        self._insert(name, [(key, decode_value(value, theirs), created)
                                            for key, value, created in batch], replace=False)
                conn.commit()
            finally:
                conn.execute("DETACH DATABASE other")
            after = conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
        return int(after - before)

    def close(self) -> None:
        with self.locked() as conn:
            conn.close()
