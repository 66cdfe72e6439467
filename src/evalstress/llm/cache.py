"""The LLM response cache: one SQLite (WAL) entry per (request, sample index), written per response.

The key is the sha256 of the canonical JSON of everything that changes the output: endpoint
group, model, messages, sampling parameters and the sample index. API keys, timeouts and
concurrency never enter it. Only successful responses are stored (errors are retried next run),
and never one that holds the API key (the client fails it as "key-echo" and reads a stored one
as a miss); unparsable answers are stored as they came, because parsing is a separate,
repeatable step.
Each value keeps the key parts, so a miss can be explained by the nearest stored requests.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstress.core.cache import SQLiteCache, default_cache_dir

NAMESPACE = "chat"
CLAIMS = "response_claims"  # who is calling for which key right now (see `claim`)
KEY_FIELDS = ("base_url", "model", "messages", "params", "sample")


def key_parts(base_url: str, model: str, messages: Sequence[Mapping[str, Any]],
              params: Mapping[str, Any], sample: int) -> dict[str, Any]:
    """The fields that identify a response, as plain JSON values."""
    return {"base_url": base_url, "model": model, "messages": [dict(m) for m in messages],
            "params": {k: v for k, v in params.items() if v is not None}, "sample": int(sample)}


def canonical(parts: Mapping[str, Any]) -> str:
    return json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def response_key(parts: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the key parts."""
    return hashlib.sha256(canonical(parts).encode("utf-8")).hexdigest()


def claimant() -> str:
    """A caller's name in the claims table: host, process id and a token of its own."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def owner_alive(owner: str) -> bool:
    """Whether a claim's process may still answer: a process of this machine that is gone
    cannot; one of another machine is trusted until its lease ends."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def default_path() -> Path:
    return default_cache_dir() / "llm.sqlite"


class ResponseCache:
    """Stored chat responses by request key; values are {"request": parts, "response": {...}}."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()
        self._store: SQLiteCache | None = None

    @property
    def store(self) -> SQLiteCache:
        """The SQLite file, opened on first use: building a judge touches no folder, so a
        --cache-dir or --no-cache given later decides where (and whether) anything is written."""
        if self._store is None:
            store = SQLiteCache(self.path, "responses", stamped=True)  # `entries`: newest first
            with store.locked() as conn:
                conn.execute(f"CREATE TABLE IF NOT EXISTS {CLAIMS} (key TEXT PRIMARY KEY, "
                             "owner TEXT NOT NULL, expires REAL NOT NULL)")
                conn.commit()
            self._store = store
        return self._store

    def claim(self, key: str, owner: str, lease: float) -> bool:
        """Take the right to call for `key` for `lease` seconds, unless another live caller
        holds it: concurrent runs on one cache then pay for each request once (the others
        wait for the stored answer). A claim of a process that died on this machine, or whose
        lease ran out, is taken over."""
        now = time.time()
        with self.store.locked() as conn:
            conn.execute("BEGIN IMMEDIATE")  # read and write as one step across processes
            try:
                row = conn.execute(f"SELECT owner, expires FROM {CLAIMS} WHERE key=?",
                                   (key,)).fetchone()
                if row is not None and row[0] != owner and row[1] > now and owner_alive(row[0]):
                    conn.rollback()
                    return False
                conn.execute(f"INSERT OR REPLACE INTO {CLAIMS} (key, owner, expires) "
                             "VALUES (?, ?, ?)", (key, owner, now + lease))
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        return True

    def release(self, key: str, owner: str) -> None:
        """Give up a claim (answered, or failed: then another run may try)."""
        with self.store.locked() as conn:
            conn.execute(f"DELETE FROM {CLAIMS} WHERE key=? AND owner=?", (key, owner))
            conn.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {k: v["response"] for k, v in self.store.get_many(NAMESPACE, keys).items()}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.get_many([key]).get(key)

    def put(self, key: str, parts: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        self.store.put(NAMESPACE, key, {"request": dict(parts), "response": dict(response)})

    def count(self) -> int:
        return self.store.count(NAMESPACE)

    def entries(self, limit: int = 100_000) -> list[dict[str, Any]]:
        """Stored request parts (for explaining misses), newest first."""
        return [value["request"] for value in self.store.newest(NAMESPACE, limit)]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


@dataclass
class Difference:
    field: str
    wanted: Any
    stored: Any


def _diff(wanted: Mapping[str, Any], stored: Mapping[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    for name in KEY_FIELDS:
        a, b = wanted.get(name), stored.get(name)
        if name == "params" and isinstance(a, Mapping) and isinstance(b, Mapping):
            for p in sorted(set(a) | set(b)):
                if a.get(p) != b.get(p):
                    out.append(Difference(f"params.{p}", a.get(p), b.get(p)))
        elif name == "messages" and isinstance(a, list) and isinstance(b, list) and a != b:
            if len(a) != len(b):
                out.append(Difference("messages.count", len(a), len(b)))
            for i, (ma, mb) in enumerate(zip(a, b, strict=False)):
                for f in sorted(set(ma) | set(mb)):
                    if ma.get(f) != mb.get(f):
                        out.append(Difference(f"messages[{i}].{f}", _excerpt(ma.get(f), mb.get(f)),
                                              _excerpt(mb.get(f), ma.get(f))))
        elif a != b:
            out.append(Difference(name, a, b))
    return out


def _excerpt(text: Any, other: Any, width: int = 40) -> Any:
    """The part of a long text around its first difference from the other text."""
    if not isinstance(text, str) or not isinstance(other, str) or len(text) <= 2 * width:
        return text
    i = next((k for k, (x, y) in enumerate(zip(text, other, strict=False)) if x != y),
             min(len(text), len(other)))
    start = max(0, i - width)
    return ("..." if start else "") + text[start:i + width] + ("..." if i + width < len(text)
                                                                else "")


@dataclass
class Explanation:
    key: str
    hit: bool
    nearest: list[tuple[str, list[Difference]]]  # (stored key, its differences), closest first


def explain(cache: ResponseCache, parts: Mapping[str, Any], top: int = 3) -> Explanation:
    """Is this request cached? If not, which stored requests come closest, and in which fields."""
    key = response_key(parts)
    if cache.get(key) is not None:
        return Explanation(key, True, [])
    ranked = []
    for stored in cache.entries():
        diffs = _diff(parts, stored)
        ranked.append((len(diffs), response_key(stored), diffs))
    ranked.sort(key=lambda t: t[0])
    return Explanation(key, False, [(k, d) for _, k, d in ranked[:top]])


def response_cache_for(setting: Any, cache_dir: Path | None) -> ResponseCache | None:
    """The response cache a judge's or generator's `cache=` setting asks for: none (false, 0,
    off, none), a file of its own (a path), else llm.sqlite in the run's cache folder (or the
    default folder)."""
    if setting is False or str(setting).lower() in ("false", "0", "off", "none"):
        return None
    if isinstance(setting, str) and setting.lower() not in ("true", "1", "on"):
        return ResponseCache(setting)
    return ResponseCache(cache_dir / "llm.sqlite" if cache_dir else None)


class FollowsRunCache:
    """A judge or generator whose response cache follows the run's --cache-dir / --no-cache."""

    client: Any
    _cache_setting: Any

    def configure_cache(self, cache_dir: Path | None, enabled: bool = True) -> None:
        """Follow the run's --cache-dir / --no-cache (called by the CLI)."""
        if self.client.cache is not None:
            self.client.cache.close()
        self.client.cache = response_cache_for(self._cache_setting, cache_dir) if enabled \
            else None
