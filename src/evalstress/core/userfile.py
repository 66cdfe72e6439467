"""Reading the files a user hands us (data, imported variants, suites, configs, prompt files).

Whatever goes wrong while reading one must say which file and where in it: a folder given as a
file, bytes that are not UTF-8 (with the line and byte offset of the first bad byte), a JSON
line that does not parse (with its line and column, in a plain sentence). Every reader of a
user's file goes through here so the messages read the same everywhere.
"""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path
from typing import Any

import yaml

#: how many bytes the UTF-8 scan reads at a time
_SCAN_BLOCK = 1 << 20


class DataError(ValueError):
    """Bad input data, located by file, line, column and field."""

    def __init__(self, path: str | Path, line: int | None, field_name: str | None, message: str,
                 *, column: int | None = None):
        self.path = str(path)
        self.line = line
        self.column = column
        self.field = field_name
        self.message = message  # without the location, for errors that place it their own way
        where = self.path
        if line is not None:
            where += f", line {line}"
        if column is not None:
            where += f", column {column}"
        if field_name is not None:
            where += f", field '{field_name}'"
        super().__init__(f"{where}: {message}")


def check_readable(path: str | Path, what: str = "file") -> Path:
    """`path` as a Path if it names a file; a DataError saying it is missing or a folder (a
    folder reads as a write error later otherwise)."""
    file = Path(path)
    if file.is_dir():
        raise DataError(file, None, None, f"is a folder, so it cannot be read as {what}; "
                        "give the path of a file")
    if not file.exists():
        raise DataError(file, None, None, "does not exist")
    return file


def not_utf8(path: str | Path) -> DataError | None:
    """The error for the first byte of `path` that is not UTF-8 (its line and byte offset), or
    None when the whole file is UTF-8. Readers that decode as they stream call it on a
    UnicodeDecodeError, whose own offset counts from the start of a buffer, not of the file."""
    decode = codecs.utf_8_decode
    offset = 0  # file offset of pending[0]
    lines = 1
    pending = b""
    with Path(path).open("rb") as handle:
        while True:
            block = handle.read(_SCAN_BLOCK)
            data = pending + block
            try:
                _, used = decode(data, "strict", not block)
            except UnicodeDecodeError as exc:
                bad = offset + exc.start
                line = lines + data[:exc.start].count(b"\n")
                return DataError(path, line, None, f"is not UTF-8 text: byte 0x{data[exc.start]:02X} "
                                 f"at byte offset {bad:,} ({exc.reason}); save the file as UTF-8")
            lines += data[:used].count(b"\n")
            offset += used
            pending = data[used:]
            if not block:
                return None


def read_user_text(path: str | Path, what: str = "file") -> str:
    """The text of a user's file, decoded as UTF-8 (a leading byte-order mark dropped); a
    DataError naming the file, and the line and byte offset of a byte that is not UTF-8."""
    file = check_readable(path, what)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise DataError(file, None, None, f"cannot be read ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        error = not_utf8(file)
        if error is None:  # the file changed under us between the two reads
            raise DataError(file, None, None, "is not UTF-8 text; save the file as UTF-8") from None
        raise error from None


#: Python's JSON messages, and what they mean to someone who wrote the file
_JSON_PROBLEMS = (
    ("Expecting value", "expected a value (a text in double quotes, a number, true, false, "
     "null, a list or an object)"),
    ("Expecting property name enclosed in double quotes",
     "expected a field name in double quotes (or a trailing comma before '}')"),
    ("Expecting ':' delimiter", "expected ':' between a field name and its value"),
    ("Expecting ',' delimiter", "expected ',' between two items"),
    ("Unterminated string", "a text in double quotes is never closed on this line"),
    ("Invalid control character", "invalid control character in a text (JSON needs a line "
     "break written as \\n and a tab as \\t)"),
    ("Invalid \\uXXXX escape", "invalid \\u escape (it needs four hex digits)"),
    ("Invalid \\escape", "invalid backslash escape (a backslash in a text is written as \\\\)"),
    ("Extra data", "more text after the JSON object ends (each line holds one object)"),
)


def json_problem(exc: json.JSONDecodeError, *, whole_file: bool = False) -> str:
    """A JSON decode error as a plain sentence, without Python's own position text; a whole
    JSON file (`whole_file`) and a line of a JSONL file break in different words."""
    if exc.pos >= len(exc.doc.rstrip()) and not exc.msg.startswith("Extra data"):
        if whole_file:
            return ("the file ends before its JSON is complete (an object, list or text is "
                    "never closed: is the file cut short?)")
        return ("the line ends before its JSON is complete (an object or text is never "
                "closed; in JSONL each record is one whole line)")
    if whole_file and exc.msg.startswith("Extra data"):
        return "more text after the JSON value ends (a JSON file holds one value)"
    for prefix, sentence in _JSON_PROBLEMS:
        if exc.msg.startswith(prefix):
            return sentence
    # a message not listed above, without the "at" / "starting at" its position text followed
    said = re.sub(r"(\s+starting)?\s+at$", "", exc.msg.strip())
    return f"broken JSON ({said})"


#: how deeply lists and objects may nest in a JSON value evalstress reads: its own files nest
#: fewer than 15 levels, and code that walks a value (schemas, copies) recurses once a level
MAX_JSON_DEPTH = 100
_TOO_DEEP = ("is nested too deeply: lists or objects inside each other more than "
             f"{MAX_JSON_DEPTH} levels deep, beyond what any evalstress file holds")


def nested_deeper_than(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether lists and mappings nest more than `limit` deep in the parsed `value`: a walk
    level by level, without recursion, over the containers alone, each once a level (YAML's
    aliases share one container in many places, or in itself: that reads as too deep)."""
    level = {id(value): value}
    for _ in range(limit):
        level = {id(child): child for item in level.values()
                 for child in (item.values() if isinstance(item, dict) else item)
                 if isinstance(child, dict | list)}
        if not level:
            return False
    return True


class NestedTooDeep(yaml.YAMLError):
    """A user's YAML nested past MAX_JSON_DEPTH: a YAMLError, so each reader's message for
    broken YAML names the file."""


def parse_user_yaml(text: str) -> Any:
    """The data of a user's YAML text (`yaml.safe_load`, whose messages the readers quote),
    bounded in depth as `parse_json` is: too deep is a NestedTooDeep, not a RecursionError."""
    try:
        value = yaml.safe_load(text)
    except RecursionError:
        raise NestedTooDeep(_TOO_DEEP.removeprefix("is ")) from None
    if isinstance(value, dict | list) and nested_deeper_than(value):
        raise NestedTooDeep(_TOO_DEEP.removeprefix("is "))
    return value


def parse_json(text: str | bytes, path: str | Path, *, line: int | None = None) -> Any:
    """A JSON value from a file (or, with `line`, one line of a JSONL file); a DataError naming
    the file, the line and column of broken JSON, or that the value nests more than
    MAX_JSON_DEPTH levels (the depth that would otherwise end in a RecursionError, in the
    parser or in whatever walks the value next). A DataError is a ValueError, so code that
    treats an unreadable file of its own as absent keeps doing so."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno if line is None else line, None,
                        json_problem(exc, whole_file=line is None), column=exc.colno) from None
    except RecursionError:
        raise DataError(path, line, None, _TOO_DEEP) from None
    opened = text.count("[") + text.count("{") if isinstance(text, str) else \
        text.count(b"[") + text.count(b"{")
    if opened > MAX_JSON_DEPTH and isinstance(value, dict | list) and nested_deeper_than(value):
        raise DataError(path, line, None, _TOO_DEEP)  # no deeper than its opening brackets
    return value


def read_json(path: str | Path, what: str = "a JSON file") -> Any:
    """The JSON value of a file (UTF-8, see `read_user_text`), bounded as `parse_json` says."""
    return parse_json(read_user_text(path, what), path)


def parse_json_line(text: str, path: str | Path, line: int) -> Any:
    """One line of a JSONL file as a value; a DataError naming the file, line and column (or
    that it is nested too deeply) when it is no JSON."""
    return parse_json(text.rstrip("\r\n"), path, line=line)  # the column counts in this line
