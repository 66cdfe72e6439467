"""Fuzz the data loaders: any file content gives examples or a DataError naming the file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstress.core.data import DataError, Example, load_examples

_settings = settings(max_examples=150, deadline=None,
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
    if field == "id" and not isinstance(value, str):
        return  # a numeric id is an id: ids are names, not texts
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
