"""Reading several systems' outputs per document (SummEval's layout) for `evalstress correlate`:
bad input names file, line and field."""

from __future__ import annotations

import json

import pytest

from evalstress.core.data import DataError
from evalstress.studies.correlate import load_system_outputs


def test_loader_names_file_line_and_field(tmp_path):
    path = tmp_path / "d.jsonl"
    good = {"id": "a", "source": "s", "references": ["r"],
            "systems": [{"system": "x", "summary": "t", "coherence": 3}]}
    bad = {"id": "b", "source": "s", "systems": [{"system": "x", "summary": "t"}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=r"line 2, field 'systems\[0\]\.coherence'"):
        load_system_outputs(path, human_fields=["coherence"])
    docs = load_system_outputs(path, human_fields=["coherence"], limit=1)
    assert docs[0].references == ("r",) and docs[0].human == {"x": {"coherence": 3.0}}
