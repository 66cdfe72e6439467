"""results.json says what each LLM evaluator's client spent: calls, cache hits, retries, 429s
and failures by kind, so a budget or a flaky endpoint is visible after the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer, Reply

CORPUS = Path(__file__).resolve().parents[2] / "src" / "evalstress" / "corpus" / "sample.jsonl"


def judge_run(server: FakeServer, tmp_path: Path, out: str) -> dict:
    spec = f"judge:model=m,base_url={server.base_url},form=score-only,max_concurrency=1"
    result = CliRunner().invoke(app, [
        "run", str(CORPUS), "--limit", "2", "-p", "truncation", "--workers", "1", "--quiet",
        "-e", spec, "--out", str(tmp_path / out), "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / out / "results.json").read_text(encoding="utf-8"))
    [block] = [b for label, b in results["evaluators"].items() if label.startswith("judge")]
    return dict(block["usage"])


@pytest.mark.slow
def test_a_429_then_success_is_counted_and_a_rerun_pays_nothing(tmp_path: Path) -> None:
    script = [Reply(status=429, headers={"Retry-After": "0"})]
    with FakeServer(default=Reply("4"), script=script) as server:
        usage = judge_run(server, tmp_path, "first")
        answered = len(server.answered)
        # every answer was asked for once; the one 429 cost one more attempt, then succeeded
        assert usage["requests"] == answered > 0
        assert (usage["rate_limited"], usage["retries"], usage["errors"]) == (1, 1, 0)
        assert usage["failed_attempts"] == {"rate-limit": 1}
        assert usage["errors_by_kind"] == {}
        assert usage["calls"] == server.calls == answered + 1
        assert usage["cache_hits"] == 0
        assert usage["by_endpoint"] == {server.base_url: answered + 1}
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] == answered

        server.reset_counters()
        again = judge_run(server, tmp_path, "second")  # every score is in the score cache
        assert server.calls == 0 and (again["requests"], again["calls"]) == (0, 0)
        for stale in (tmp_path / "cache").glob("scores.sqlite*"):
            stale.unlink()  # scores gone: every answer comes from the LLM response cache
        third = judge_run(server, tmp_path, "third")
        assert server.calls == 0
        assert (third["requests"], third["cache_hits"], third["calls"]) == (answered, answered, 0)


@pytest.mark.slow
def test_failures_are_counted_by_kind(tmp_path: Path) -> None:
    """A 400 fails at once (client error); a 503 is retried and then answered."""
    script = [Reply(status=400), Reply(status=503)]
    with FakeServer(default=Reply("4"), script=script) as server:
        usage = judge_run(server, tmp_path, "run")
    assert usage["errors"] == 1 and usage["errors_by_kind"] == {"client": 1}
    assert usage["failed_attempts"] == {"client": 1, "server": 1}
    assert usage["retries"] == 1 and usage["rate_limited"] == 0
