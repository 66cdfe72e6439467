"""The run directory's score file: chunk parts merged key by key into a bounded number of row
groups per key, with the same rows, and a run whose file went through the merge still writes a
results.json that follows its schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core import scoretable
from evalstress.core.scoretable import GROUP_KEY, SCORE_SCHEMA, ScoreColumns
from evalstress.engine.rundir import Staging
from evalstress.report.schema import schema_problems

PERTURBATIONS = ("typo", "drop", "swap")
EVALUATORS = ("bleu", "chrf")


def _chunk(index: int, examples: int) -> list[pa.Table]:
    """One fake chunk as the runner hands it to the writer: a table per evaluator holding its
    originals, then its variants (two severities of each perturbation)."""
    tables = []
    for evaluator in EVALUATORS:
        out = ScoreColumns()
        for perturbation, severity in [("original", ""), *((p, s) for p in PERTURBATIONS
                                                           for s in ("1", "2"))]:
            for example in range(examples):
                out.append(example_id=f"c{index}-e{example}", task="open-ended",
                           perturbation=perturbation, severity=severity,
                           severity_rank=int(severity or -1), seed=0, noise_ratio=0.1,
                           evaluator=evaluator, aspect="overall",
                           score=index + example / 10, higher_is_better=True, status="ok",
                           reason="", answer=None)
        tables.append(out.to_arrow())
    return tables


def _groups_per_key(path: Path) -> dict[tuple[str, ...], int]:
    parquet = pq.ParquetFile(path)
    counts: dict[tuple[str, ...], int] = {}
    for group in range(parquet.num_row_groups):
        keys = parquet.read_row_group(group, columns=list(GROUP_KEY)).to_pylist()
        assert len({tuple(k.values()) for k in keys}) == 1  # one key a row group
        key = tuple(keys[0].values())
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_finalize_keeps_at_most_the_cap_of_row_groups_per_key_with_the_same_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 150 chunks of 4 examples: 150 x 2 evaluators x 7 keys x 4 = 8,400 rows, 14 keys of
    # 600 (original) or 1,200 rows; a buffer of 100 rows flushes about every second chunk
    monkeypatch.setattr(scoretable, "GROUP_BUFFER_ROWS", 100)
    monkeypatch.setattr(scoretable, "MAX_GROUPS_PER_KEY", 16)
    monkeypatch.setattr(scoretable, "MERGED_GROUP_ROWS", 10)
    staging = Staging.open(tmp_path / "staging", "fake")
    chunks = [_chunk(i, 4) for i in range(150)]
    for index, tables in enumerate(chunks):
        staging.write_chunk(index, scores=tables, variants=None, skips="", examples="",
                            summary={"index": index})
    # what one pass would have left: a row group per key per flush
    one_pass = tmp_path / "one-pass.parquet"
    with pq.ParquetWriter(one_pass, SCORE_SCHEMA) as writer:
        scoretable.write_grouped((t for c in chunks for t in c), writer, buffer_rows=100)
    assert min(_groups_per_key(one_pass).values()) > 16
    staging.finalize(range(150), {})
    path = staging.files.path("scores.parquet")
    counts = _groups_per_key(path)
    assert len(counts) == 2 * (1 + len(PERTURBATIONS))
    # original: 600 rows in groups of ceil(600 / 16) = 38; the others 1,200 in groups of 75
    assert counts == {key: 16 for key in counts}
    assert not staging.files.path("scores.spill.parquet").exists()
    written = pq.read_table(path).to_pandas()
    given = pa.concat_tables([t for c in chunks for t in c]).to_pandas()
    order = ["evaluator", "aspect", "perturbation", "severity", "example_id"]
    pd.testing.assert_frame_equal(written.sort_values(order).reset_index(drop=True),
                                  given.sort_values(order).reset_index(drop=True))
    # a key's rows keep the chunks' order
    typo = scoretable.ScoreTable(path).read(
        ["example_id", "severity"], where={"evaluator": "chrf", "perturbation": "typo"})
    assert list(typo["example_id"]) == [f"c{c}-e{e}" for c in range(150) for s in "12"
                                        for e in range(4)]


def test_finalize_joins_variants_and_scores_one_after_the_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two joins never overlap: side by side they held both joins' buffers at once, the
    peak memory of a 1,000-example run."""
    import threading

    from evalstress.engine import rundir, variantfile

    spans: list[tuple[str, str, str]] = []
    real_join, real_merge = variantfile.join_parts, rundir.write_merged

    def traced(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            spans.append(("start", name, threading.current_thread().name))
            result = real(*args, **kwargs)
            spans.append(("end", name, threading.current_thread().name))
            return result
        return call

    monkeypatch.setattr(variantfile, "join_parts", traced("variants", real_join))
    monkeypatch.setattr(rundir, "write_merged", traced("scores", real_merge))
    staging = Staging.open(tmp_path / "staging", "fake")
    for index in range(3):
        staging.write_chunk(index, scores=_chunk(index, 2), variants=None, skips="",
                            examples="", summary={"index": index})
    staging.finalize(range(3), {})
    here = threading.current_thread().name
    assert spans == [("start", "variants", here), ("end", "variants", here),
                     ("start", "scores", here), ("end", "scores", here)]
    assert pq.read_table(staging.files.path("scores.parquet")).num_rows == 3 * 2 * 7 * 2


def _corpus() -> Path:
    with resources.as_file(resources.files("evalstress") / "corpus" / "sample.jsonl") as path:
        return Path(path)


def test_a_run_merged_key_by_key_gives_the_same_table_and_a_valid_results_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()

    def run(name: str) -> Path:
        out = tmp_path / name
        result = runner.invoke(app, [
            "run", str(_corpus()), "--limit", "6", "-p", "truncation", "-p", "char-typo",
            "--seeds", "2", "-e", "bleu", "-e", "chrf", "--chunk-size", "2", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache"), "--quiet"])
        assert result.exit_code == 0, result.output
        return out

    plain = run("plain")
    monkeypatch.setattr(scoretable, "GROUP_BUFFER_ROWS", 20)
    monkeypatch.setattr(scoretable, "MAX_GROUPS_PER_KEY", 3)
    monkeypatch.setattr(scoretable, "MERGED_GROUP_ROWS", 2)
    merged = run("merged")
    assert max(_groups_per_key(plain / "scores.parquet").values()) == 1
    assert max(_groups_per_key(merged / "scores.parquet").values()) == 3
    order = ["evaluator", "aspect", "perturbation", "severity", "seed", "example_id"]
    a, b = (pd.read_parquet(p / "scores.parquet").sort_values(order).reset_index(drop=True)
            for p in (plain, merged))
    pd.testing.assert_frame_equal(a, b)
    results = json.loads((merged / "results.json").read_text(encoding="utf-8"))
    assert schema_problems(results) == []
