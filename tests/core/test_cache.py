from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

from evalstress.core.cache import SQLiteCache, default_cache_dir


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
