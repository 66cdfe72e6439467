"""Runs that share one LLM response cache pay for each request once: a caller claims a request
before calling, and the others wait for its stored answer."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalstress.llm.cache import ResponseCache
from evalstress.llm.client import LLMClient, LLMError
from evalstress.llm.fake_server import FakeServer, Reply

MESSAGES = [{"role": "user", "content": "Rate this."}]
PARAMS = {"temperature": 0.0, "max_tokens": 8}
SRC = Path(__file__).resolve().parents[2] / "src"
CORPUS = SRC / "evalstress" / "corpus" / "sample.jsonl"


def client(server: FakeServer, path: Path) -> LLMClient:
    """A client with its own handle on the cache file, as a second run would have."""
    return LLMClient(server.base_url, "fake", backoff=0.01, cache=ResponseCache(path))


def test_two_runs_asking_at_once_pay_for_one_call(tmp_path: Path) -> None:
    with FakeServer(default=Reply("4", delay=0.5)) as server:
        first, second = client(server, tmp_path / "llm.sqlite"), client(server, tmp_path /
                                                                      "llm.sqlite")

        async def main() -> list[Any]:
            try:
                return list(await asyncio.gather(*(c.chat(MESSAGES, PARAMS) for c in
                                                   (first, second))))
            finally:
                await first.aclose()
                await second.aclose()

        answers = asyncio.run(main())
    assert server.calls == 1
    assert [a.text for a in answers] == ["4", "4"]
    assert first.usage.calls + second.usage.calls == 1
    assert first.usage.waited_for_other_run + second.usage.waited_for_other_run == 1


def test_the_claim_of_a_process_that_died_is_taken_over_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """"At once" is counted: the first claim succeeds, with no poll and no wait for the hour
    of the dead process's lease."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    cache = ResponseCache(tmp_path / "llm.sqlite")
    with FakeServer(default=Reply("4")) as server:
        asker = client(server, tmp_path / "llm.sqlite")
        key = asker.key(MESSAGES, PARAMS, 0)
        assert cache.claim(key, f"{socket.gethostname()}:{dead.pid}:gone", lease=3600)
        assert asker.cache is not None
        tries: list[bool] = []
        claim = asker.cache.claim

        def counted(*args: Any, **kwargs: Any) -> bool:
            tries.append(claim(*args, **kwargs))
            # a refused claim would mean polling for the hour of the dead run's lease
            assert tries[-1], "the dead process's claim was not taken over"
            return tries[-1]

        monkeypatch.setattr(asker.cache, "claim", counted)
        answer = asyncio.run(asker.chat(MESSAGES, PARAMS))
    assert answer.text == "4" and server.calls == 1
    assert tries == [True]  # taken over on the first try: not one poll
    assert asker.usage.waited_for_other_run == 0


def test_a_live_claim_blocks_until_its_lease_ends_and_a_failed_call_gives_it_up(
        tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    with FakeServer(script=[Reply(status=400)], default=Reply("4")) as server:
        asker = client(server, tmp_path / "llm.sqlite")
        key = asker.key(MESSAGES, PARAMS, 0)
        other = f"{socket.gethostname()}:{os.getpid()}:another-run"  # alive: this process
        assert cache.claim(key, other, lease=0.6)
        assert not cache.claim(key, "someone-else:1:x", lease=10)
        started = time.monotonic()
        with pytest.raises(LLMError, match="client"):  # waited for the lease, then called
            asyncio.run(asker.chat(MESSAGES, PARAMS))
        assert time.monotonic() - started >= 0.5 and server.calls == 1
        assert cache.claim(key, other, lease=10)  # the failed caller released its claim


@pytest.mark.slow
def test_two_identical_cli_runs_on_one_cache_ask_each_request_once(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    with FakeServer(default=Reply("4", delay=0.3)) as server:
        spec = f"judge:model=m,base_url={server.base_url},form=score-only,max_concurrency=2"
        runs = [subprocess.Popen(
            [sys.executable, "-m", "evalstress.cli", "run", str(CORPUS), "--limit", "2", "-p",
             "truncation", "--workers", "1", "--quiet", "-e", spec, "--out",
             str(tmp_path / f"run{i}"), "--cache-dir", str(tmp_path / "cache")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (1, 2)]
        for proc in runs:
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr
        asked = [json.dumps(r, sort_keys=True) for r in server.requests]
    assert len(asked) == len(set(asked)) > 0  # nothing was paid for twice
    for i in (1, 2):
        results = json.loads((tmp_path / f"run{i}" / "results.json").read_text("utf-8"))
        assert results["counts"]["missing_scores"] == 0
