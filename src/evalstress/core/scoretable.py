"""The long score table on disk: Parquet written chunk by chunk, read back column-pruned.

A chunk writes one row group per evaluator; the run's final file (`write_merged`) holds one
(evaluator, aspect, perturbation) per row group, so reading one perturbation of one evaluator
skips every other row group by its statistics and an analysis reads the file about once, not
once per perturbation. A large run's rows are grouped in two passes (a spill file first, then
key by key), so a key keeps at most `MAX_GROUPS_PER_KEY` row groups and the footer, parsed on
every read, stays small: at 100,000 examples one pass would leave ~16,000 row groups.
Analyses ask for the columns they use and iterate over groups, so memory holds one group's
columns at a time, never variant texts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SCORE_SCHEMA = pa.schema([
    ("example_id", pa.string()), ("task", pa.string()), ("perturbation", pa.string()),
    ("severity", pa.string()), ("severity_rank", pa.int64()), ("seed", pa.int64()),
    ("noise_ratio", pa.float64()), ("evaluator", pa.string()), ("aspect", pa.string()),
    ("score", pa.float64()), ("higher_is_better", pa.bool_()), ("status", pa.string()),
    ("reason", pa.string()),
    # the label a judge answered (its commonest over samples), where the score is a weighted
    # expectation that hides it: a judge answering "1" to every text is caught by this column
    ("answer", pa.string()),
])


#: what the final score file groups its rows by: one value of each per row group
GROUP_KEY = ("evaluator", "aspect", "perturbation")
#: rows held before the grouped writer writes them out (~100 MB of Arrow columns)
GROUP_BUFFER_ROWS = 1_000_000


#: the most row groups the final score file gives one key (`write_merged`)
MAX_GROUPS_PER_KEY = 64
#: rows of a merged row group, unless a key has so many that the cap needs larger ones
MERGED_GROUP_ROWS = GROUP_BUFFER_ROWS

Key = tuple[Any, ...]


def write_grouped(tables: Iterable[pa.Table], writer: pq.ParquetWriter, *,
                  buffer_rows: int = GROUP_BUFFER_ROWS,
                  layout: list[tuple[Key, int]] | None = None) -> int:
    """Write score rows so that each row group holds one (evaluator, aspect, perturbation).

    Rows are held per key until `buffer_rows` are held, then every key's rows go out as a row
    group of their own: memory stays bounded whatever the run's size, and a key's row groups
    keep the rows in the order they came. Keys go out in order of first appearance. Returns
    the number of rows written; `layout`, when given, receives each row group's (key, rows)."""
    held: dict[Key, list[pa.Table]] = {}
    count = written = 0

    def flush() -> None:
        nonlocal count, written
        for key, pieces in held.items():
            rows = pa.concat_tables(pieces)
            writer.write_table(rows, row_group_size=max(1, rows.num_rows))
            if layout is not None:
                layout.append((key, rows.num_rows))
        written += count
        held.clear()
        count = 0

    for table in tables:
        for key, rows in _split_by_key(table):
            held.setdefault(key, []).append(rows)
        count += table.num_rows
        if count >= buffer_rows:
            flush()
    flush()
    return written


def write_merged(tables: Iterable[pa.Table], path: Path, *, rows: int, spill: Path,
                 options: dict[str, Any], spill_options: dict[str, Any],
                 buffer_rows: int | None = None, max_groups: int | None = None,
                 group_rows: int | None = None) -> int:
    """Write score rows (`rows` of them, known ahead) to `path` grouped by key, with at most
    `max_groups` row groups per key, each key's rows in the order they came.

    Rows that fit one buffer go out in one pass. More are first written grouped to `spill`
    (one row group per key per buffer), then copied key by key, re-cut into row groups of
    `group_rows` (or more, where a key's rows would otherwise need over `max_groups`); memory
    holds one buffer, then one output row group. The spill file is removed. Returns the rows
    written. Sizes left out are the module's (read when called)."""
    buffer_rows = buffer_rows or GROUP_BUFFER_ROWS
    max_groups = max_groups or MAX_GROUPS_PER_KEY
    group_rows = group_rows or MERGED_GROUP_ROWS
    if rows < buffer_rows:
        with pq.ParquetWriter(path, SCORE_SCHEMA, **options) as writer:
            written = write_grouped(tables, writer, buffer_rows=buffer_rows)
            if not written:
                writer.write_table(SCORE_SCHEMA.empty_table())
        return written
    layout: list[tuple[Key, int]] = []
    try:
        with pq.ParquetWriter(spill, SCORE_SCHEMA, **spill_options) as writer:
            written = write_grouped(tables, writer, buffer_rows=buffer_rows, layout=layout)
        groups: dict[Key, list[int]] = {}
        for index, (key, _) in enumerate(layout):
            groups.setdefault(key, []).append(index)
        source = pq.ParquetFile(spill)  # its footer is parsed once
        with pq.ParquetWriter(path, SCORE_SCHEMA, **options) as writer:
            for indexes in groups.values():
                total = sum(layout[i][1] for i in indexes)
                _copy_key(source, indexes, writer, max(group_rows, -(-total // max_groups)))
            if not written:
                writer.write_table(SCORE_SCHEMA.empty_table())
    finally:
        spill.unlink(missing_ok=True)
    return written


def _copy_key(source: pq.ParquetFile, indexes: Sequence[int], writer: pq.ParquetWriter,
              size: int) -> None:
    """One key's row groups of `source`, in order, as row groups of `size` rows (the last
    one smaller)."""
    held: list[pa.Table] = []
    count = 0
    for index in indexes:
        part = source.read_row_group(index, use_threads=False)  # core.freed: this thread
        held.append(part)
        count += part.num_rows
        while count >= size:
            joined = pa.concat_tables(held)
            writer.write_table(joined.slice(0, size), row_group_size=size)
            rest = joined.slice(size)
            held, count = ([rest] if rest.num_rows else []), rest.num_rows
    if count:
        writer.write_table(pa.concat_tables(held), row_group_size=count)


def _split_by_key(table: pa.Table) -> Iterator[tuple[Key, pa.Table]]:
    """The rows of each `GROUP_KEY` value, in order of first appearance, each keeping its
    rows' order: one stable sort on the key's code, then slices."""
    if not table.num_rows:
        return
    joined = pc.binary_join_element_wise(
        *(pc.cast(table.column(name), pa.string()) for name in GROUP_KEY), "\x1f",
        null_handling="replace", null_replacement="\x00")
    if isinstance(joined, pa.ChunkedArray):  # one dictionary for all the rows
        joined = joined.combine_chunks()
    codes = pc.dictionary_encode(joined).indices
    ordered = table.take(pc.sort_indices(codes))
    counts = pc.value_counts(codes).to_pylist()  # a code numbers a key's first appearance
    start = 0
    for entry in sorted(counts, key=lambda c: c["values"]):
        rows = ordered.slice(start, entry["counts"])
        start += entry["counts"]
        yield tuple(rows.column(name)[0].as_py() for name in GROUP_KEY), rows


class ScoreColumns:
    """Score rows built column by column (cheaper than a dict per row)."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in SCORE_SCHEMA.names}

    def __len__(self) -> int:
        return len(self.columns["example_id"])

    def append(self, **row: Any) -> None:
        for name, values in self.columns.items():
            values.append(row[name])

    def extend(self, other: ScoreColumns) -> None:
        for name, values in self.columns.items():
            values.extend(other.columns[name])

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_pydict(self.columns, schema=SCORE_SCHEMA)

    def to_frame(self) -> pd.DataFrame:
        return self.to_arrow().to_pandas()


class ScoreTable:
    """The score table of a run, from a Parquet file or (small runs, tests) a DataFrame."""

    def __init__(self, source: str | Path | pd.DataFrame):
        self._frame = source if isinstance(source, pd.DataFrame) else None
        self.path = None if isinstance(source, pd.DataFrame) else Path(source)

    def has(self, column: str) -> bool:
        """Whether the table holds `column` (score files of older runs lack `answer`)."""
        if self._frame is not None:
            return column in self._frame.columns
        assert self.path is not None
        return column in pq.ParquetFile(self.path).schema_arrow.names

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def __len__(self) -> int:
        if self._frame is not None:
            return len(self._frame)
        assert self.path is not None
        return int(pq.ParquetFile(self.path).metadata.num_rows)

    def read(self, columns: Sequence[str] | None = None, *,
             where: dict[str, Any] | None = None) -> pd.DataFrame:
        """The rows (optionally only those whose columns equal `where`'s values), some columns."""
        if self._frame is not None:
            frame = self._frame
            for name, value in (where or {}).items():
                frame = frame[frame[name] == value]
            return frame[list(columns)] if columns is not None else frame
        return self._read_arrow(columns, where or {}).to_pandas()

    def read_arrow(self, columns: Sequence[str] | None = None, *,
                   where: dict[str, Any] | None = None) -> pa.Table:
        """`read` as an Arrow table: for column-wise work over a large run."""
        if self._frame is not None:
            return pa.Table.from_pandas(self.read(columns, where=where), preserve_index=False)
        return self._read_arrow(columns, where or {})

    def _read_arrow(self, columns: Sequence[str] | None, where: dict[str, Any]) -> pa.Table:
        """Row group by row group: groups whose statistics exclude `where` are not read, the
        others are filtered before the next is read, so memory holds the result and one group."""
        parquet = pq.ParquetFile(self.path)
        names = list(columns) if columns is not None else parquet.schema_arrow.names
        wanted = list(dict.fromkeys([*names, *where]))
        positions = {parquet.schema_arrow.names[i]: i for i in range(len(parquet.schema_arrow))}
        pieces = []
        for group in range(parquet.num_row_groups):
            meta = parquet.metadata.row_group(group)
            if any(_excluded(meta.column(positions[name]).statistics, value)
                   for name, value in where.items()):
                continue
            part = parquet.read_row_group(group, columns=wanted, use_threads=False)
            if where:
                mask = None
                for name, value in where.items():
                    test = pc.equal(part.column(name), value)
                    mask = test if mask is None else pc.and_(mask, test)
                part = part.filter(mask)
            pieces.append(part.select(names))
        if not pieces:
            return parquet.schema_arrow.empty_table().select(names)
        return pa.concat_tables(pieces)

    def distinct(self, columns: Sequence[str]) -> list[tuple[Any, ...]]:
        """Distinct value combinations of some columns, in order of first appearance."""
        if self._frame is not None:
            frame = self._frame[list(columns)].drop_duplicates()
            return [tuple(row) for row in frame.itertuples(index=False, name=None)]
        assert self.path is not None
        seen: dict[tuple[Any, ...], None] = {}
        parquet = pq.ParquetFile(self.path)
        positions = {name: parquet.schema_arrow.get_field_index(name) for name in columns}
        for group in range(parquet.num_row_groups):
            meta = parquet.metadata.row_group(group)
            if not meta.num_rows:
                continue
            single = [_single_value(meta.column(positions[name]).statistics) for name in columns]
            if all(found for found, _ in single):  # a grouped file: the metadata tells
                seen.setdefault(tuple(value for _, value in single), None)
                continue
            part = parquet.read_row_group(group, columns=list(columns), use_threads=False)
            unique = part.group_by(list(columns), use_threads=False).aggregate([])
            for row in zip(*(unique.column(c).to_pylist() for c in columns), strict=True):
                seen.setdefault(tuple(row), None)
        return list(seen)

    def groups(self, by: Sequence[str], columns: Sequence[str] | None = None
               ) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
        """(key, rows) for each distinct value of `by`, reading one group at a time from disk."""
        if self._frame is not None:
            frame = self._frame if columns is None else self._frame[
                list(dict.fromkeys([*by, *columns]))]
            for key, group in frame.groupby(list(by), sort=False):
                yield tuple(key) if isinstance(key, tuple) else (key,), group
            return
        wanted = None if columns is None else list(dict.fromkeys([*by, *columns]))
        for key in self.distinct(by):
            yield key, self.read(wanted, where=dict(zip(by, key, strict=True)))


def _single_value(statistics: Any) -> tuple[bool, Any]:
    """(True, v) when row-group statistics prove every row holds the value v."""
    if (statistics is None or not statistics.has_min_max or statistics.null_count != 0
            or statistics.min != statistics.max):
        return False, None
    return True, statistics.min


def _excluded(statistics: Any, value: Any) -> bool:
    """Whether row-group statistics prove that no row equals `value`."""
    if statistics is None or not statistics.has_min_max:
        return False
    try:
        return bool(value < statistics.min or value > statistics.max)
    except TypeError:
        return False


def frame_or_groups(table: pd.DataFrame | ScoreTable, by: Sequence[str],
                    columns: Sequence[str] | None = None
                    ) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
    """Group a DataFrame or a ScoreTable the same way: what the analyses iterate over."""
    source = table if isinstance(table, ScoreTable) else ScoreTable(table)
    yield from source.groups(by, columns)


PerturbationGroups = Iterator[tuple[tuple[Any, ...], pd.DataFrame,
                                   Iterator[tuple[str, pd.DataFrame]]]]


def perturbation_groups(table: pd.DataFrame | ScoreTable, columns: Sequence[str], *,
                        sort: bool = False, original: str = "original") -> PerturbationGroups:
    """Per (evaluator, aspect): its original rows, and its rows of each perturbation in turn.

    What the paired analyses iterate over. From Parquet, each perturbation is read on its own
    (in a grouped file every other row group is skipped by its statistics), so memory holds
    one perturbation's rows of one evaluator aspect, about 1/20 of the group. Perturbations
    come in order of first appearance, or sorted with `sort`."""
    wanted = list(dict.fromkeys(["perturbation", *columns]))
    if not isinstance(table, ScoreTable) or table.path is None:
        frame = table if isinstance(table, pd.DataFrame) else table.read()
        for key, group in frame.groupby(["evaluator", "aspect"], sort=False):
            gold = group[group["perturbation"] == original]
            noised = group[group["perturbation"] != original]
            yield (tuple(key), gold,
                   ((str(p), g) for p, g in noised.groupby("perturbation", sort=sort)))
        return
    order: dict[tuple[Any, ...], list[str]] = {}
    for evaluator, aspect, perturbation in table.distinct(["evaluator", "aspect",
                                                            "perturbation"]):
        names = order.setdefault((evaluator, aspect), [])
        if perturbation != original:
            names.append(perturbation)
    for (evaluator, aspect), names in order.items():
        where = {"evaluator": evaluator, "aspect": aspect}
        gold = table.read(wanted, where={**where, "perturbation": original})
        yield ((evaluator, aspect), gold,
               ((p, table.read(wanted, where={**where, "perturbation": p}))
                for p in (sorted(names) if sort else names)))
