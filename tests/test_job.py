"""The one orchestration: every face (the CLI, evalstress.stress(), the pytest helpers) runs the
same job and gets the same score table; a job that cannot run says so before any scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import evalstress
import evalstress.job.run as job_module
import evalstress.testing as plugin_helpers
from evalstress.cli import app
from evalstress.core.data import builtin_corpus
from evalstress.evaluators.base import create_evaluator
from evalstress.job import JobError, StressJob, run_job
from evalstress.suites import custom_suite

KEY = ["example_id", "perturbation", "severity", "seed", "evaluator", "aspect"]


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(KEY).reset_index(drop=True)


def test_every_face_runs_the_same_job_and_writes_the_same_scores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "default-cache"))
    jobs: list[StressJob] = []
    real = job_module.score_job

    def counting(job: StressJob) -> object:
        jobs.append(job)
        return real(job)

    monkeypatch.setattr(job_module, "score_job", counting)  # every face scores through it
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: tiny\nseeds: [0]\nperturbations: [truncation]\n"
                     "analyses: [blindspot]\n", encoding="utf-8")

    cli = CliRunner().invoke(app, [
        "run", str(Path(evalstress.__file__).parent / "corpus" / "sample.jsonl"), "--limit",
        "3", "-p", "truncation", "--seeds", "1", "-e", "rouge", "--out", str(tmp_path / "cli"),
        "--quiet", "--workers", "1", "--no-cache"])
    assert cli.exit_code == 0, cli.output
    api = evalstress.stress(None, ["rouge"], perturbations=["truncation"], seeds=1, limit=3,
                            cache=False, progress=False, out=tmp_path / "api")
    plugin = plugin_helpers.stress("rouge", suite=suite, data=builtin_corpus()[:3],
                            out=tmp_path / "plugin", cache_dir=tmp_path / "plugin-cache")
    assert [j.config.get("command") for j in jobs] == ["run", "stress", "evalstress.testing"]

    cli_table = _sorted(pd.read_parquet(tmp_path / "cli" / "scores.parquet"))
    api_table = _sorted(pd.read_parquet(tmp_path / "api" / "scores.parquet"))
    pd.testing.assert_frame_equal(_sorted(api.table), api_table)  # what the notebook shows
    plugin_table = _sorted(pd.read_parquet(plugin.out_dir / "scores.parquet"))
    assert len(cli_table) == 3 * (1 + 5) * 3  # each original, its five truncations, 3 ROUGEs
    pd.testing.assert_frame_equal(cli_table, api_table)
    pd.testing.assert_frame_equal(cli_table, plugin_table)
    for folder in ("cli", "api"):
        saved = json.loads((tmp_path / folder / "results.json").read_text(encoding="utf-8"))
        assert saved["counts"]["examples"] == 3 and "blindspot" in saved["analyses"]


def test_quickstart_and_criteria_levels_score_as_run_does_with_the_same_settings(
        tmp_path: Path) -> None:
    """quickstart is `run --suite blindspot` with the lexical metrics; criteria-levels is `run`
    with one judge spec per level: the same settings give the same score table."""
    from evalstress.llm.fake_server import FakeServer
    from tests.cli.test_criteria_levels import _examples, scripted_judge

    cache = ["--cache-dir", str(tmp_path / "cache")]
    quick = CliRunner().invoke(app, ["quickstart", "--limit", "1", "--quiet", "--workers", "1",
                                     "--out", str(tmp_path / "quick"), *cache])
    assert quick.exit_code == 0, quick.output
    run = CliRunner().invoke(app, ["run", "--limit", "1", "--suite", "blindspot", "-e", "bleu",
                                   "-e", "chrf", "-e", "rouge", "--quiet", "--workers", "1",
                                   "--out", str(tmp_path / "run"), *cache])
    assert run.exit_code == 0, run.output
    pd.testing.assert_frame_equal(_sorted(pd.read_parquet(tmp_path / "quick" / "scores.parquet")),
                                  _sorted(pd.read_parquet(tmp_path / "run" / "scores.parquet")))

    data, originals = _examples(tmp_path)
    with FakeServer(responder=scripted_judge(originals)) as server:
        judge = (f"judge:model=fake,base_url={server.base_url},aspect=fluency coherence,"
                 "form=score-only,logprobs=False")
        levels = CliRunner().invoke(app, [
            "criteria-levels", str(data), "-j", judge, "--levels", "detailed,term",
            "--seeds", "1", "--limit", "2", "--out", str(tmp_path / "levels"), *cache])
        assert levels.exit_code == 0, levels.output
        by_run = CliRunner().invoke(app, [
            "run", str(data), "--suite", "criteria-rules", "--seeds", "1", "--limit", "2",
            "-e", f"{judge},level=detailed", "-e", f"{judge},level=term", "--quiet",
            "--out", str(tmp_path / "levels-run"), *cache])
        assert by_run.exit_code == 0, by_run.output
    from_levels = _sorted(pd.read_parquet(tmp_path / "levels" / "scores.parquet"))
    assert set(from_levels["evaluator"]) == {"judge(fake, level=detailed)",
                                             "judge(fake, level=term)"}
    assert from_levels["score"].notna().all() and len(from_levels) > 0
    pd.testing.assert_frame_equal(
        from_levels, _sorted(pd.read_parquet(tmp_path / "levels-run" / "scores.parquet")))


class Refusing:
    """An evaluator that fails the test if anything asks it for a score."""

    label = name = "refusing"
    aspects = ("x",)
    closed = False

    def score(self, requests: object) -> list[object]:  # pragma: no cover - must not run
        raise AssertionError("scored although the job could not run")

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(("change", "message"), [
    ({"backend": "spark"}, "--backend 'spark': choose local or ray"),
    ({"backend": "ray", "sequential": True}, "--sequential decides batch by batch"),
    ({"ray_address": "head:6379"}, "--ray-address head:6379: add --backend ray"),
    ({"analyses": ("blindspot", "blindspott")}, "unknown analysis blindspott"),
    ({"out": "file"}, "exists and is not a directory"),
])
def test_a_job_that_cannot_run_is_refused_before_any_scoring(
        tmp_path: Path, change: dict[str, object], message: str) -> None:
    suite = custom_suite(["truncation"], [0], ["blindspot"])
    suite.analyses = tuple(change.pop("analyses", ("blindspot",)))  # type: ignore[arg-type]
    taken = tmp_path / "taken"
    taken.write_text("a file, not a folder")
    out = taken if change.pop("out", None) else tmp_path / "run"
    job = StressJob(builtin_corpus()[:2], suite, [Refusing()], out=out,  # type: ignore[list-item]
                    no_cache=True, **change)  # type: ignore[arg-type]
    with pytest.raises(JobError, match=message):
        run_job(job)
    assert not (tmp_path / ".run.partial").exists() and not (tmp_path / ".taken.partial").exists()


def test_a_job_without_out_writes_nothing_and_closes_what_it_opened() -> None:
    rouge = create_evaluator("rouge")
    closed: list[str] = []
    rouge.close = lambda: closed.append("rouge")  # type: ignore[method-assign]
    done = run_job(StressJob(builtin_corpus()[:2], custom_suite(["truncation"], [0]), [rouge],
                             no_cache=True, workers=1))
    assert done.paths == {} and closed == ["rouge"]
    assert set(done.run.table["evaluator"]) == {"rouge"} and "blindspot" in done.analyses
    assert done.run.files.temporary  # removed with the result, never promoted anywhere


def test_a_generator_whose_every_call_fails_makes_the_job_untrusted(tmp_path: Path) -> None:
    """A dead generator (every call refused) skipped the whole LLM half and exited 0."""
    from evalstress.engine.generation import build_setup
    from evalstress.llm.fake_server import FakeServer, Reply

    suite = custom_suite(["truncation", "fact-negation"], [0], ["blindspot"])
    with FakeServer(default=Reply(status=401, error="invalid api key")) as server:
        setup = build_setup(f"model=m,base_url={server.base_url},max_attempts=1",
                            cache_dir=tmp_path / "cache")
        done = run_job(StressJob(builtin_corpus()[:2], suite, [create_evaluator("rouge")],
                                 cache_dir=tmp_path / "cache", generation=setup))
        asked = server.calls
    shares = {share.evaluator: share for share in done.untrusted}
    assert set(shares) == {"generator"}  # ROUGE scored every variant it was given
    assert shares["generator"].missing == shares["generator"].rows == asked == 2
    assert "client" in shares["generator"].describe()
    skipped = [s for s in done.run.plan.skips if s.perturbation == "fact-negation"]
    assert len(skipped) == 2 and all("request failed" in s.reason for s in skipped)


def test_a_report_whose_browser_data_is_read_aside_is_the_report_read_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pooled run of millions of score rows reads the report's variant browser data in a
    process of its own while the analyses run; the report is the same as a serial run's
    (here the threshold is lowered so that three examples take that path)."""
    import re

    started: list[str] = []
    real = job_module.SideTask

    class Counting(real):  # type: ignore[valid-type,misc]
        def __init__(self, function: object, *args: object) -> None:
            started.append(getattr(function, "__name__", ""))
            super().__init__(function, *args)

    monkeypatch.setattr(job_module, "SideTask", Counting)
    suite = custom_suite(["truncation", "token-drop"], [0, 1])

    def run(folder: str, workers: int) -> None:
        run_job(StressJob(builtin_corpus()[:3], suite, [create_evaluator("rouge")],
                          out=tmp_path / folder, no_cache=True, workers=workers))

    run("small", 2)
    assert started == []  # a few hundred score rows: a side process would cost more than it saves
    monkeypatch.setattr(job_module, "ASIDE_MIN_ROWS", 0)
    run("w1", 1)
    assert started == []  # a serial run keeps to one process
    run("w2", 2)
    assert started == ["browser_data"]
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*\+00:00")
    pooled, serial = (stamp.sub("T", (tmp_path / folder / "report.html").read_text("utf-8"))
                      for folder in ("w2", "w1"))
    assert "browser-root" in pooled and pooled == serial
