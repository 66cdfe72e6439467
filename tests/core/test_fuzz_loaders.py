"""Fuzz the data loaders: any file content gives examples or a DataError naming the file (and,
for a bad row, its line); never another exception. Derandomized: every run tries the same
inputs."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstress.core.data import DataError, Example, load_examples

_settings = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.too_slow])

# JSON values a row might hold: strings, numbers, nulls, lists, nested objects
_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=30)
                       | st.floats(allow_nan=True), lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)
_rows = st.lists(st.dictionaries(
    st.sampled_from(["id", "task", "source", "hypothesis", "references", "meta", "other"]),
    _values, max_size=6), max_size=4)


def _load(suffix: str, content: bytes) -> list[Example] | DataError:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"data{suffix}"
        path.write_bytes(content)
        try:
            return load_examples(path)
        except DataError as exc:
            assert str(path) in str(exc) and str(exc).strip()
            return exc


@_settings
@given(content=st.binary(max_size=300))
def test_arbitrary_bytes_as_jsonl_or_csv(content: bytes) -> None:
    for suffix in (".jsonl", ".csv"):
        result = _load(suffix, content)
        assert isinstance(result, list | DataError)


@_settings
@given(rows=_rows)
def test_arbitrary_json_rows(rows: list[dict[str, object]]) -> None:
    content = "\n".join(json.dumps(r) for r in rows).encode()
    result = _load(".jsonl", content)
    if isinstance(result, list):  # what loads is usable: a non-empty text and a known task
        assert all(e.hypothesis.strip() and e.id for e in result)


@_settings
@given(header=st.lists(st.text(max_size=10), min_size=1, max_size=4),
       cells=st.lists(st.lists(st.text(max_size=20), max_size=5), max_size=4))
def test_arbitrary_csv_tables(header: list[str], cells: list[list[str]]) -> None:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(cells)
    result = _load(".csv", buffer.getvalue().encode("utf-8", "surrogatepass"))
    assert isinstance(result, list | DataError)


# texts that hold lone surrogates (valid JSON escapes, not text) and non-text scalars
_surrogate_texts = st.builds(lambda a, s, b: a + chr(s) + b, st.text(max_size=10),
                             st.integers(0xD800, 0xDFFF), st.text(max_size=10))
_scalars = st.integers() | st.booleans() | st.floats(allow_nan=False)


@_settings
@given(field=st.sampled_from(["id", "source", "hypothesis", "references"]),
       value=_surrogate_texts | _scalars)
def test_lone_surrogates_and_non_text_scalars_are_refused_by_field(field: str,
                                                                   value: object) -> None:
    row: dict[str, object] = {"id": "r1", "hypothesis": "A fine text.", field: value}
    if field == "references":
        row[field] = ["A reference.", value]
    if field == "id" and isinstance(value, int | float) and not isinstance(value, bool) and (
            float(value).is_integer()):
        return  # a whole number is an id: ids are names, not texts
    result = _load(".jsonl", json.dumps(row).encode())
    assert isinstance(result, DataError), f"{field}={value!r} was accepted"
    assert result.line == 1 and result.field is not None and field in result.field


@_settings
@given(rows=st.lists(st.text(alphabet="abc ", min_size=1, max_size=12).filter(str.strip),
                     min_size=1, max_size=4), at=st.integers(0, 3))
def test_an_unclosed_quote_in_a_csv_is_an_error_never_a_merged_row(rows: list[str],
                                                                    at: int) -> None:
    lines = [f"{i},{text}" for i, text in enumerate(rows, start=1)]
    at = min(at, len(lines) - 1)
    lines[at] = lines[at].replace(",", ',"', 1)  # this cell's quote is never closed
    result = _load(".csv", ("id,hypothesis\n" + "\n".join(lines) + "\n").encode())
    assert isinstance(result, DataError), result
    assert result.line == at + 2  # the header is line 1


GOOD_ROW = {"id": "r1", "hypothesis": "A fine text.", "references": ["A reference."]}


def _broken_lines() -> st.SearchStrategy[bytes]:
    """One JSONL line that must be refused: cut short, a raw control character or bad bytes
    inside a text, nested beyond the parser, not an object, or a field of the wrong kind."""
    good = json.dumps({**GOOD_ROW, "id": "r2"})
    cut = st.integers(1, len(good) - 1).map(lambda n: good[:n].encode())
    control = st.sampled_from(["\t", "\x00", "\x1f", "\r"]).map(
        lambda c: good.replace("fine", "fi" + c + "ne").encode())
    bad_bytes = st.sampled_from([b"\xe9", b"\xff", b"\xc3", b"\xed\xa0\x80"]).map(
        lambda b: good.encode().replace(b"fine", b"fi" + b + b"ne"))
    deep = st.integers(2_000, 60_000).map(
        lambda d: ('{"id": "r2", "hypothesis": ' + "[" * d + "]" * d + "}").encode())
    not_object = st.sampled_from([b"[1, 2]", b"42", b'"text"', b"null"])
    wrong_id = st.sampled_from([{"a": 1}, [1], True, False, 1.5, -0.25]).map(
        lambda v: json.dumps({**GOOD_ROW, "id": v}).encode())
    wrong_text = st.sampled_from([["a"], {"a": "b"}, 3, True, None, "", "  "]).map(
        lambda v: json.dumps({**GOOD_ROW, "id": "r2", "hypothesis": v}).encode())
    return cut | control | bad_bytes | deep | not_object | wrong_id | wrong_text


@_settings
@given(line=_broken_lines(), blank_lines=st.integers(0, 2))
def test_a_broken_jsonl_row_is_named_by_its_line(line: bytes, blank_lines: int) -> None:
    content = json.dumps(GOOD_ROW).encode() + b"\n" + b"\n" * blank_lines + line + b"\n"
    result = _load(".jsonl", content)
    assert isinstance(result, DataError), f"{line[:80]!r} was accepted"
    assert result.line == 2 + blank_lines and f"line {2 + blank_lines}" in str(result)


_broken_csv_rows = st.sampled_from([
    b'2,"never closed', b'2,"a "stray" quote"', b"2,text,extra cell", b"2,caf\xe9",
    b"2,\xff\xfe", b'2,""'])


@_settings
@given(row=_broken_csv_rows, good_rows=st.integers(0, 3))
def test_a_broken_csv_row_is_named_by_its_line(row: bytes, good_rows: int) -> None:
    lines = [b"id,hypothesis", *(b"g%d,A fine text." % i for i in range(good_rows)), row]
    result = _load(".csv", b"\n".join(lines) + b"\n")
    assert isinstance(result, DataError), f"{row!r} was accepted"
    assert result.line == good_rows + 2 and f"line {good_rows + 2}" in str(result)


@_settings
@given(header=st.lists(st.sampled_from(["id", "hypothesis", "source", ""]), min_size=2,
                       max_size=5))
def test_a_csv_header_naming_a_column_twice_is_refused_on_line_1(header: list[str]) -> None:
    body = (",".join(header) + "\n" + ",".join("x" for _ in header) + "\n").encode()
    result = _load(".csv", body)
    if len(set(header)) < len(header):
        assert isinstance(result, DataError) and result.line == 1, result


# Parquet columns of every kind a file may hold: the loader must refuse what is no text by row
_PARQUET_COLUMNS: dict[str, tuple[pa.DataType, st.SearchStrategy[object]]] = {
    "string": (pa.string(), st.text(max_size=12) | st.none()),
    "int": (pa.int64(), st.integers(-5, 5) | st.none()),
    "float": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True) | st.none()),
    "bool": (pa.bool_(), st.booleans() | st.none()),
    "list": (pa.list_(pa.string()), st.lists(st.text(max_size=5) | st.none(), max_size=3)
             | st.none()),
    "struct": (pa.struct([("k", pa.string())]),
               st.fixed_dictionaries({"k": st.text(max_size=5)}) | st.none()),
    "binary": (pa.binary(), st.binary(max_size=8) | st.none()),
}


@st.composite
def _parquet_tables(draw: st.DrawFn) -> tuple[dict[str, str], list[dict[str, object]]]:
    names = draw(st.lists(st.sampled_from(["id", "task", "source", "hypothesis", "references",
                                           "meta", "other"]), min_size=1, max_size=5,
                          unique=True))
    kinds = {name: draw(st.sampled_from(sorted(_PARQUET_COLUMNS))) for name in names}
    rows = draw(st.lists(st.fixed_dictionaries(
        {name: _PARQUET_COLUMNS[kind][1] for name, kind in kinds.items()}), min_size=1,
        max_size=3))
    return kinds, rows


@_settings
@given(table=_parquet_tables())
def test_arbitrary_parquet_columns(table: tuple[dict[str, str], list[dict[str, object]]]) -> None:
    kinds, rows = table
    schema = pa.schema([(name, _PARQUET_COLUMNS[kind][0]) for name, kind in kinds.items()])
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buffer)
    result = _load(".parquet", buffer.getvalue())
    if isinstance(result, DataError):
        assert result.line is not None and 1 <= result.line <= len(rows), result
        assert f"line {result.line}" in str(result)
    else:
        assert all(e.hypothesis.strip() for e in result)
