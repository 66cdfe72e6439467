"""A job checks, before its lock, its staging folder or any cache row, that its judges' and
generator's endpoints can answer: a run against a server that is not there, or one that
refuses the key, is one line and exit 2, not a run of failed requests that ends in exit 3."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer

runner = CliRunner(env={"COLUMNS": "1000"})  # an error line is never wrapped
SMALL = ["-p", "truncation", "--seeds", "1", "--workers", "1"]


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"id": i, "task": "open-ended",
                                        "hypothesis": f"The cat {i} sat on the mat.",
                                        "references": ["A cat sat on the mat."]}) + "\n"
                            for i in ("a", "b")))
    return path


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def _nothing_written(tmp_path: Path, out: Path, cache: Path) -> None:
    assert not out.exists()
    assert not any(p.name.startswith(f".{out.name}") for p in tmp_path.iterdir())  # staging
    assert not cache.exists() or not any(cache.iterdir())


def test_a_judge_on_a_closed_port_stops_the_run_before_any_work(tmp_path: Path) -> None:
    with FakeServer() as server:
        url = server.base_url  # nothing listens there once the server is closed
    out, cache = tmp_path / "run", tmp_path / "cache"
    judge = f"judge:model=m,base_url={url},form=score-only"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "could not ask ... which model it serves" no more
        result = runner.invoke(app, ["run", str(_data(tmp_path)), "-e", judge, *SMALL,
                                     "--out", str(out), "--cache-dir", str(cache)])
    assert result.exit_code == 2, result.output
    lines = _error_lines(result.output)
    assert len(lines) == 1 and lines[0].startswith("error: judge(m): connection refused by "
                                                   f"{url}"), result.output
    _nothing_written(tmp_path, out, cache)


def test_a_judge_whose_key_is_missing_stops_the_run_after_one_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_TEST_KEY", raising=False)
    out, cache = tmp_path / "run", tmp_path / "cache"
    with FakeServer(api_key="right") as server:
        judge = f"judge:model=fake,base_url={server.base_url},api_key_env=JUDGE_TEST_KEY"
        result = runner.invoke(app, ["run", str(_data(tmp_path)), "-e", judge, *SMALL,
                                     "--out", str(out), "--cache-dir", str(cache)])
        assert (server.listings, server.calls) == (1, 0)
    assert result.exit_code == 2, result.output
    lines = _error_lines(result.output)
    assert len(lines) == 1, result.output
    assert "asks for an API key (HTTP 401): set $JUDGE_TEST_KEY" in lines[0]
    _nothing_written(tmp_path, out, cache)


def test_a_generator_without_a_key_for_the_openai_api_is_refused_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "EVALSTRESS_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    out, cache = tmp_path / "run", tmp_path / "cache"
    result = runner.invoke(app, ["run", str(_data(tmp_path)), "-e", "bleu", "-p",
                                 "continuation", "--seeds", "1", "--generator",
                                 "model=gpt-4o-mini", "--out", str(out), "--cache-dir",
                                 str(cache)])
    assert result.exit_code == 2, result.output
    lines = _error_lines(result.output)
    assert len(lines) == 1, result.output
    assert lines[0] == ("error: --generator: https://api.openai.com/v1 needs an API key: set "
                        "$OPENAI_API_KEY (or name the variable that holds it with "
                        "api_key_env=NAME)")
    _nothing_written(tmp_path, out, cache)


def test_a_sequential_designs_analysis_takes_each_rows_tolerance_from_the_whole_run() -> None:
    """The design's interim intervals read the tolerance from every original seen; the final
    analysis must read the same population, or a row that stopped early could get another."""
    from types import SimpleNamespace

    from evalstress.job.run import analysis_options

    suite = SimpleNamespace(options={"tol_share": 0.2}, protocol="default")
    job = SimpleNamespace(suite=suite, options={}, verdict_design={"kind": "blindspot"},
                          backend="local")
    assert analysis_options(job)["tolerance_over"] == "run"  # type: ignore[arg-type]
    # the criteria method's matrices take the examples every unit scored
    assert analysis_options(job)["matrices_over"] == "common"  # type: ignore[arg-type]
    exhaustive = SimpleNamespace(suite=suite, options={}, verdict_design=None, backend="local")
    assert "tolerance_over" not in analysis_options(exhaustive)  # type: ignore[arg-type]
    assert "matrices_over" not in analysis_options(exhaustive)  # type: ignore[arg-type]
    on_ray = SimpleNamespace(suite=suite, options={}, verdict_design={"kind": "blindspot"},
                             backend="ray")  # Ray drops the design: every row is whole
    assert "tolerance_over" not in analysis_options(on_ray)  # type: ignore[arg-type]
