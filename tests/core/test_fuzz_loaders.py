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
