"""The variants of a run on disk: `variants.parquet` (zstd), read back batch by batch.

Every variant is its original plus a small edit, so consecutive texts in a column share most of
their bytes and zstd stores them in about 2% of their size: smaller than an edit script per
variant in JSONL (whose provenance fields alone cost ~150 bytes a line) and about as small as
an edit script inside Parquet, while reading back needs no original and no patching
(`bench/bench_variants.py` measures the formats side by side). Word diffs are not stored; the
report computes them from the text and the example when it shows one.

A variant's id is not stored either: it is `example_id|perturbation|severity|seed`. Severity is
stored as text, as in scores.parquet (so the two files join on example_id, perturbation,
severity and seed), and read back as a number when it reads as one. Run directories of earlier
versions hold `variants.jsonl` (each line with its full text); they are read as they are.

An LLM-written variant also says how far it can be trusted (`perturb.precision`): `verification`
(checks, verifier or unverified) and `check_precision` (its attack's measured precision of
"accept", null when unmeasured), both also in its provenance. Files written before these two
columns (`OPTIONAL`) read them as null.
"""

from __future__ import annotations

import bisect
import contextlib
import csv
import itertools
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalstress.core.data import DataError, read_jsonl
from evalstress.core.freed import give_back
from evalstress.core.userfile import parse_json
from evalstress.perturb.base import Severity, Variant

FILE = "variants.parquet"
OLD_FILE = "variants.jsonl"  # run directories written before variants.parquet

VARIANT_SCHEMA = pa.schema([
    ("example_id", pa.string()), ("perturbation", pa.string()), ("severity", pa.string()),
    ("seed", pa.int64()), ("noise_ratio", pa.float64()), ("text", pa.string()),
    ("method", pa.string()),  # null for rule-made variants; llm, model or imported otherwise
    ("provenance", pa.string()),  # JSON object: how an LLM-written or imported text was made
    ("verification", pa.string()),  # LLM-written: checks, verifier or unverified; else null
    ("check_precision", pa.float64()),  # LLM-written: its attack's measured precision, or null
])
#: columns that variants files of earlier versions lack (read as null)
OPTIONAL = ("verification", "check_precision")
#: The run's files: zstd 9 costs ~10 us a variant and is a third smaller than zstd 3.
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd", "compression_level": 9,
    "use_dictionary": ["example_id", "perturbation", "severity", "method", "provenance",
                       "verification"]}
#: A chunk's part file is read once more and rewritten by `finalize`: fast beats small there.
PART_OPTIONS: dict[str, Any] = {**PARQUET_OPTIONS, "compression_level": 1}
#: Parts are joined into row groups of about this size. A row group is held whole while it is
#: joined and while the report reads variants from it, so its size is the run's memory step:
#: 10,000 WikiText variants are ~8 MB of Arrow and compress within 1% of 50,000.
ROWS_PER_GROUP = 10_000
EXPORT_FORMATS = (".jsonl", ".csv", ".parquet")
#: what a reader gets of each variant (export, `StressResult.variants()`)
COLUMNS = ("id", "example_id", "perturbation", "severity", "seed", "noise_ratio", "method",
           "verification", "check_precision", "provenance", "text")


def severity_value(text: Any) -> Severity:
    """A severity read from text: a whole number, else a number, else the text itself."""
    if isinstance(text, bool):
        return str(text)
    if isinstance(text, int | float):
        return text
    text = str(text).strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def variant_table(variants: Iterable[Variant]) -> pa.Table:
    """Variants as rows of VARIANT_SCHEMA."""
    columns: dict[str, list[Any]] = {name: [] for name in VARIANT_SCHEMA.names}
    for v in variants:
        provenance = dict(v.provenance) if v.provenance else None
        for name, value in (
                ("example_id", v.example_id), ("perturbation", v.perturbation),
                ("severity", str(v.severity)), ("seed", v.seed), ("noise_ratio", v.noise_ratio),
                ("text", v.text),
                ("method", None if provenance is None else provenance.get("method")),
                ("verification", None if provenance is None
                 else provenance.get("verification")),
                ("check_precision", None if provenance is None
                 else provenance.get("check_precision")),
                ("provenance", None if provenance is None else json.dumps(
                    provenance, ensure_ascii=False, sort_keys=True, default=str))):
            columns[name].append(value)
    return pa.Table.from_pydict(columns, schema=VARIANT_SCHEMA)


def write_part(path: Path, table: pa.Table) -> None:
    """One chunk's variants (fast compression: `join_parts` rewrites them)."""
    pq.write_table(table, path, **PART_OPTIONS)


def join_parts(parts: Sequence[Path], out: Path) -> None:
    """The parts, in order, as one file whose row groups hold ~ROWS_PER_GROUP rows (many small
    chunks would otherwise leave small groups that compress worse)."""
    with pq.ParquetWriter(out, VARIANT_SCHEMA, **PARQUET_OPTIONS) as writer:
        pending: list[pa.Table] = []
        rows = 0
        for part in parts:
            # decoded in this thread, whose pages `core.freed.give_back` can return
            table = pq.read_table(part, schema=VARIANT_SCHEMA, use_threads=False,
                                  pre_buffer=False)
            pending.append(table)
            rows += table.num_rows
            if rows >= ROWS_PER_GROUP:
                writer.write_table(pa.concat_tables(pending), row_group_size=rows)
                pending, rows = [], 0
                give_back()  # the group's buffers: the next group would come on top of them
        if pending or not parts:
            table = pa.concat_tables(pending) if pending else VARIANT_SCHEMA.empty_table()
            writer.write_table(table, row_group_size=max(rows, 1))


def variants_path(folder: Path) -> Path | None:
    """The variants file of a run directory (variants.parquet, or an older variants.jsonl)."""
    for name in (FILE, OLD_FILE):
        path = Path(folder) / name
        if path.exists():
            return path
    return None


@contextlib.contextmanager
def _parquet_read(path: Path) -> Iterator[None]:
    """A file that is not readable Parquet becomes a DataError naming it."""
    try:
        yield
    except (OSError, pa.ArrowException) as exc:
        raise DataError(path, None, None, f"cannot be read as Parquet ({exc})") from None


def read_records(path: Path, columns: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
    """The variant records of a variants file, one batch in memory at a time: example_id,
    perturbation, severity (its value), seed, noise_ratio, text, method, verification,
    check_precision, provenance (a dict or None) and id. `columns` limits what a
    variants.parquet is asked for."""
    path = Path(path)
    if path.suffix == ".jsonl":
        yield from _old_records(path)
        return
    with _parquet_read(path):
        source = pq.ParquetFile(path)
        wanted = [c for c in (columns or VARIANT_SCHEMA.names) if c in source.schema_arrow.names]
        for batch in source.iter_batches(batch_size=8192, columns=wanted, use_threads=False):
            for row in batch.to_pylist():
                yield _record(row, path)


#: the columns a variant's id is made of, in its order
ID_COLUMNS = ("example_id", "perturbation", "severity", "seed")
#: variants per batch of `read_keys`; its lists of Python strings are what the batch holds
KEY_BATCH = 8_192
#: variants decoded at a time by `records_at`: a whole row group of texts decoded at once was
#: the largest allocation of a large run's report
RECORD_BATCH = 1_024


def read_keys(path: Path) -> Iterator[tuple[list[str], list[str], list[str]]]:
    """Batch by batch, the ids, perturbations and severities (as text) of a variants file's
    records, as `read_records` gives them (`str` of each field), without making a record per
    variant: a report samples a run of millions of variants from these."""
    path = Path(path)
    if path.suffix == ".jsonl":
        records = iter(_old_records(path))
        while batch := [(r["id"], str(r["perturbation"]), str(r["severity"]))
                        for r in itertools.islice(records, KEY_BATCH)]:
            yield [r[0] for r in batch], [r[1] for r in batch], [r[2] for r in batch]
        return
    with _parquet_read(path):
        source = pq.ParquetFile(path)
        absent = [c for c in ID_COLUMNS if c not in source.schema_arrow.names]
        if absent:
            raise DataError(path, None, absent[0], "is missing (every variant needs "
                            "example_id, perturbation, severity and seed)")
        for batch in source.iter_batches(batch_size=KEY_BATCH, columns=list(ID_COLUMNS),
                                         use_threads=False):
            # as Python's f"{value}" writes them: None as "None", a severity as its value
            texts = [pc.fill_null(pc.cast(batch.column(name), pa.string()), "None")
                     for name in ID_COLUMNS]
            encoded = pc.dictionary_encode(texts[2])
            values = pa.array([str(severity_value(v)) for v in encoded.dictionary.to_pylist()],
                              pa.string())
            texts[2] = pc.take(values, encoded.indices)
            yield (pc.binary_join_element_wise(*texts, "|").to_pylist(),
                   texts[1].to_pylist(), texts[2].to_pylist())


def records_at(path: Path, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The records at these positions (0-based, in file order) of a variants file, as
    `read_records` gives them: only those rows become Python objects, so a sample of a large
    run costs its own size, not the run's."""
    path = Path(path)
    wanted = sorted(set(positions))
    if path.suffix == ".jsonl":
        keep = set(wanted)
        return {i: r for i, r in enumerate(_old_records(path)) if i in keep}
    found: dict[int, dict[str, Any]] = {}
    with _parquet_read(path):
        source = pq.ParquetFile(path)
        start = 0
        for group in range(source.num_row_groups):
            size = source.metadata.row_group(group).num_rows
            if bisect.bisect_left(wanted, start) == bisect.bisect_left(wanted, start + size):
                start += size  # nothing asked for in this row group: not decoded
                continue
            for batch in source.iter_batches(batch_size=RECORD_BATCH, row_groups=[group],
                                             use_threads=False):
                end = start + batch.num_rows
                inside = [p - start for p in wanted[bisect.bisect_left(wanted, start):
                                                    bisect.bisect_left(wanted, end)]]
                if inside:
                    rows = batch.take(inside).to_pylist()
                    for offset, row in zip(inside, rows, strict=True):
                        found[start + offset] = _record(row, path)
                start = end
    return found


def _record(row: dict[str, Any], path: Path) -> dict[str, Any]:
    if "severity" in row:
        row["severity"] = severity_value(row["severity"])
    if row.get("provenance") is not None:
        row["provenance"] = parse_json(row["provenance"], path)  # bounded: a forged file
    if set(ID_COLUMNS) <= set(row):
        row["id"] = f"{row['example_id']}|{row['perturbation']}|{row['severity']}|{row['seed']}"
    return row


def _old_records(path: Path) -> Iterator[dict[str, Any]]:
    """variants.jsonl of an earlier version: each line has its full text, taken as it is."""
    for line, data in read_jsonl(path):
        for name in ("example_id", "perturbation", "severity", "seed", "text"):
            if name not in data:
                raise DataError(path, line, name, "is missing (an old-format variants file "
                                "has every variant's text; run the suite again to rebuild it)")
        provenance = data.get("provenance")
        yield {"id": data.get("id") or f"{data['example_id']}|{data['perturbation']}|"
               f"{data['severity']}|{data['seed']}",
               "example_id": str(data["example_id"]), "perturbation": str(data["perturbation"]),
               "severity": data["severity"], "seed": int(data["seed"]),
               "noise_ratio": float(data.get("noise_ratio", 0.0)), "text": str(data["text"]),
               "method": data.get("method") or (provenance or {}).get("method"),
               "verification": (provenance or {}).get("verification"),
               "check_precision": (provenance or {}).get("check_precision"),
               "provenance": provenance, **({"diff": data["diff"]} if "diff" in data else {})}


def variant_from_record(record: Mapping[str, Any]) -> Variant:
    return Variant(str(record["example_id"]), str(record["perturbation"]), record["severity"],
                   int(record["seed"]), str(record["text"]), float(record["noise_ratio"]),
                   record.get("provenance"))


def read_variants(path: Path) -> Iterator[Variant]:
    """The variants of a variants file (either format), in the order they were written."""
    for record in read_records(path):
        yield variant_from_record(record)


def _type_fits(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a column of type `found` holds what VARIANT_SCHEMA's `wanted` does."""
    if pa.types.is_string(wanted):
        return pa.types.is_string(found) or pa.types.is_large_string(found) or (
            pa.types.is_dictionary(found) and _type_fits(found.value_type, wanted))
    if pa.types.is_integer(wanted):
        return pa.types.is_integer(found)
    return pa.types.is_floating(found) or pa.types.is_integer(found)


def check_variant_file(path: Path) -> None:
    """Refuse a variants.parquet that is not ours (a file put in a run directory by hand): its
    columns would read as nulls and be exported as empty rows. A DataError names the file and
    each missing or wrongly typed column."""
    if path.suffix != ".parquet":
        return  # an old variants.jsonl is checked line by line as it is read
    with _parquet_read(path):
        schema = pq.read_schema(path)
    problems = []
    for wanted in VARIANT_SCHEMA:
        index = schema.get_field_index(wanted.name)
        if index < 0 and wanted.name in OPTIONAL:
            continue  # a file of an earlier version
        if index < 0:
            problems.append(f"'{wanted.name}' is missing")
        elif not _type_fits(schema.field(index).type, wanted.type):
            problems.append(f"'{wanted.name}' is {schema.field(index).type}, not {wanted.type}")
    if problems:
        raise DataError(path, None, None, "is not a variants file written by evalstress: "
                        f"column {'; column '.join(problems)} (its columns are "
                        f"{', '.join(VARIANT_SCHEMA.names)})")


def export_variants(run_dir: Path, out: Path, *, originals: bool = False) -> int:
    """Write every variant of a run with its provenance to `out` (.jsonl, .csv or .parquet, by
    its suffix); with `originals`, each row also has its example's text. Returns the count.
    The rows load back with `--variants` (example_id, perturbation, severity, seed, text)."""
    run_dir, out = Path(run_dir), Path(out)
    suffix = out.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise ValueError(f"{out}: unknown format '{out.suffix}'; name a file ending in "
                         f"{', '.join(EXPORT_FORMATS)}")
    source = variants_path(run_dir)
    if source is None:
        raise DataError(run_dir, None, None, f"holds no {FILE} (is it a run directory?)")
    check_variant_file(source)
    texts: dict[str, str] = {}
    if originals:
        examples = run_dir / "examples.jsonl"
        if not examples.exists():
            raise DataError(examples, None, None, "does not exist; export without --originals")
        texts = {str(d.get("id")): str(d.get("hypothesis", "")) for _, d in read_jsonl(examples)}
    fields = [*COLUMNS[:-1], *(["original"] if originals else []), "text"]
    rows = (_export_row(r, fields, texts) for r in _complete(source, read_records(source)))
    out.parent.mkdir(parents=True, exist_ok=True)
    # a failed export leaves no half file; the partial file is new (never a link followed)
    handle, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    os.close(handle)
    partial = Path(name)
    try:
        if suffix == ".jsonl":
            count = _write_jsonl(partial, rows)
        elif suffix == ".csv":
            count = _write_csv(partial, rows, fields)
        else:
            count = _write_parquet(partial, rows, fields)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return count


def _complete(path: Path, records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The records, each checked to have what loads back with --variants (row numbers from 1)."""
    for number, record in enumerate(records, start=1):
        for name in ("example_id", "perturbation", "severity", "seed", "text"):
            if record.get(name) is None:
                raise DataError(path, number, name, "is empty: a variant needs its example, "
                                "perturbation, severity, seed and text")
        yield record


def _export_row(record: Mapping[str, Any], fields: Sequence[str],
                texts: Mapping[str, str]) -> dict[str, Any]:
    row = {name: record.get(name) for name in fields}
    if "original" in row:
        row["original"] = texts.get(str(record["example_id"]))
    return row


def _write_jsonl(out: Path, rows: Iterable[dict[str, Any]]) -> int:
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A row for a table format: provenance as JSON text, severity as text."""
    provenance = row.get("provenance")
    return {**row, "severity": str(row["severity"]),
            "provenance": None if provenance is None else json.dumps(
                provenance, ensure_ascii=False, sort_keys=True, default=str)}


def _write_csv(out: Path, rows: Iterable[dict[str, Any]], fields: Sequence[str]) -> int:
    count = 0
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(fields))
        writer.writeheader()
        for row in rows:
            writer.writerow(_flat(row))
            count += 1
    return count


def _write_parquet(out: Path, rows: Iterable[dict[str, Any]], fields: Sequence[str]) -> int:
    types = {"seed": pa.int64(), "noise_ratio": pa.float64(), "check_precision": pa.float64()}
    schema = pa.schema([(name, types.get(name, pa.string())) for name in fields])
    count = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(_flat(row))
            count += 1
            if len(batch) >= 8192:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return count
