"""The streaming runner: chunks on disk, resume per chunk, pooled = serial, atomic outputs."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalstress.core.data import Example, builtin_corpus
from evalstress.core.records import SCORE_COLUMNS, SkipRecord
from evalstress.core.storage import StorageError
from evalstress.engine import chunkwork, pipeline
from evalstress.engine.generation import (
    GenerationOutcome,
    GenerationSetup,
    PerturbationCounts,
    llm_units,
)
from evalstress.engine.pipeline import chunk_positions
from evalstress.engine.planning import plan_dataset
from evalstress.engine.runner import run
from evalstress.engine.scoring import open_cache
from evalstress.engine.variantfile import read_records
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, create_evaluator
from evalstress.llm.generate import TextGenerator
from evalstress.perturb.base import Perturbation, PerturbContext, Severity, Variant
from evalstress.report import write_outputs
from evalstress.suites import PerturbationPlan, Suite, custom_suite

LEXICAL = ["bleu", "chrf", "rouge", "rep"]
# sentence-replacement borrows sentences of other examples, frequent-ngram the dataset's
# n-grams: dataset-wide resources
SUITE = ["truncation", "token-drop", "sentence-replacement", "frequent-ngram", "char-typo"]
KEY = ["evaluator", "aspect", "example_id", "perturbation", "severity", "seed"]


class CountingEvaluator(Evaluator):
    """Word count as a score; remembers every text and can crash after some batches."""

    name = "counting"
    batch_size = 16

    def __init__(self, crash_after: int | None = None):
        super().__init__()
        self.seen: list[str] = []
        self.crash_after = crash_after

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("words",)

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        if self.crash_after is not None and len(self.seen) >= self.crash_after:
            raise KeyboardInterrupt("simulated kill")
        self.seen.extend(r.text for r in requests)
        return [{"words": Score(float(len(r.text.split())))} for r in requests]


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    return builtin_corpus()[:10]


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(KEY).reset_index(drop=True)


def test_streamed_run_writes_chunks_and_matches_one_chunk_and_the_whole_plan(
        examples: list[Example]) -> None:
    suite = custom_suite(SUITE, seeds=2)
    evaluators = [create_evaluator(n) for n in LEXICAL]
    streamed = run(examples, suite, evaluators, chunk_size=3, workers=1)
    plan = plan_dataset(examples, custom_suite(SUITE, seeds=2))
    whole = run(examples, custom_suite(SUITE, seeds=2), [create_evaluator(n) for n in LEXICAL],
                chunk_size=len(examples), workers=1)
    a, b = _sorted(streamed.table), _sorted(whole.table)
    assert list(a.columns) == SCORE_COLUMNS
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert len(streamed.plan.variants) == len(plan.variants)
    assert [v.text for v in streamed.plan.variants] == [v.text for v in plan.variants]
    assert len(streamed.plan.skips) == len(plan.skips)
    # the run's file holds one row group per (evaluator, aspect, perturbation), so an analysis
    # reading one perturbation skips the others
    parquet = pq.ParquetFile(streamed.files.path("scores.parquet"))
    keys = a[["evaluator", "aspect", "perturbation"]].drop_duplicates()
    assert parquet.num_row_groups == len(keys) > 4 * len(LEXICAL)


@pytest.mark.slow
def test_pooled_run_gives_the_serial_score_table_and_files(
        examples: list[Example], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "POOL_MIN_WORK", 0)  # a pool even for this small run
    suite = custom_suite(SUITE, seeds=2)
    serial = run(examples, suite, [create_evaluator(n) for n in LEXICAL], chunk_size=3,
                 workers=1, cache=open_cache(tmp_path / "a.sqlite"))
    pooled = run(examples, custom_suite(SUITE, seeds=2), [create_evaluator(n) for n in LEXICAL],
                 chunk_size=3, workers=2, cache=open_cache(tmp_path / "b.sqlite"))
    pd.testing.assert_frame_equal(serial.table, pooled.table)
    for name in ("variants.parquet", "skips.jsonl", "examples.jsonl"):
        assert serial.files.path(name).read_bytes() == pooled.files.path(name).read_bytes()
    assert serial.stats["rouge"] == pooled.stats["rouge"]
    assert pooled.stats["rouge"].scored > 0  # the pool did score (separate caches)


class ProcessEvaluator(Evaluator):
    """Scores each text with the id of the process that scored it (rebuilt in helpers)."""

    name = "process-id"
    batch_size = 8
    cpu_bound = True

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("pid",)

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        return [{"pid": Score(float(os.getpid()))} for _ in requests]


@pytest.mark.slow
def test_with_two_workers_this_process_and_one_helper_share_the_chunks(
        examples: list[Example], monkeypatch: pytest.MonkeyPatch) -> None:
    """`--workers 2` is two processes doing chunks: the run's own and one helper, whichever is
    free taking the next; the helpers' copy of the run data and the chunk outcomes they hand
    back as files leave with the staging folder."""
    monkeypatch.setattr(pipeline, "POOL_MIN_WORK", 0)  # a pool even for this small run
    result = run(examples[:12], custom_suite(["truncation"], seeds=1), [ProcessEvaluator()],
                 chunk_size=2, workers=2)
    pids = set(result.table["score"].astype(int))
    assert os.getpid() in pids and len(pids) == 2
    assert not list(result.files.root.rglob("*.pickle"))


def test_a_run_gives_freed_memory_back_after_each_chunk_and_after_the_join(
        examples: list[Example], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk frees its parses, variants and rows, and the join frees the joined tables;
    the allocators kept those pages, and a 1,000-example run's peak rose with its size
    (bench/README.md, "Peak memory"). The run hands them back at each of those points, when
    what the chunk or the join held is no longer alive."""
    given: list[str] = []
    monkeypatch.setattr(pipeline, "give_back", lambda: given.append("back"))
    written = pipeline.Staging.write_chunk
    joined = pipeline.Staging.finalize

    def write_chunk(self: pipeline.Staging, index: int, **parts: Any) -> None:
        given.append(f"chunk {index}")
        written(self, index, **parts)

    def finalize(self: pipeline.Staging, *args: Any) -> None:
        given.append("join")
        joined(self, *args)

    monkeypatch.setattr(pipeline.Staging, "write_chunk", write_chunk)
    monkeypatch.setattr(pipeline.Staging, "finalize", finalize)
    run(examples[:6], custom_suite(["truncation"], seeds=1), [CountingEvaluator()],
        chunk_size=2)
    assert given == ["chunk 0", "back", "chunk 1", "back", "chunk 2", "back", "join", "back"]


def test_a_killed_run_resumes_at_its_first_unfinished_chunk(examples: list[Example],
                                                            tmp_path: Path) -> None:
    suite = custom_suite(["truncation"], seeds=1)
    staging = tmp_path / ".run.partial"
    per_chunk = 2 * (1 + 5)  # two examples: originals + 5 truncation severities each
    crashing = CountingEvaluator(crash_after=2 * per_chunk)  # dies in the third chunk
    with pytest.raises(KeyboardInterrupt):
        run(examples, suite, [crashing], chunk_size=2, workdir=staging)  # no score cache
    assert sorted(p.name for p in (staging / "chunks").glob("*.json")) == [
        "000000.json", "000001.json"]
    resumed = CountingEvaluator()
    result = run(examples, custom_suite(["truncation"], seeds=1), [resumed], chunk_size=2,
                 workdir=staging)
    done = {e.hypothesis for e in examples[:4]}
    assert not done & set(resumed.seen)  # finished chunks are neither planned nor scored again
    assert {e.hypothesis for e in examples[4:]} <= set(resumed.seen)
    fresh = run(examples, custom_suite(["truncation"], seeds=1), [CountingEvaluator()],
                chunk_size=2)
    pd.testing.assert_frame_equal(result.table, fresh.table)
    assert result.stats["counting"].requested == fresh.stats["counting"].requested


def test_a_changed_command_does_not_resume_a_stale_staging_folder(examples: list[Example],
                                                                  tmp_path: Path) -> None:
    staging = tmp_path / ".run.partial"
    run(examples[:4], custom_suite(["truncation"], seeds=1), [CountingEvaluator()],
        chunk_size=2, workdir=staging)
    other = CountingEvaluator()
    result = run(examples[:4], custom_suite(["token-drop"], seeds=1), [other], chunk_size=2,
                 workdir=staging)
    assert set(result.table["perturbation"]) == {"original", "token-drop"}
    assert other.seen  # scored afresh, nothing reused from the truncation run


def test_outputs_replace_the_previous_run_only_when_complete(examples: list[Example],
                                                             tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    out = tmp_path / "run"
    first = run(examples[:3], custom_suite(["truncation"], seeds=1), [CountingEvaluator()])
    write_outputs(first, {}, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"scores.parquet", "variants.parquet", "skips.jsonl", "examples.jsonl", "results.json",
            "report.html"} <= set(before)
    second = run(examples[:5], custom_suite(["token-drop"], seeds=1), [CountingEvaluator()])

    def disk_full(*args: Any, **kwargs: Any) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("evalstress.report.html.write_html", disk_full)
    with pytest.raises(StorageError, match=r"report\.html: the disk is full"):
        write_outputs(second, {}, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # untouched
    monkeypatch.undo()
    write_outputs(second, {}, out)
    examples_lines = (out / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in examples_lines] == [e.id for e in examples[:5]]
    assert set(json.loads(examples_lines[0])) == {"id", "task", "source", "hypothesis",
                                                  "references"}
    variant = next(read_records(out / "variants.parquet"))
    assert {"id", "example_id", "perturbation", "severity", "seed", "noise_ratio", "text",
            "method", "provenance"} <= set(variant)
    assert variant["text"] in {v.text for v in second.plan.variants}
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["counts"]["examples"] == 5
    assert not list(tmp_path.glob(".run.*"))  # no staging or old folder left behind


def test_cli_refuses_an_out_that_is_a_file_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalstress.cli import app

    target = tmp_path / "taken"
    target.write_text("not a folder")
    result = CliRunner().invoke(app, ["quickstart", "--limit", "2", "--out", str(target),
                                      "--quiet", "--workers", "1"])
    assert result.exit_code == 2
    assert "not a directory" in result.output
    assert not (tmp_path / ".taken.partial").exists()


class _FakeLLMEdit(Perturbation):
    """Stands in for an LLM-written perturbation: the runner must route it to `generate`."""

    name = "fake-llm"
    method = "llm"
    grid: ClassVar[tuple[Severity, ...]] = ("minor",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str:
        raise AssertionError("LLM units are generated by the generation stage")


def test_llm_units_go_to_the_generation_stage_chunk_by_chunk(examples: list[Example],
                                                             tmp_path: Path) -> None:
    suite = Suite("mixed", [PerturbationPlan(_FakeLLMEdit(), ("minor",)),
                            custom_suite(["truncation"]).perturbations[0]], seeds=(0, 1))
    calls: list[list[str]] = []

    class ChunkedStage(GenerationSetup):
        """The generation stage with its model call replaced: seed 0 is accepted, seed 1 refused."""

        def run(self, chunk: Sequence[Example], suite: Suite, parser: Any,
                progress: Any = None) -> GenerationOutcome:
            calls.append([e.id for e in chunk])
            units = llm_units(chunk, suite)
            outcome = GenerationOutcome()
            counts = outcome.counts.setdefault("fake-llm", PerturbationCounts())
            for unit in units:
                counts.planned += 1
                if unit.seed == 0:
                    counts.accepted += 1
                    outcome.variants.append(Variant(unit.example.id, unit.name, unit.severity,
                                                    unit.seed, unit.example.hypothesis.upper(),
                                                    0.5))
                else:
                    counts.skipped += 1
                    counts.rejections["refusal"] += 1
                    outcome.skips.append(SkipRecord(unit.example.id, unit.name, unit.severity,
                                                    unit.seed, "refusal"))
            return outcome

    with pytest.raises(ValueError, match="no generator"):
        run(examples[:4], suite, [CountingEvaluator()])
    stage = ChunkedStage(TextGenerator("m", "http://generator.invalid/v1", cache=False))
    result = run(examples[:5], suite, [CountingEvaluator()], chunk_size=2, generation=stage)
    assert calls == [[e.id for e in examples[:5][i:i + 2]] for i in (0, 2, 4)]
    table = result.table
    llm_rows = table[table["perturbation"] == "fake-llm"]
    assert len(llm_rows) == 5 and set(llm_rows["seed"]) == {0}
    write_outputs(result, {}, tmp_path / "out")
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    counts = results["generation"]["perturbations"]["fake-llm"]
    assert counts["planned"] == 10 and counts["accepted"] == 5
    assert counts["acceptance_rate"] == 0.5 and counts["rejections"] == {"refusal": 5}
    skip_lines = (tmp_path / "out" / "skips.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum(json.loads(line)["reason"] == "refusal" for line in skip_lines) == 5


def test_analyses_read_the_parquet_table_like_the_frame(examples: list[Example]) -> None:
    from evalstress.analyses.blindspot import blindspot
    from evalstress.analyses.discernment import discernment_analysis

    result = run(examples, custom_suite(["truncation", "token-drop"], seeds=2),
                 [create_evaluator("rouge")], chunk_size=4)
    assert result.scores.path is not None  # on disk
    assert blindspot(result.scores).to_dict() == blindspot(result.table).to_dict()
    assert (discernment_analysis(result.scores).to_dict()
            == discernment_analysis(result.table).to_dict())


def test_skips_are_recorded_with_reasons() -> None:
    alone = Example("alone", "summarization", "src", "One sentence. And a second one.", ("ref",))
    result = run([alone], custom_suite(["sentence-replacement"], seeds=1), [CountingEvaluator()])
    skips = list(result.plan.skips)
    assert len(skips) == len(result.plan.suite.perturbations[0].grid)
    assert all("no other 'summarization' example" in s.reason for s in skips)
    assert result.summary["skip_reasons"][0]["count"] == len(skips)


def test_cli_checks_backend_and_workers_before_loading_anything(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalstress.cli import app

    runner = CliRunner()
    missing = str(tmp_path / "absent.jsonl")  # never read: the options fail first
    bad_backend = runner.invoke(app, ["run", missing, "--backend", "spark"])
    assert bad_backend.exit_code == 2
    assert "--backend: expected one of local, ray" in bad_backend.output
    bad_workers = runner.invoke(app, ["run", missing, "--workers", "-1"])
    assert bad_workers.exit_code == 2
    assert "--workers: expected a whole number >= 0 (got -1)" in bad_workers.output
    both = runner.invoke(app, ["run", missing, "--backend", "ray", "--sequential"])
    assert both.exit_code == 2 and "--backend local" in both.output


@pytest.mark.parametrize(("count", "size"), [(1000, 64), (300, 38), (257, 64), (256, 64),
                                             (13, 3), (5, 1), (0, 8)])
def test_chunks_cover_every_example_once_in_order(count: int, size: int) -> None:
    chunks = chunk_positions(count, size)
    assert [i for chunk in chunks for i in chunk] == list(range(count))
    assert all(0 < len(chunk) <= size for chunk in chunks)


def test_a_long_run_ends_in_chunks_that_halve_so_the_workers_finish_together() -> None:
    """1,000 examples in chunks of 64: the run ends in chunks of 32, 32, 16, 16, ... 1, 1
    (126 examples; a pool's last chunk runs alone while the other workers finish theirs, so
    the last few are a handful of examples whatever one costs)."""
    chunks = chunk_positions(1000, 64)
    tail = [32, 32, 16, 16, 8, 8, 4, 4, 2, 2, 1, 1]
    assert [len(c) for c in chunks] == [64] * 13 + [1000 - 126 - 13 * 64] + tail
    # four chunks or fewer are cut evenly, as before
    assert [len(c) for c in chunk_positions(256, 64)] == [64] * 4
    # the taper never holds a piece as large as a chunk, nor more than two chunks' examples
    assert [len(c) for c in chunk_positions(300, 38)][-11:] == [10, 16, 16, 8, 8, 4, 4, 2, 2,
                                                                 1, 1]


def test_a_run_too_small_to_repay_workers_starts_none(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """--workers 2 on a few examples of one perturbation scores them in this process: starting
    a worker costs seconds, more than such a run's whole work."""

    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker pool was started")

    monkeypatch.setattr(chunkwork, "ProcessPoolExecutor", no_pool)
    examples = builtin_corpus()[:12]
    suite = custom_suite(["truncation"], seeds=1)
    characters = sum(len(e.hypothesis) for e in examples)
    assert pipeline.pooled_work(suite, examples, 1) == characters * 5 < pipeline.POOL_MIN_WORK
    assert pipeline.pooled_work(suite, examples, 3) == characters * 5 * 3
    result = run(examples, suite, [create_evaluator("bleu")], workers=2, chunk_size=4)
    assert len(result.table) == 12 * 6  # the originals and their five truncations


def test_the_pool_size_follows_the_work_and_the_chunks() -> None:
    enough = pipeline.POOL_MIN_WORK
    assert pipeline.pool_size(2, 10, enough - 1) == 1
    assert pipeline.pool_size(2, 10, enough) == 2
    assert pipeline.pool_size(4, 3, enough) == 3  # never more workers than chunks
    assert pipeline.pool_size(4, 1, enough * 10) == 1


def test_the_warm_up_builds_the_sentence_pool_after_the_other_resources(
        examples: list[Example], monkeypatch: pytest.MonkeyPatch) -> None:
    """The sentence pool's parse is the one a pooled run shares with its helpers: the warm-up
    takes sentence-replacement last for each task, whatever the suite's order, so that the
    helpers have started by then."""
    from evalstress.core.text import TextParser

    applied: list[tuple[str, str]] = []
    original = Perturbation.apply

    def recording(self: Perturbation, ctx: PerturbContext, severity: Severity,
                  seed: int) -> Any:
        applied.append((ctx.example.task, self.name))
        return original(self, ctx, severity, seed)

    monkeypatch.setattr(Perturbation, "apply", recording)
    suite = custom_suite(["sentence-replacement", "token-drop", "local-swap"], seeds=1)
    resources: dict[str, Any] = {}
    pipeline._warm_resources(suite, examples, examples, TextParser(forgetful=True), resources)
    tasks = list(dict.fromkeys(e.task for e in examples))
    assert applied == [(task, name) for task in tasks
                       for name in ("token-drop", "local-swap", "sentence-replacement")]
    assert {f"sentence-pool:{task}" for task in tasks} <= set(resources)


def test_a_verdict_design_has_every_original_scored_before_its_first_look(
        tmp_path: Path) -> None:
    from evalstress.analyses.sequential_verdicts import VerdictDesign

    examples = builtin_corpus()[:30]
    design = VerdictDesign(len(examples), looks=3, min_n=10)
    texts_at_first_look: list[int] = []
    observe = design.observe

    def first_look(rows: Any) -> None:
        if not texts_at_first_look:
            texts_at_first_look.append(design.cost()["texts"])
        observe(rows)

    design.observe = first_look  # type: ignore[method-assign]
    judge = CountingEvaluator()
    result = run(examples, custom_suite(["truncation"]), [judge],
                 chunk_size=design.chunk_size, policy=design,
                 cache=open_cache(tmp_path / "scores.sqlite"))
    # all 30 originals were known (their texts counted) before the first look decided
    assert texts_at_first_look == [30]
    # a heavy cut of a word count settles at the first look, so the later chunks plan no
    # variant of it; their originals are still in the table (from the cache), and no text
    # went to the evaluator twice
    assert ("truncation", "0.5") in (design.stopped() or set())
    originals = result.scores.read(["example_id"], where={"perturbation": "original"})
    assert sorted(originals["example_id"]) == sorted(e.id for e in examples)
    assert len(judge.seen) == len(set(judge.seen))
    assert result.stats[judge.label].scored == len(judge.seen)
