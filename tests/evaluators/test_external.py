from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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


def _write_scorer(folder: Path, body: str) -> None:
    (folder / "my_scorer.py").write_text(
        "def score(request):\n    # how many words\n" + body, encoding="utf-8")
    sys.modules.pop("my_scorer", None)


def test_an_edited_scorer_is_rerun_not_served_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstress.engine.scoring import Scorer, open_cache

    monkeypatch.chdir(tmp_path)  # the working directory is importable for target=
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    cache = open_cache(tmp_path / "scores.sqlite")
    requests = [ScoreRequest("a b c"), ScoreRequest("d e")]

    def scores() -> list[float | None]:
        evaluator = create_evaluator("python:target=my_scorer:score")
        rows = Scorer(evaluator, cache).score(requests)
        return [rows[r.key]["score"].value for r in requests]

    _write_scorer(tmp_path, "    return float(len(request.text.split()))\n")
    assert scores() == [3.0, 2.0]
    _write_scorer(tmp_path, "    return 10.0 * len(request.text.split())\n")
    assert scores() == [30.0, 20.0]  # not the cached 3.0 and 2.0
    # a comment or a blank line changes nothing the function does: the cache still serves it
    _write_scorer(tmp_path, "\n    # ten points a word\n    return 10.0 * len(request.text.split())\n")
    evaluator = create_evaluator("python:target=my_scorer:score")
    scorer = Scorer(evaluator, cache)
    scorer.score(requests)
    assert scorer.stats.cached == 2 and scorer.stats.scored == 0


def test_fingerprints_follow_code_constants_defaults_and_closures() -> None:
    from functools import partial

    from evalstress.evaluators.external import source_fingerprint

    def make(limit: int) -> Callable[[ScoreRequest], float]:
        def under(request: ScoreRequest) -> float:
            return float(len(request.text) < limit)
        return under

    def plus(request: ScoreRequest, bonus: float = 1.0) -> float:
        return len(request.text) + bonus

    def plus_again(request: ScoreRequest, bonus: float = 1.0) -> float:
        return len(request.text) + bonus

    def plus_two(request: ScoreRequest, bonus: float = 2.0) -> float:
        return len(request.text) + bonus

    def words(request: ScoreRequest) -> bool:
        return request.text in {"alpha", "beta", "gamma"}

    assert source_fingerprint(plus) == source_fingerprint(plus_again)
    assert source_fingerprint(plus) != source_fingerprint(plus_two)
    assert source_fingerprint(make(3)) != source_fingerprint(make(4))
    assert source_fingerprint(partial(plus, bonus=3)) != source_fingerprint(partial(plus, bonus=4))
    assert source_fingerprint(words) == source_fingerprint(words)
    assert len(source_fingerprint(len)) == 16  # builtins have a name, not code
    assert CallableEvaluator(plus).signature()["params"]["source"] == source_fingerprint(plus)


def test_a_missing_target_module_names_the_places_searched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"no module 'nowhere_to_be_found' in the working "
                                         r"directory"):
        create_evaluator("python:target=nowhere_to_be_found:score")


def test_fingerprints_do_not_depend_on_hash_randomisation(tmp_path: Path) -> None:
    _write_scorer(tmp_path, '    return float(request.text in {"alpha", "beta", "gamma", "delta"})\n')
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import my_scorer; "
            "from evalstress.evaluators.external import source_fingerprint; "
            "print(source_fingerprint(my_scorer.score))")
    src = str(Path(__file__).resolve().parents[2] / "src")
    prints = {subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                             text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": src}
                             ).stdout.strip() for seed in ("1", "2", "3")}
    assert len(prints) == 1 and len(next(iter(prints))) == 16


def test_a_command_that_does_not_exist_is_refused_when_the_spec_is_read() -> None:
    """It used to try every batch, record every score as missing and exit 3."""
    from evalstress.core.strict import ConfigError

    with pytest.raises(ConfigError, match="no program 'nosuch-program-evalstress'"):
        create_evaluator("command:cmd=nosuch-program-evalstress")


def test_output_lines_tied_to_no_request_are_named_in_the_missing_reason(
        tmp_path: Path) -> None:
    """A scorer that prints a log line, a broken answer or a wrong id among its answers: the
    requests left without a score say which output line went wrong, not only that none came."""
    script = tmp_path / "noisy.py"
    script.write_text(
        "import json, sys\n"
        "items = [json.loads(line) for line in sys.stdin]\n"
        "print('loading model...')\n"  # output line 1
        "print(json.dumps({'id': 0, 'score': 0.5}))\n"  # output line 2
        "print('{\"id\": 1, \"score\": ')\n"  # output line 3: cut short
        "print(json.dumps({'id': 7, 'score': 0.1}))\n",  # output line 4: no such request
        encoding="utf-8")
    evaluator = create_evaluator(f"command:cmd='{sys.executable} {script}'")
    rows = evaluator.score([ScoreRequest("a"), ScoreRequest("b")])
    assert rows[0]["score"].value == 0.5
    reason = rows[1]["score"].reason or ""
    assert "gave no score for line 2" in reason
    assert reason.endswith(
        "; output line 1 is not JSON: expected a value (a text in double quotes, a number, "
        "true, false, null, a list or an object), column 1"
        "; output line 3 is not JSON: the line ends before its JSON is complete (an object "
        "or text is never closed; in JSONL each record is one whole line), column 20"
        "; output line 4 has id 7, but the batch's ids are 0 to 1")


def two_arguments(text: str, reference: str) -> float:
    return float(text == reference)


def reads_a_string(text: str) -> float:
    return float(len(text.lower()))


def answers_a_word(request: ScoreRequest) -> str:
    return "good"


def batched_scalar(requests: list[ScoreRequest]) -> float:
    return 1.0


CONTRACT_WORDS = "expected f(request) -> number; request has .text, .references, .source, .task"


@pytest.mark.parametrize(("name", "said"), [
    ("two_arguments", "takes (text, reference), which one request cannot call"),
    ("reads_a_string", "raised AttributeError"),
    ("answers_a_word", "returned 'good', which is no score"),
])
def test_a_scorer_off_the_contract_is_refused_when_built(name: str, said: str) -> None:
    from evalstress.core.strict import ConfigError

    spec = f"python:target=tests.evaluators.test_external:{name}"
    with pytest.raises(ConfigError) as raised:
        create_evaluator(spec)
    message = str(raised.value)
    assert message.startswith(f"python:target=tests.evaluators.test_external:{name}: ")
    assert said in message and CONTRACT_WORDS in message


def test_a_batched_scorer_answering_no_list_is_refused_when_built() -> None:
    from evalstress.core.strict import ConfigError

    with pytest.raises(ConfigError, match="not a list of one score"):
        create_evaluator("python:target=tests.evaluators.test_external:batched_scalar,"
                         "batched=true")


def test_a_callable_given_from_python_is_checked_for_one_argument() -> None:
    from evalstress.core.strict import ConfigError

    with pytest.raises(ConfigError, match="which one request cannot call"):
        CallableEvaluator(lambda text, reference: 0.0)
    CallableEvaluator(lambda request, weight=1.0: weight)  # a default is fine


def test_the_listing_states_the_contract() -> None:
    from typer.testing import CliRunner

    from evalstress.cli import app

    result = CliRunner().invoke(app, ["list", "evaluators"])
    assert result.exit_code == 0, result.output
    assert CONTRACT_WORDS in " ".join(result.output.split())


def test_a_card_of_a_scorer_off_the_contract_stops_before_any_method(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalstress.cli import app

    out = tmp_path / "card"
    result = CliRunner(env={"COLUMNS": "1000"}).invoke(app, [
        "card", "python:target=tests.evaluators.test_external:two_arguments", "--budget",
        "small", "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 2, result.output
    assert CONTRACT_WORDS in " ".join(result.output.split())
    assert "running" not in result.output and not out.exists()
