"""Fixtures of the attack tests: a fake server that plays generator and gold judge, a victim
whose scores come from a table, and a few SummEval-like examples."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from evalstress.core.data import Example
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.studies.attack.prompt import SYSTEM as GENERATOR_SYSTEM

SOURCE = ("The city council voted on Monday to rebuild the old harbour bridge. The work will "
          "start in May and cost twelve million euros. Shops near the bridge fear a long "
          "closure, but the mayor promised a ferry service while it lasts.")
ORIGINAL = "The council will rebuild the harbour bridge from May for twelve million euros."


def example(i: int = 0, hypothesis: str = ORIGINAL) -> Example:
    source = SOURCE if i == 0 else f"{SOURCE} Report number {i}."
    return Example(f"ex-{i}", "summarization", source, hypothesis,
                   ("The council voted to rebuild the harbour bridge, starting in May.",))


def judged_text(body: Mapping[str, Any]) -> str:
    """The text a judge request asks about (score-only prompt of the judge evaluator)."""
    user = body["messages"][-1]["content"]
    return user.split("Text to evaluate:\n", 1)[1].split("\n\nCriterion", 1)[0]


class Script:
    """Generator answers by sample index, gold ratings by text; remembers every request."""

    def __init__(self, write: Callable[[int], str], rate: Callable[[str], float | str]):
        self.write, self.rate = write, rate
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        if body["messages"][0]["content"] == GENERATOR_SYSTEM:
            return Reply(self.write(int(body["seed"])))
        return Reply(str(self.rate(judged_text(body))))

    def keys(self) -> list[str]:
        return [json.dumps([b["messages"], b.get("seed")], sort_keys=True) for b in self.bodies]

    def generations(self) -> list[dict[str, Any]]:
        return [b for b in self.bodies if b["messages"][0]["content"] == GENERATOR_SYSTEM]


@pytest.fixture
def scripted() -> Iterator[Callable[..., tuple[FakeServer, Script]]]:
    servers: list[FakeServer] = []

    def make(write: Callable[[int], str], rate: Callable[[str], float | str]
             ) -> tuple[FakeServer, Script]:
        script = Script(write, rate)
        server = FakeServer(responder=script)
        server.start()
        servers.append(server)
        return server, script

    yield make
    for server in servers:
        server.stop()


class TableVictim(Evaluator):
    """Scores from a table (0-100 declared), a default for other texts; counts what it scores
    and can fail on its n-th batch as if the process were killed."""

    name = "table-victim"
    batch_size = 64

    def __init__(self, table: Mapping[str, float] | Callable[[str], float] | None = None,
                 default: float = 50.0, kill_on_batch: int | None = None):
        super().__init__()
        self.table, self.default, self.kill_on_batch = table or {}, default, kill_on_batch
        self.seen: list[str] = []
        self.batches = 0

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("score",)

    def score_range(self, aspect: str) -> tuple[float, float]:
        return (0.0, 100.0)

    def value(self, text: str) -> float:
        if callable(self.table):
            return float(self.table(text))
        return float(self.table.get(text, self.default))

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        self.batches += 1
        if self.kill_on_batch is not None and self.batches >= self.kill_on_batch:
            raise KeyboardInterrupt("killed")
        self.seen.extend(r.text for r in requests)
        return [{"score": Score(self.value(r.text))} for r in requests]


def judge_spec(server: FakeServer, **extra: Any) -> str:
    parts = [f"judge:model=gold,base_url={server.base_url},max_attempts=1"]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return ",".join(parts)


def generator_spec(server: FakeServer) -> str:
    return f"model=writer,base_url={server.base_url},temperature=1.0,max_attempts=1"


