"""A user's criteria file with the mistakes the audit made: each error names the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstress.core.strict import ConfigError
from evalstress.criteria import load_criteria

HEAD = ("humour:\n  name: Humour\n  default: Is it funny?\n  simplified: Funny?\n"
        "  term: Is the text humorous?\n  checks: Look for jokes.\n")


def _write(tmp_path: Path, anchors: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(HEAD + anchors, encoding="utf-8")
    return path


def test_anchors_keyed_by_words_name_the_file_and_key(tmp_path: Path) -> None:
    # before: "invalid literal for int() with base 10: 'one'"
    path = _write(tmp_path, "  anchors: {one: bad, two: weak, three: fair, four: good, "
                            "five: great}\n")
    with pytest.raises(ConfigError) as caught:
        load_criteria(str(path))
    assert str(caught.value).startswith(f"{path}: field 'humour.anchors': key 'one' is not a "
                                        "point")


def test_anchors_keyed_by_digits_as_text_are_points(tmp_path: Path) -> None:
    path = _write(tmp_path, "  anchors: {'1': bad, '2': weak, '3': fair, '4': good, "
                            "'5': great}\n")
    assert load_criteria(str(path))["humour"].anchors[0] == (5, "great")


def test_a_missing_point_and_an_unquoted_no_are_explained(tmp_path: Path) -> None:
    path = _write(tmp_path, "  anchors: {1: bad, 2: weak, 3: fair, 5: great}\n")
    with pytest.raises(ConfigError, match=r"each of the points 1 to 5 once, got \[1, 2, 3, 5\]"):
        load_criteria(str(path))
    path = _write(tmp_path, "  anchors: {1: no, 2: weak, 3: fair, 4: good, 5: great}\n")
    with pytest.raises(ConfigError, match="point 1 reads as False in YAML; quote"):
        load_criteria(str(path))


def test_an_unknown_field_suggests_the_known_one(tmp_path: Path) -> None:
    path = _write(tmp_path, "  anchor: {1: a, 2: b, 3: c, 4: d, 5: e}\n")
    with pytest.raises(ConfigError, match=r"aspect 'humour': unknown field 'anchor'. Did you "
                                          r"mean 'anchors'\?"):
        load_criteria(str(path))


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    # before: a bare UnicodeDecodeError naming no file
    path = tmp_path / "latin.yaml"
    path.write_bytes((HEAD.replace("funny", "dr\xf4le") + "  anchors: {1: a, 2: b, 3: c, "
                      "4: d, 5: e}\n").encode("latin-1"))
    with pytest.raises(ConfigError, match=rf"{path}: the criteria file is not UTF-8 text"):
        load_criteria(str(path))
