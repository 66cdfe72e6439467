"""The three worked templates of docs/judges.md run as the page says: each file loads, fills its
placeholders, and its output contract reads the answers the page shows (fake server)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from evalstress.evaluators.base import ScoreRequest, create_evaluator, parse_spec
from evalstress.llm.fake_server import FakeServer, Reply

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "judges.md"
REQ = ScoreRequest("The reef lies off Queensland and is the largest in the world.",
                   "Where is the Great Barrier Reef, and how big is it?",
                   ("It lies off Queensland, Australia, and is the largest coral reef system.",),
                   "qa")


def page_spec(template: str) -> dict[str, object]:
    """The judge spec of the page's command that uses `template`, as parameters."""
    text = PAGE.read_text("utf-8")
    [line] = [line for line in re.findall(r"^evalstress .*$", text, re.MULTILINE)
              if template in line]
    args = shlex.split(line)
    spec = args[args.index("-e") + 1]
    name, params = parse_spec(spec)
    assert name == "judge"
    return params


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    with FakeServer() as srv:
        yield srv


@pytest.mark.parametrize("template, answer, value", [
    ("geval-rubric.yaml", "1. Main points: two.\n2. Read.\n3. Order is off.\n4. Weighed.\n"
                          "Score: 2", 2.0),
    ("json-judge.yaml", '{"reasoning": "Two words are missing.", "score": 3}', 3.0),
    ("pass-fail.txt", "It adds nothing false.\nPASS", 1.0),
    ("pass-fail.txt", "It contradicts the reference.\nFAIL", 0.0),
])
def test_each_worked_template_scores_the_pages_answer(server: FakeServer, tmp_path: Path,
                                                      template: str, answer: str,
                                                      value: float) -> None:
    params = page_spec(template)
    assert str(params["prompt"]) == f"docs/templates/{template}"
    params.update(model="fake", base_url=server.base_url, cache=str(tmp_path / "llm.sqlite"),
                  logprobs=False, prompt=str(ROOT / str(params["prompt"])))
    judge = create_evaluator({"name": "judge", **params})
    server.default = Reply(answer)
    [row] = judge.score([REQ])
    [score] = row.values()
    assert score.value == value, score.reason
    sent = server.requests[-1]["messages"][-1]["content"]
    assert REQ.text in sent and "{" + "text}" not in sent


def test_the_pages_failure_examples_are_what_the_contracts_say(server: FakeServer,
                                                               tmp_path: Path) -> None:
    judge = create_evaluator({"name": "judge", **page_spec("json-judge.yaml"), "model": "fake",
                              "base_url": server.base_url, "cache": "false", "max_reasks": 0,
                              "prompt": str(ROOT / "docs/templates/json-judge.yaml")})
    server.default = Reply('{"score": 7}')
    [row] = judge.score([REQ])
    assert "7 is outside the 1-5 scale" in (row["fluency"].reason or "")
    rubric = create_evaluator({"name": "judge", **page_spec("geval-rubric.yaml"), "model": "fake",
                               "base_url": server.base_url, "cache": "false", "max_reasks": 0,
                               "prompt": str(ROOT / "docs/templates/geval-rubric.yaml")})
    server.default = Reply("1. Read the article.")
    [row] = rubric.score([REQ])
    assert "no match of the output pattern in the answer" in (row["coherence"].reason or "")
    passfail = create_evaluator({"name": "judge", **page_spec("pass-fail.txt"), "model": "fake",
                                 "base_url": server.base_url, "cache": "false",
                                 "prompt": str(ROOT / "docs/templates/pass-fail.txt")})
    [row] = passfail.score([ScoreRequest("An answer.", "A question?", (), "qa")])
    assert "uses {reference}, which this example lacks" in (row["overall"].reason or "")
