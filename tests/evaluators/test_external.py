from __future__ import annotations

import sys
from pathlib import Path

from evalstress.evaluators import ScoreRequest, create_evaluator
from evalstress.evaluators.external import CallableEvaluator


def length_score(request: ScoreRequest) -> float:
    return float(len(request.text.split()))


def test_python_callable_by_target_string() -> None:
    evaluator = create_evaluator("python:target=tests.evaluators.test_external:length_score")
    rows = evaluator.score([ScoreRequest("a b c"), ScoreRequest("a")])
    assert [r["score"].value for r in rows] == [3.0, 1.0]


def test_callable_errors_and_bad_values_become_missing_with_reason() -> None:
    def flaky(request: ScoreRequest) -> object:
        if "boom" in request.text:
            raise RuntimeError("model crashed")
        return "high" if "word" in request.text else {"fluency": 0.5}

    evaluator = CallableEvaluator(flaky, aspects="fluency")
    rows = evaluator.score([ScoreRequest("boom"), ScoreRequest("word"), ScoreRequest("ok")])
    assert "model crashed" in (rows[0]["fluency"].reason or "")
    assert not rows[1]["fluency"].ok and "'high'" in (rows[1]["fluency"].reason or "")
    assert rows[2]["fluency"].value == 0.5


def test_batched_callable_gets_lists() -> None:
    calls = []

    def batch(requests: list[ScoreRequest]) -> list[float]:
        calls.append(len(requests))
        return [float(len(r.text)) for r in requests]

    rows = CallableEvaluator(batch, batched=True).score([ScoreRequest("ab"), ScoreRequest("abc")])
    assert calls == [2] and [r["score"].value for r in rows] == [2.0, 3.0]


SCRIPT = """
import json, sys
for line in sys.stdin:
    item = json.loads(line)
    if "skip" in item["text"]:
        continue
    if "fail" in item["text"]:
        print(json.dumps({"id": item["id"], "error": "cannot score"}))
        continue
    print(json.dumps({"id": item["id"], "scores": {"len": len(item["text"]),
                                                   "refs": len(item["references"])}}))
"""


def test_external_command_jsonl_protocol(tmp_path: Path) -> None:
    script = tmp_path / "scorer.py"
    script.write_text(SCRIPT, encoding="utf-8")
    evaluator = create_evaluator(f"command:cmd='{sys.executable} {script}',aspects=len refs")
    rows = evaluator.score([ScoreRequest("abcd", references=("r",)), ScoreRequest("skip me"),
                            ScoreRequest("fail")])
    assert rows[0]["len"].value == 4 and rows[0]["refs"].value == 1
    assert "no score for line 2" in (rows[1]["len"].reason or "")
    assert "cannot score" in (rows[2]["refs"].reason or "")


def test_external_command_that_crashes_gives_missing_scores(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text("import sys; sys.stderr.write('out of memory\\n'); sys.exit(3)\n")
    evaluator = create_evaluator(f"command:cmd='{sys.executable} {script}'")
    [row] = evaluator.score([ScoreRequest("text")])
    assert "exited 3: out of memory" in (row["score"].reason or "")
