"""The preference layout (core/preferences.py): what a row may say, and one clear error naming
the file, line and field for each way a row can be wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalstress.core.preferences import load_preferences, majority
from evalstress.core.userfile import DataError


def write(tmp_path: Path, *rows: Any, name: str = "prefs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_a_file_reads_its_pairs_items_aspects_and_votes(tmp_path: Path) -> None:
    path = write(tmp_path,
                 {"id": "p1", "item": "q1", "source": "Q", "a": "x", "b": "y",
                  "preference": "A", "votes": ["a", "a", None]},
                 {"id": "p2", "item": "q1", "a": "x", "b": "z", "votes": ["b", "tie", "b"]},
                 {"a": "u", "b": "v", "preference": "tie", "references": "ref"})
    data = load_preferences(path)
    assert [p.preference["preference"] for p in data.pairs] == ["a", "b", "tie"]
    assert data.aspects == ("preference",)
    assert data.items == 2  # q1 twice, and the third pair its own item
    assert data.pairs[2].item == data.pairs[2].id == "prefs:3"
    assert data.pairs[0].votes["preference"] == ("a", "a", None)
    assert data.pairs[2].references == ("ref",) and data.pairs[2].task == "open-ended"
    assert data.describe()["votes"] is True and len(data.sha256) == 64


def test_several_human_aspects_are_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, {"a": "x", "b": "y", "preference": {"help": "a", "safe": "b"},
                            "votes": {"help": ["a", "b", "a"]}},
                 {"a": "x", "b": "w", "preference": {"safe": "tie", "help": "b"}})
    data = load_preferences(path)
    assert data.aspects == ("help", "safe")
    assert data.pairs[1].preference == {"safe": "tie", "help": "b"}


@pytest.mark.parametrize("votes, expected", [
    (["a", "a", "b"], "a"), (["a", "b"], "tie"), (["tie", "tie", "a"], "tie"),
    (["b", None, None], "b"), ([None], None)])
def test_the_majority_of_the_votes(votes: list[Any], expected: str | None) -> None:
    assert majority(votes) == expected


@pytest.mark.parametrize("row, field, words", [
    ({"b": "y", "preference": "a"}, "a", "is missing"),
    ({"a": "x", "b": "", "preference": "a"}, "b", "empty"),
    ({"a": "x", "b": 3, "preference": "a"}, "b", "must be text"),
    ({"a": "x", "b": "y", "preference": "c"}, "preference", "one of a, b, tie"),
    ({"a": "x", "b": "y"}, "preference", "is missing"),
    ({"a": "x", "b": "y", "votes": ["a", "maybe"]}, "votes[1]", "one of a, b, tie"),
    ({"a": "x", "b": "y", "votes": []}, "votes", "non-empty list"),
    ({"a": "x", "b": "y", "votes": [None, None]}, "votes", "every vote is null"),
    ({"a": "x", "b": "y", "preference": {"help": "z"}}, "preference.help", "one of a, b"),
    ({"a": "x", "b": "y", "preference": "a", "votes": {"safe": ["a"]}}, "votes",
     "aspect(s) the preference does not: safe"),
    ({"a": "x", "b": "y", "preference": "a", "task": "poetry"}, "task", "unknown task"),
    ({"a": "x", "b": "y", "preference": "a", "item": {"q": 1}}, "item", "an id must be"),
])
def test_a_bad_row_names_its_file_line_and_field(tmp_path: Path, row: dict[str, Any],
                                                  field: str, words: str) -> None:
    path = write(tmp_path, {"a": "fine", "b": "too", "preference": "b"}, row)
    with pytest.raises(DataError) as caught:
        load_preferences(path)
    message = str(caught.value)
    assert message.startswith(f"{path}, line 2, field '{field}'"), message
    assert words in message, message


def test_rows_name_the_same_aspects_and_ids_are_unique(tmp_path: Path) -> None:
    mixed = write(tmp_path, {"a": "x", "b": "y", "preference": "a"},
                  {"a": "x", "b": "y", "preference": {"help": "a"}}, name="mixed.jsonl")
    with pytest.raises(DataError, match=r"line 2, field 'preference': names the aspects help; "
                                        r"the first row names preference"):
        load_preferences(mixed)
    twice = write(tmp_path, {"id": 1, "a": "x", "b": "y", "preference": "a"},
                  {"id": "1", "a": "x", "b": "y", "preference": "a"}, name="twice.jsonl")
    with pytest.raises(DataError, match=r"line 2, field 'id': duplicate id '1' \(first on "
                                        r"line 1\)"):
        load_preferences(twice)


def test_a_file_that_is_not_jsonl_empty_or_broken_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is JSONL"):
        load_preferences(write(tmp_path, "a,b", name="prefs.csv"))
    with pytest.raises(DataError, match="holds no pairs"):
        load_preferences(write(tmp_path, "", name="empty.jsonl"))
    with pytest.raises(DataError, match="line 1"):
        load_preferences(write(tmp_path, "{broken", name="broken.jsonl"))
