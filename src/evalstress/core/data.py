"""Examples and their loading: one item of a task, read from JSONL, CSV or Parquet.

Every loader error names the file, the line (1-based; the header is line 1 in CSV) and the field,
because a stress test over thousands of rows is useless if a bad row only says "KeyError".
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from evalstress.core.userfile import (
    DataError,
    check_readable,
    not_utf8,
    parse_json_line,
    read_user_text,
)

#: `dialogue` is a summary of a conversation; `dialogue-response` the next turn of one (paper
#: 004's dialogue data); `question-generation` a question about a passage, the source ending in
#: a line `Answer: ...` with the answer it must have (paper 004's question data).
TASKS = ("summarization", "translation", "dialogue", "story", "qa", "data-to-text", "open-ended",
         "dialogue-response", "question-generation")

#: the task of a row whose data names none, when no default task (--task) is given
DEFAULT_TASK = "open-ended"

#: Example fields a mapping can fill, and the data field used when the mapping names none.
FIELDS = ("id", "task", "source", "hypothesis", "references")


@dataclass(frozen=True)
class Example:
    """One item of a task: the good `hypothesis` is what the perturbations damage."""

    id: str
    task: str
    source: str
    hypothesis: str
    references: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task": self.task,
            "source": self.source,
            "hypothesis": self.hypothesis,
            "references": list(self.references),
            "meta": dict(self.meta),
        }


@dataclass(frozen=True)
class FieldMap:
    """Which data field fills which Example field.

    `references` may name several fields (`ref_a,ref_b`); each may hold a string or a list.
    Unmapped data fields go to `meta`. A dotted name reaches into nested objects (`meta.topic`).
    """

    id: str | None = "id"
    task: str | None = "task"
    source: str | None = "source"
    hypothesis: str = "hypothesis"
    references: tuple[str, ...] = ("references",)

    @classmethod
    def parse(cls, pairs: Mapping[str, str] | Iterable[str] | None) -> FieldMap:
        """Build from `{"hypothesis": "highlight"}` or `["hypothesis=highlight", ...]`."""
        if pairs is None:
            return cls()
        if not isinstance(pairs, Mapping):
            parsed: dict[str, str] = {}
            for pair in pairs:
                key, sep, value = pair.partition("=")
                if not sep:
                    raise ValueError(f"field mapping '{pair}' must look like hypothesis=highlight")
                if not value.strip(" ,"):  # checked before any line is read
                    raise ValueError(f"--map '{pair}': names no field; write "
                                     f"{key.strip() or 'hypothesis'}=FIELD with the data field "
                                     "that holds it")
                parsed[key.strip()] = value.strip()
            pairs = parsed
        unknown = set(pairs) - set(FIELDS)
        if unknown:
            raise ValueError(
                f"unknown example field(s) in mapping: {sorted(unknown)}; known: {list(FIELDS)}"
            )
        kwargs: dict[str, Any] = {}
        for key, value in pairs.items():
            names = _mapped_names(key, value)
            # None says the data has no such field (ids become file:line); an empty name is a
            # mapping left unfinished, and the hypothesis always comes from some field
            if (value is None and key == "hypothesis") or (value is not None and not names):
                raise ValueError(f"field mapping '{key}: {value!r}': names no field; give the "
                                 f"data field that holds the {key}")
            if key == "references":
                kwargs[key] = tuple(names)
            else:
                kwargs[key] = names[0] if names else None
        return cls(**kwargs)


def _mapped_names(key: str, value: Any) -> list[str]:
    """The data field names a mapping value gives: references may list several (`a,b` or a
    list); None gives none."""
    if value is None:
        return []
    if key == "references":
        items = value if isinstance(value, list | tuple) else str(value).split(",")
    else:
        items = [value]
    return [str(item).strip() for item in items if str(item).strip()]


def field_value(row: Mapping[str, Any], dotted: str) -> Any:
    """A record's value at a dotted path (`meta.topic`) or KeyError; imported variants use it too."""
    value: Any = row
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


def field_text(value: Any, path: Path, line: int, name: str, *, allow_empty: bool = False) -> str:
    """A field as text, or a DataError naming file, line and field; for every loader of records."""
    if value is None or (isinstance(value, float) and value != value):
        if allow_empty:
            return ""
        raise DataError(path, line, name, "is empty (null)")
    if not isinstance(value, str):  # 42 or true is a typo for a text, never turned into one
        shown = json.dumps(value) if isinstance(value, int | float | bool) else ""
        raise DataError(path, line, name, f"must be text, got {type(value).__name__}"
                        + (f" {shown} (write it as \"{shown}\" if it is meant as text)"
                           if shown else ""))
    if not allow_empty and not value.strip():
        raise DataError(path, line, name, "is an empty text")
    return encodable(value, path, line, name)


def encodable(value: str, path: Path, line: int, name: str) -> str:
    """`value` if it can be written as UTF-8; a lone surrogate (valid in JSON as "\\ud800",
    not text) is a DataError naming where it is, before it breaks a file or a hash later."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(value[exc.start])
        raise DataError(path, line, name, f"holds a lone surrogate (U+{code:04X} at character "
                        f"{exc.start + 1}), which is not text: fix the escape in the file"
                        ) from None
    return value


def field_references(value: Any, path: Path, line: int, name: str) -> list[str]:
    """A field of one reference or a list of them, as texts; for every loader of records."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if hasattr(value, "tolist"):  # numpy arrays from Parquet list columns
        value = value.tolist()
    if isinstance(value, list | tuple):
        out = []
        for i, item in enumerate(value):
            out.append(field_text(item, path, line, f"{name}[{i}]"))
        return out
    raise DataError(path, line, name, f"must be a text or a list of texts, got {type(value).__name__}")


def id_text(value: Any, path: Path, line: int, name: str) -> str | None:
    """A record's id as text: a text or a whole number (1 and 1.0 are both "1"); None when the
    field is empty; anything else (an object, a list, true) a DataError naming the field,
    since turning it into text would make an id nobody wrote. Imported variants use it too."""
    if value is None or value == "" or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, str):
        return encodable(value, path, line, name)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    shown = json.dumps(value) if isinstance(value, bool | float) else type(value).__name__
    raise DataError(path, line, name, f"an id must be a text or a whole number, got {shown}")


def example_from_row(
    row: Mapping[str, Any],
    mapping: FieldMap,
    path: Path,
    line: int,
    *,
    default_task: str | None = None,
) -> Example:
    """Turn one raw record into an Example, or raise a DataError that locates the problem."""

    def get(name: str | None, required: bool) -> Any:
        if name is None:
            return None
        try:
            return field_value(row, name)
        except KeyError:
            if required:
                present = ", ".join(sorted(map(str, row))[:12])
                raise DataError(
                    path, line, name, f"is missing (fields present: {present})"
                ) from None
            return None

    hypothesis = field_text(get(mapping.hypothesis, True), path, line, mapping.hypothesis)
    source = field_text(get(mapping.source, False), path, line, mapping.source or "source",
                        allow_empty=True)
    references: list[str] = []
    for name in mapping.references:
        references.extend(field_references(get(name, False), path, line, name))
    example_id = id_text(get(mapping.id, False), path, line, mapping.id or "id") or \
        f"{path.stem}:{line}"
    task_value = get(mapping.task, False)
    task = str(task_value) if task_value not in (None, "") else (default_task or DEFAULT_TASK)
    if task not in TASKS:
        raise DataError(path, line, mapping.task or "task",
                        f"unknown task '{task}'; choose one of {', '.join(TASKS)}")
    used = {mapping.id, mapping.task, mapping.source, mapping.hypothesis, *mapping.references}
    meta = {k: v for k, v in row.items() if k not in used}
    if isinstance(row.get("meta"), Mapping) and "meta" not in used:
        meta = {**{k: v for k, v in meta.items() if k != "meta"}, **row["meta"]}
    return Example(example_id, task, source, hypothesis, tuple(references), meta)


def names_no_task(row: Mapping[str, Any], mapping: FieldMap) -> bool:
    """Whether a record leaves its task to the default: no task field, or an empty one."""
    if mapping.task is None:
        return True
    try:
        return field_value(row, mapping.task) in (None, "")
    except KeyError:
        return True


def default_task_note(source: str | Path, untasked: int, total: int) -> str | None:
    """The one line that says rows were given the default task because the data names none
    (None when every row names its task): a stated default, never a silent one."""
    if not untasked:
        return None
    if untasked == total:
        return (f"{source}: task: {DEFAULT_TASK} (no task column; give --task or a task "
                "field)")
    return (f"{source}: task: {DEFAULT_TASK} for {untasked} of {total} rows (no task there; "
            "give --task or a task field)")


def warn(line: str) -> None:
    """A warning of the loader on stderr, one line, as the commands print theirs."""
    sys.stderr.write(f"warning: {line}\n")
    sys.stderr.flush()


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file by line number (blank lines skipped); broken JSON, a
    line that is no object and bytes that are not UTF-8 are DataErrors naming the line."""
    try:
        with path.open("r", encoding="utf-8-sig") as handle:  # a leading BOM is no JSON
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                record = parse_json_line(line, path, line_no)
                if not isinstance(record, dict):
                    raise DataError(path, line_no, None, "each line must be a JSON object")
                yield line_no, record
    except UnicodeDecodeError as exc:
        raise _bad_bytes(path, exc) from None


def _bad_bytes(path: Path, exc: UnicodeDecodeError) -> DataError:
    """The located error for a decode failure met while streaming (its offset is the buffer's)."""
    return not_utf8(path) or DataError(path, None, None, f"is not UTF-8 text ({exc.reason})")


#: The longest CSV cell read (Python's csv module stops at 131,072 characters by default, less
#: than the default text length limit lets through); a longer text belongs in JSONL or Parquet.
CSV_CELL_LIMIT = 10_000_000


def _read_csv(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if csv.field_size_limit() < CSV_CELL_LIMIT:  # process-wide: only ever raised
        csv.field_size_limit(CSV_CELL_LIMIT)
    try:
        # utf-8-sig: spreadsheet programs start a CSV with a byte-order mark, which would
        # otherwise glue itself to the first column's name
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            # strict: a quote that is never closed is an error, not the rest of the file
            # swallowed into one cell
            reader = csv.DictReader(handle, strict=True)
            try:
                header = reader.fieldnames  # reads the header: record lines count from 2
            except csv.Error as exc:
                raise DataError(path, 1, None, _csv_problem(exc)) from None
            _check_header(path, header or [])
            while True:
                start = reader.line_num + 1  # the line this record starts on
                try:
                    record = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    raise DataError(path, max(start, 1), None, _csv_problem(exc)) from None
                if None in record:
                    raise DataError(path, reader.line_num, None,
                                    "has more cells than the header has columns")
                yield reader.line_num, dict(record)
    except UnicodeDecodeError as exc:
        raise _bad_bytes(path, exc) from None


def _check_header(path: Path, header: Sequence[str]) -> None:
    """A column name twice would silently give every row the later column's cell."""
    first: dict[str, int] = {}
    for position, name in enumerate(header, start=1):
        if name in first and not name.strip():
            raise DataError(path, 1, None, f"the header has more than one column without a "
                            f"name (columns {first[name]} and {position}); name them or delete "
                            "the empty columns")
        if name in first:
            raise DataError(path, 1, name, f"the header names column '{name}' twice (columns "
                            f"{first[name]} and {position}); rename one of them")
        first[name] = position


def _csv_problem(exc: csv.Error) -> str:
    """What a CSV parse error means to a user who wrote the file."""
    text = str(exc)
    if "unexpected end of data" in text:
        return ("a quoted cell starts on this line and is never closed (an unbalanced \"); "
                "everything after it would be read as one cell")
    if "field larger than field limit" in text:
        return (f"a cell is longer than the CSV reader's limit of {csv.field_size_limit():,} "
                "characters (if no text is meant to be that long, a quote opened here is never "
                "closed); store texts this long as JSONL or Parquet, which have no cell limit")
    return f"is not valid CSV ({text}): a quote inside a cell must be doubled (\"\")"


def _read_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(path, None, None, f"cannot be read as Parquet ({exc})") from None
    seen: set[str] = set()
    for name in table.column_names:
        if name in seen:
            raise DataError(path, None, name, f"the file has two columns named '{name}'; "
                            "rename one of them")
        seen.add(name)
    yield from enumerate(table.to_pylist(), start=1)


READERS = {".jsonl": read_jsonl, ".json": read_jsonl, ".csv": _read_csv,
           ".parquet": _read_parquet, ".pq": _read_parquet}


def load_examples(
    path: str | Path,
    mapping: FieldMap | Mapping[str, str] | Sequence[str] | None = None,
    *,
    task: str | None = None,
    limit: int | None = None,
    say: Callable[[str], None] | None = None,
) -> list[Example]:
    """Load Examples from a JSONL, CSV or Parquet file (Parquet rows are numbered from 1).
    Rows that name no task, without `task`, get DEFAULT_TASK, and one line says so (`say`, by
    default a warning on stderr)."""
    path = check_readable(path, "data")
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise DataError(path, None, None,
                        f"unsupported format '{path.suffix}'; use one of {sorted(READERS)}")
    field_map = mapping if isinstance(mapping, FieldMap) else FieldMap.parse(mapping)
    if task is not None and task not in TASKS:
        raise ValueError(f"unknown task '{task}'; choose one of {', '.join(TASKS)}")
    examples: list[Example] = []
    seen: dict[str, int] = {}
    untasked = 0
    for line_no, record in reader(path):
        example = example_from_row(record, field_map, path, line_no, default_task=task)
        untasked += task is None and names_no_task(record, field_map)
        if example.id in seen:
            raise DataError(path, line_no, field_map.id or "id",
                            f"duplicate id '{example.id}' (first on line {seen[example.id]})")
        seen[example.id] = line_no
        examples.append(example)
        if limit is not None and len(examples) >= limit:
            break
    if not examples:
        raise DataError(path, None, None, "holds no examples")
    note = default_task_note(path, untasked, len(examples))
    if note:
        (say or warn)(note)
    return examples


def from_hf_dataset(dataset: Iterable[Mapping[str, Any]], mapping: FieldMap | Mapping[str, str]
                    | Sequence[str] | None = None, *, task: str | None = None,
                    name: str = "dataset") -> list[Example]:
    """Examples from a Hugging Face `datasets.Dataset` (or any iterable of dict rows)."""
    field_map = mapping if isinstance(mapping, FieldMap) else FieldMap.parse(mapping)
    rows = list(dataset)
    examples = [example_from_row(row, field_map, Path(name), index, default_task=task)
                for index, row in enumerate(rows, start=1)]
    untasked = 0 if task is not None else sum(names_no_task(row, field_map) for row in rows)
    note = default_task_note(name, untasked, len(examples))
    if note:
        warn(note)
    return examples


def read_text_corpus(path: str | Path, what: str, *, field: str = "text",
                     where: str | None = None, missing_where_is_error: bool = False
                     ) -> list[str]:
    """Texts of a side corpus (an n-gram corpus, a MAUVE reference set): a .jsonl file's `field`
    in the records that match `where` ("key=value"), or any other file's non-empty lines.
    A record without the `where` key is skipped, or an error with `missing_where_is_error`."""
    file = Path(path)
    if not file.exists():
        raise ValueError(f"{what} file '{path}' does not exist")
    if file.suffix.lower() != ".jsonl":
        return [line for line in read_user_text(file, f"the {what}").splitlines()
                if line.strip()]
    check_readable(file, f"the {what}")
    key, _, value = (where or "").partition("=")
    texts = []
    for number, record in read_jsonl(file):  # broken JSON, non-objects, bad bytes: DataError
        if not isinstance(record.get(field), str):
            raise DataError(path, number, field, "missing or not a text")
        if where:
            if key not in record and missing_where_is_error:
                raise ValueError(f"{path}, line {number}, field '{key}' (from where={where}): "
                                 "is missing")
            if str(record.get(key)) != value:
                continue
        texts.append(record[field])
    return texts


def builtin_corpus() -> list[Example]:
    """The sample corpus shipped with the package, written for evalstress."""
    resource = resources.files("evalstress") / "corpus" / "sample.jsonl"
    with resources.as_file(resource) as path:
        return load_examples(path)
