from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path
from typing import Any

import pytest

from evalstress.core.cache import SQLiteCache, decode_value, default_cache_dir
from evalstress.core.userfile import DataError


def test_values_survive_reopening(tmp_path: Path) -> None:
    cache = SQLiteCache(tmp_path / "c.sqlite")
    cache.put_many("ns", [("k1", {"v": 1.5}), ("k2", [1, "a"])])
    cache.close()
    again = SQLiteCache(tmp_path / "c.sqlite")
    assert again.get_many("ns", ["k1", "k2", "k3"]) == {"k1": {"v": 1.5}, "k2": [1, "a"]}
    assert again.get("other", "k1") is None
    assert again.namespaces() == {"ns": 2}


def test_many_keys_and_threads(tmp_path: Path) -> None:
    cache = SQLiteCache(tmp_path / "c.sqlite")
    keys = [f"k{i}" for i in range(2000)]

    def writer(offset: int) -> None:
        cache.put_many("ns", [(k, i) for i, k in enumerate(keys) if i % 4 == offset])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache.get_many("ns", keys)) == 2000


def test_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path


def test_merge_adds_the_other_files_entries_and_keeps_its_own(tmp_path: Path) -> None:
    mine = SQLiteCache(tmp_path / "a.sqlite")
    mine.put_many("ns", [("k1", 1), ("shared", "mine")])
    other = SQLiteCache(tmp_path / "b.sqlite")
    other.put_many("ns", [("k2", 2), ("shared", "theirs")])
    other.put("ns2", "k3", 3)
    other.close()
    assert mine.merge_from(tmp_path / "b.sqlite") == 2
    assert mine.get_many("ns", ["k1", "k2", "shared"]) == {"k1": 1, "k2": 2, "shared": "mine"}
    assert mine.get("ns2", "k3") == 3
    assert mine.merge_from(tmp_path / "b.sqlite") == 0


def _open_together(paths: list[str], barrier, outcomes) -> None:  # type: ignore[no-untyped-def]
    for path in paths:
        barrier.wait()  # every process opens the same new file at the same moment
        try:
            cache = SQLiteCache(path, "scores")
            cache.put_many("ns", [(path, 1)])
            cache.close()
            outcomes.put("ok")
        except Exception as exc:  # reported back to the parent, which names it
            outcomes.put(repr(exc))


def test_processes_opening_one_new_file_together_all_succeed(tmp_path: Path) -> None:
    # Two runs sharing a fresh --cache-dir open the same new file at the same moment; SQLite
    # refuses the WAL switch of the loser at once, without waiting, unless the cache retries.
    paths = [str(tmp_path / f"c{i}" / "scores.sqlite") for i in range(40)]
    context = multiprocessing.get_context("fork")
    barrier, outcomes = context.Barrier(4), context.Queue()
    workers = [context.Process(target=_open_together, args=(paths, barrier, outcomes))
               for _ in range(4)]
    for worker in workers:
        worker.start()
    seen = [outcomes.get(timeout=120) for _ in range(4 * len(paths))]
    for worker in workers:
        worker.join(timeout=60)
    assert [o for o in seen if o != "ok"] == []
    for path in paths:
        assert SQLiteCache(path, "scores").get("ns", path) == 1


def test_score_rows_come_back_exactly_and_other_values_as_json(tmp_path: Path) -> None:
    import math
    import sys

    cache = SQLiteCache(tmp_path / "c.sqlite", "scores")
    values = {
        "a" * 64: {"bleu": {"value": 0.1 + 0.2}},  # 0.30000000000000004 survives
        "b" * 64: {"rouge1": {"value": -0.0}, "rouge2": {"value": sys.float_info.min},
                   "rougeL": {"value": 1e308}, "é-aspect": {"value": math.inf}},
        "c" * 64: {"f": {"value": 7}},  # a whole number stays a whole number (JSON)
        "d" * 64: {"f": {"value": 0.5, "extra": {"truncated": True}}},
        "plain key": {"f": {"value": 0.25}},
        "empty": {},
    }
    cache.put_many("ns", values.items())
    cache.close()
    back = SQLiteCache(tmp_path / "c.sqlite", "scores").get_many("ns", list(values))
    assert back == values
    assert type(back["c" * 64]["f"]["value"]) is int
    assert math.copysign(1, back["b" * 64]["rouge1"]["value"]) == -1  # -0.0 kept
    nan = SQLiteCache(tmp_path / "c.sqlite", "scores")
    nan.put("ns", "e" * 64, {"f": {"value": math.nan}})
    assert math.isnan(nan.get_many("ns", ["e" * 64])["e" * 64]["f"]["value"])


def _first_layout(path: Path, rows: list[tuple[str, str, Any]]) -> None:
    """A cache file as versions before the lean layout wrote it."""
    import json
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE scores (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT "
                 "NOT NULL, created REAL, PRIMARY KEY (namespace, key))")
    conn.executemany("INSERT INTO scores (namespace, key, value) VALUES (?, ?, ?)",
                     [(ns, key, json.dumps(value)) for ns, key, value in rows])
    conn.commit()
    conn.close()


def test_a_cache_of_the_first_layout_keeps_its_entries(tmp_path: Path) -> None:
    import hashlib

    key = hashlib.sha256(b"a request").hexdigest()
    rows = [("ns1", key, {"bleu": {"value": 0.125}}), ("ns1", "k2", [1, "a"]),
            ("ns2", key, {"judge": {"value": 3, "reason": "r"}})]
    _first_layout(tmp_path / "old.sqlite", rows)
    cache = SQLiteCache(tmp_path / "old.sqlite", "scores")
    assert cache.get_many("ns1", [key, "k2"]) == {key: {"bleu": {"value": 0.125}}, "k2": [1, "a"]}
    assert cache.get("ns2", key) == {"judge": {"value": 3, "reason": "r"}}
    assert cache.namespaces() == {"ns1": 2, "ns2": 1}
    # and another first-layout file merges in
    _first_layout(tmp_path / "shard.sqlite", [("ns1", "k3", 3)])
    assert cache.merge_from(tmp_path / "shard.sqlite") == 1
    assert cache.get("ns1", "k3") == 3


def test_newest_values_come_first(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import evalstress.core.cache as module

    cache = SQLiteCache(tmp_path / "c.sqlite", "responses", stamped=True)
    for second, key in enumerate(["old", "mid", "new"]):
        monkeypatch.setattr(module.time, "time", lambda s=second: 1_700_000_000.0 + s)
        cache.put("chat", key, {"request": key})
    assert cache.newest("chat", 2) == [{"request": "new"}, {"request": "mid"}]


def test_shards_storing_score_names_in_another_order_merge_exactly(tmp_path: Path) -> None:
    # each file stores the names of its first score row once: here in two different orders
    mine = SQLiteCache(tmp_path / "a.sqlite", "scores")
    mine.put("ns", "k1", {"p": {"value": 0.1}, "r": {"value": 0.2}})
    other = SQLiteCache(tmp_path / "b.sqlite", "scores")
    other.put_many("ns", [("k2", {"r": {"value": 0.7}, "p": {"value": 0.3}}),
                          ("k3", {"p": {"value": 0.5}})])  # fewer names than the first row
    other.close()
    assert mine.merge_from(tmp_path / "b.sqlite") == 2
    assert mine.get_many("ns", ["k1", "k2", "k3"]) == {
        "k1": {"p": {"value": 0.1}, "r": {"value": 0.2}},
        "k2": {"r": {"value": 0.7}, "p": {"value": 0.3}}, "k3": {"p": {"value": 0.5}}}


def test_a_cached_value_nested_100_000_deep_is_a_data_error_not_a_recursion_error() -> None:
    """A merged cache is someone else's file: its JSON is parsed with the same depth bound."""
    with pytest.raises(DataError, match="a cached value: is nested too deeply"):
        decode_value("[" * 100_000 + "]" * 100_000)
    assert decode_value('{"a": [1]}') == {"a": [1]}
