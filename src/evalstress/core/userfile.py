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


def json_problem(exc: json.JSONDecodeError) -> str:
    """A JSON decode error as a plain sentence, without Python's own position text."""
    if exc.pos >= len(exc.doc.rstrip()) and not exc.msg.startswith("Extra data"):
        return ("the line ends before its JSON is complete (an object or text is never "
                "closed; in JSONL each record is one whole line)")
    for prefix, sentence in _JSON_PROBLEMS:
        if exc.msg.startswith(prefix):
            return sentence
    # a message not listed above, without the "at" / "starting at" its position text followed
    said = re.sub(r"(\s+starting)?\s+at$", "", exc.msg.strip())
    return f"broken JSON ({said})"


def parse_json_line(text: str, path: str | Path, line: int) -> Any:
    """One line of a JSONL file as a value; a DataError naming the file, line and column (or
    that it is nested too deeply for the parser) when it is no JSON."""
    text = text.rstrip("\r\n")  # the column counts within this line
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, line, None, json_problem(exc), column=exc.colno) from None
    except RecursionError:
        raise DataError(path, line, None, "is nested too deeply: lists or objects inside each "
                        "other beyond what the JSON reader can follow") from None
