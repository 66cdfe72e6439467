"""A judge evaluator pointed at the fake server, for the judge tests that share it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalstress.evaluators.base import create_evaluator
from evalstress.evaluators.judge import JudgeEvaluator
from evalstress.llm.fake_server import FakeServer


def fake_judge(server: FakeServer, tmp_path: Path, **params: Any) -> JudgeEvaluator:
    """`judge:model=fake,...` against `server`, its response cache in `tmp_path`, quick retries;
    `params` add to or replace those settings."""
    spec = ",".join(f"{k}={v}" for k, v in {"model": "fake", "base_url": server.base_url,
                                             "backoff": 0.01, "cache": tmp_path / "llm.sqlite",
                                             **params}.items())
    made = create_evaluator(f"judge:{spec}")
    assert isinstance(made, JudgeEvaluator)
    return made
