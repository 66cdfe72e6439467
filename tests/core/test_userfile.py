"""Reading a user's file: a folder, bytes that are not UTF-8 and broken JSON are located."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.core import userfile
from evalstress.core.userfile import (
    MAX_JSON_DEPTH,
    DataError,
    NestedTooDeep,
    not_utf8,
    parse_json,
    parse_json_line,
    parse_user_yaml,
    read_user_text,
)


def test_a_text_file_reads_without_its_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes("seeds: 2\nname: café\n".encode("utf-8-sig"))
    assert read_user_text(path) == "seeds: 2\nname: café\n"


def test_a_byte_that_is_not_utf8_is_named_by_line_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"seeds: 2\n# caf\xe9\n")  # Latin-1: 9 bytes of line 1, then "# caf"
    with pytest.raises(DataError) as info:
        read_user_text(path, "a config")
    assert str(info.value) == (f"{path}, line 2: is not UTF-8 text: byte 0xE9 at byte offset 14 "
                               "(invalid continuation byte); save the file as UTF-8")


@pytest.mark.parametrize("split", [1, 2, 3])
def test_the_scan_follows_characters_across_its_blocks(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       split: int) -> None:
    """A four-byte character cut by a block edge is no error; a bad byte after it is found at
    its own offset, not at one counted from the block."""
    monkeypatch.setattr(userfile, "_SCAN_BLOCK", 8)
    body = b"a" * (8 - split) + "\U0001f600".encode() + b"\nline two \xff\n"
    path = tmp_path / "d.txt"
    path.write_bytes(body)
    error = not_utf8(path)
    assert error is not None and error.line == 2
    # the a's, the 4 bytes of the emoji, the line break, then "line two "
    assert f"at byte offset {(8 - split) + 4 + 1 + 9} " in str(error)
    path.write_bytes(body.replace(b"\xff", b"!"))
    assert not_utf8(path) is None
    path.write_bytes(body[:(8 - split) + 2])  # ends inside the emoji
    assert "unexpected end of data" in str(not_utf8(path))


def test_a_folder_or_a_missing_file_is_said_to_be_one(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"prompts\.yaml: is a folder, so it cannot be read as a "
                                        "prompt file"):
        (tmp_path / "prompts.yaml").mkdir()
        read_user_text(tmp_path / "prompts.yaml", "a prompt file")
    with pytest.raises(DataError, match=r"absent\.yaml: does not exist"):
        read_user_text(tmp_path / "absent.yaml")


def test_a_json_line_that_ends_early_or_nests_too_deep(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"f\.jsonl, line 3, column 14: the line ends before its "
                                        "JSON is complete"):
        parse_json_line('{"text": "a",\n', "f.jsonl", 3)
    with pytest.raises(DataError, match=r"f\.jsonl, line 1: is nested too deeply"):
        parse_json_line("[" * 50_000 + "]" * 50_000, "f.jsonl", 1)
    assert parse_json_line('{"a": [1]}\n', "f.jsonl", 1) == {"a": [1]}


def test_a_json_message_not_listed_loses_its_dangling_position_words() -> None:
    """Python's JSON messages end in "at" (their position text follows); a message without its
    own sentence is quoted without it, so it never reads "... at, column 33"."""
    odd = json.JSONDecodeError("Something odd at", '{"a": 1}', 3)
    assert userfile.json_problem(odd) == "broken JSON (Something odd)"
    odd = json.JSONDecodeError("Unheard-of text starting at", '{"a": 1}', 3)
    assert userfile.json_problem(odd) == "broken JSON (Unheard-of text)"


def test_a_json_file_nested_past_the_limit_is_refused_and_the_limit_itself_reads() -> None:
    """Bounded parsing: deeper than MAX_JSON_DEPTH is an error naming the file, whether the
    parser would have overflowed (100,000 levels) or only what walks the value next (101)."""
    for depth in (MAX_JSON_DEPTH + 1, 100_000):
        with pytest.raises(DataError, match=r"^card\.json: is nested too deeply"):
            parse_json("[" * depth + "]" * depth, "card.json")
        with pytest.raises(DataError, match=r"^r\.json: is nested too deeply"):
            parse_json(('{"a": ' * depth + "1" + "}" * depth).encode(), "r.json")
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(at_limit, "card.json") == json.loads(at_limit)
    brackets_in_a_text = '{"a": "' + "[" * 500 + '"}'
    assert parse_json(brackets_in_a_text, "card.json") == {"a": "[" * 500}


def test_a_json_file_cut_short_is_said_to_be_a_file_not_a_jsonl_line() -> None:
    with pytest.raises(DataError, match=r"card\.json, line 2, column 11: the file ends before "
                                        "its JSON is complete") as info:
        parse_json('{"gate": {\n  "a": [1,', "card.json")
    assert "JSONL" not in str(info.value)
    with pytest.raises(DataError, match="more text after the JSON value ends"):
        parse_json("{} {}", "card.json")


def test_a_user_s_yaml_is_bounded_in_depth_as_json_is() -> None:
    with pytest.raises(NestedTooDeep, match="nested too deeply"):
        parse_user_yaml("[" * 100_000 + "]" * 100_000)
    with pytest.raises(NestedTooDeep):
        parse_user_yaml("a: &a [*a]")  # an alias inside itself: endless
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(8))  # shared nine levels deep, 10**9 leaves if copied: read at once
    assert len(parse_user_yaml(laughs)) == 9
    assert parse_user_yaml("a: [1, {b: 2}]") == {"a": [1, {"b": 2}]}
