"""The report's shared helpers: JSON inside a script element, whole or in pieces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.report.common import json_for_script, json_for_script_parts


def script_json(data: object) -> str:
    """The rule by hand: compact JSON, non-ASCII kept, then the five characters that could
    close the element or end a script line replaced by their escapes."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=str)
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


BROWSER = {
    "total": 3, "shown": 2,
    "columns": [{"name": "bleu/bleu", "label": "BLEU", "higher": True}],
    "examples": {"e1": {"text": "café </script> & \u2028 \u2029 > 東京", "scores": [1.5, None]}},
    "variants": [["v1", "e1", "drop", "0.5", 0, 0.25, "x<y & z", [None, 2.0], None],
                 ("v2", "e1", "swap", "1", 1, None, "ok", [3.0], "diff")],
    "notes": {}, "by_number": {1: "one", 2.5: "two"}, "path": Path("a/b"), "empty": [],
}


def test_the_pieces_join_to_the_whole_escaped_json():
    parts = list(json_for_script_parts(BROWSER))
    joined = "".join(parts)
    assert joined == script_json(BROWSER) == json_for_script(BROWSER)
    assert "<" not in joined and "&" not in joined and "\u2028" not in joined
    # each variant is a piece of its own: the list of them is never one string
    assert any(p.startswith('["v1"') for p in parts) and len(parts) > 20
    assert max(map(len, parts)) < len(script_json(BROWSER["variants"]))


def test_a_value_json_cannot_write_fails_in_pieces_as_whole():
    data = {"variants": [["v1", float("nan")]]}
    with pytest.raises(ValueError):
        json_for_script(data)
    with pytest.raises(ValueError):
        "".join(json_for_script_parts(data))
