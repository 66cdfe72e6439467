"""The score file on disk: grouped row groups, reads that skip by statistics, distinct keys."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalstress.core.scoretable import (
    SCORE_SCHEMA,
    ScoreTable,
    perturbation_groups,
    write_grouped,
    write_merged,
)


def _rows(chunk: int, evaluators: tuple[str, ...], perturbations: tuple[str, ...],
          examples: int = 3) -> list[pa.Table]:
    """One table per evaluator, as a chunk part holds them: rows of every perturbation mixed."""
    tables = []
    for evaluator in evaluators:
        rows = []
        for example in range(examples):
            for perturbation in ("original", *perturbations):
                rows.append({
                    "example_id": f"c{chunk}-e{example}", "task": "summarization",
                    "perturbation": perturbation, "severity": None, "severity_rank": 0,
                    "seed": 0, "noise_ratio": 0.0, "evaluator": evaluator,
                    "aspect": None if evaluator == "judge" else "overall",
                    "score": chunk * 100 + example + len(perturbation) / 100,
                    "higher_is_better": True, "status": "ok", "reason": None})
        tables.append(pa.Table.from_pylist(rows, schema=SCORE_SCHEMA))
    return tables


def _write(path: Path, tables: list[pa.Table], buffer_rows: int = 1_000_000) -> int:
    with pq.ParquetWriter(path, SCORE_SCHEMA) as writer:
        return write_grouped(tables, writer, buffer_rows=buffer_rows)


def _keys_per_group(path: Path) -> list[set[tuple[object, ...]]]:
    parquet = pq.ParquetFile(path)
    keys = []
    for group in range(parquet.num_row_groups):
        part = parquet.read_row_group(group).to_pandas()
        keys.append(set(part[["evaluator", "aspect", "perturbation"]]
                        .itertuples(index=False, name=None)))
    return keys


def test_every_row_group_holds_one_evaluator_aspect_and_perturbation(tmp_path: Path) -> None:
    tables = [t for chunk in range(4) for t in _rows(chunk, ("bleu", "judge"), ("typo", "drop"))]
    path = tmp_path / "scores.parquet"
    assert _write(path, tables) == sum(t.num_rows for t in tables) == 4 * 2 * 3 * 3
    groups = _keys_per_group(path)
    assert all(len(keys) == 1 for keys in groups)
    # 2 evaluators x 3 perturbations (original included), all held in one buffer
    assert len(groups) == 6
    # nothing lost or changed, the judge's missing aspect included
    written = pq.read_table(path).to_pandas()
    given = pa.concat_tables(tables).to_pandas()
    order = ["example_id", "evaluator", "perturbation"]
    pd.testing.assert_frame_equal(written.sort_values(order).reset_index(drop=True),
                                  given.sort_values(order).reset_index(drop=True))
    assert written["aspect"].isna().sum() == 4 * 3 * 3


def test_rows_of_one_key_keep_the_order_they_came_in(tmp_path: Path) -> None:
    tables = [t for chunk in range(5) for t in _rows(chunk, ("bleu",), ("typo",))]
    path = tmp_path / "scores.parquet"
    _write(path, tables)
    typo = ScoreTable(path).read(["example_id"], where={"perturbation": "typo"})
    assert list(typo["example_id"]) == [f"c{c}-e{e}" for c in range(5) for e in range(3)]


def test_a_small_buffer_bounds_memory_with_more_row_groups_of_one_key(tmp_path: Path) -> None:
    tables = [t for chunk in range(6) for t in _rows(chunk, ("bleu",), ("typo", "drop"))]
    path = tmp_path / "scores.parquet"
    # each chunk's table holds 9 rows: a buffer of 18 rows goes out after every second chunk
    _write(path, tables, buffer_rows=18)
    groups = _keys_per_group(path)
    assert all(len(keys) == 1 for keys in groups)
    assert len(groups) == 3 * 3  # three flushes of three keys
    assert max(pq.ParquetFile(path).metadata.row_group(g).num_rows
               for g in range(len(groups))) == 6


def test_reads_and_distinct_agree_with_the_same_rows_in_a_dataframe(tmp_path: Path) -> None:
    tables = [t for chunk in range(3) for t in _rows(chunk, ("bleu", "rouge"), ("typo", "drop"))]
    path = tmp_path / "scores.parquet"
    _write(path, tables, buffer_rows=20)
    on_disk, in_memory = ScoreTable(path), ScoreTable(pa.concat_tables(tables).to_pandas())
    columns = ["evaluator", "aspect", "perturbation"]
    assert on_disk.distinct(columns) == in_memory.distinct(columns) == [
        (e, "overall", p) for e in ("bleu", "rouge") for p in ("original", "typo", "drop")]
    wanted = ["example_id", "score"]
    for (key, gold, noised), (key2, gold2, noised2) in zip(
            perturbation_groups(on_disk, wanted), perturbation_groups(in_memory, wanted),
            strict=True):
        assert key == key2
        assert list(gold["score"]) == list(gold2["score"])
        assert [(p, list(g["score"])) for p, g in noised] == \
            [(p, list(g["score"])) for p, g in noised2]
    # the Arrow read gives the rows the pandas read gives, from a file or a frame
    where = {"evaluator": "rouge", "perturbation": "drop"}
    expected = on_disk.read(wanted, where=where)
    assert len(expected) == 9  # 3 chunks x 3 examples
    for table in (on_disk, in_memory):
        pd.testing.assert_frame_equal(
            table.read_arrow(wanted, where=where).to_pandas(), expected.reset_index(drop=True))


def test_a_file_of_mixed_row_groups_is_still_read_whole(tmp_path: Path) -> None:
    """Score files written before grouping hold every perturbation in each row group."""
    tables = _rows(0, ("bleu",), ("typo", "drop"))
    path = tmp_path / "scores.parquet"
    with pq.ParquetWriter(path, SCORE_SCHEMA) as writer:
        for table in tables:
            writer.write_table(table)
    table = ScoreTable(path)
    assert table.distinct(["perturbation"]) == [("original",), ("typo",), ("drop",)]
    assert len(table.read(["score"], where={"perturbation": "drop"})) == 3


@pytest.mark.parametrize("buffer_rows", [1, 1_000_000])
def test_no_rows_write_nothing(tmp_path: Path, buffer_rows: int) -> None:
    path = tmp_path / "scores.parquet"
    assert _write(path, [SCORE_SCHEMA.empty_table()], buffer_rows=buffer_rows) == 0
    assert pq.ParquetFile(path).metadata.num_rows == 0


def _groups_per_key(path: Path) -> dict[tuple[object, ...], int]:
    counts: dict[tuple[object, ...], int] = {}
    for keys in _keys_per_group(path):
        [key] = keys
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_a_large_table_is_merged_to_at_most_the_cap_of_row_groups_per_key(tmp_path: Path
                                                                        ) -> None:
    # 40 chunks of 2 evaluators x 3 examples x 3 keys each: 720 rows, 6 keys of 120 rows
    tables = [t for chunk in range(40) for t in _rows(chunk, ("bleu", "judge"), ("typo", "drop"))]
    rows = sum(t.num_rows for t in tables)
    one_pass = tmp_path / "one-pass.parquet"
    _write(one_pass, tables, buffer_rows=18)  # a flush every chunk: 40 row groups per key
    assert set(_groups_per_key(one_pass).values()) == {40}
    merged = tmp_path / "merged.parquet"
    written = write_merged(tables, merged, rows=rows, spill=tmp_path / "spill.parquet",
                           options={}, spill_options={}, buffer_rows=18, max_groups=8,
                           group_rows=5)
    assert written == rows
    assert not (tmp_path / "spill.parquet").exists()
    # 120 rows a key, at most 8 groups: groups of ceil(120 / 8) = 15 rows, not 5
    assert set(_groups_per_key(merged).values()) == {8}
    parquet = pq.ParquetFile(merged)
    assert {parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)} == {15}
    # the same rows as the one-pass file, each key's rows in the order they came
    order = ["evaluator", "aspect", "perturbation"]
    before, after = pq.read_table(one_pass).to_pandas(), pq.read_table(merged).to_pandas()
    pd.testing.assert_frame_equal(
        after.sort_values(order, kind="stable").reset_index(drop=True),
        before.sort_values(order, kind="stable").reset_index(drop=True))
    typo = ScoreTable(merged).read(["example_id"], where={"perturbation": "typo",
                                                          "evaluator": "bleu"})
    assert list(typo["example_id"]) == [f"c{c}-e{e}" for c in range(40) for e in range(3)]


def test_small_keys_merge_into_one_row_group_and_a_table_under_a_buffer_skips_the_spill(
        tmp_path: Path) -> None:
    tables = [t for chunk in range(10) for t in _rows(chunk, ("bleu",), ("typo",))]
    rows = sum(t.num_rows for t in tables)  # 10 chunks x 3 examples x 2 keys = 60
    for buffer_rows in (6, 61):  # through a spill file, and in one pass
        merged = tmp_path / f"merged-{buffer_rows}.parquet"
        spill = tmp_path / "spill.parquet"
        write_merged(tables, merged, rows=rows, spill=spill, options={}, spill_options={},
                     buffer_rows=buffer_rows, max_groups=64, group_rows=1000)
        assert _groups_per_key(merged) == {("bleu", "overall", "original"): 1,
                                           ("bleu", "overall", "typo"): 1}
        assert not spill.exists()
    empty = tmp_path / "empty.parquet"
    for given in (0, 10):  # no rows, whether or not the count asked for a spill
        assert write_merged([SCORE_SCHEMA.empty_table()], empty, rows=given,
                            spill=tmp_path / "spill.parquet", options={}, spill_options={},
                            buffer_rows=5) == 0
        assert pq.ParquetFile(empty).metadata.num_rows == 0
