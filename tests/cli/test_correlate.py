"""`evalstress correlate` (cli/correlate.py): where a judge's answers are kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer, Reply

runner = CliRunner()


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": d, "references": ["The cat sat on the mat."],
                                        "systems": [{"system": s, "summary": f"A cat {d}{s}.",
                                                     "coherence": i}
                                                    for i, s in enumerate(["x", "y", "z"])]})
                            + "\n" for d in ("d1", "d2", "d3")))
    return docs


def test_correlate_keeps_a_judges_answers_in_the_cache_dir_it_was_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = tmp_path / "default-cache"
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(default))
    chosen = tmp_path / "chosen"
    with FakeServer(default=Reply("Rating: 4")) as server:
        args = ["correlate", str(_docs(tmp_path)), "-e",
                f"judge:model=fake,base_url={server.base_url},form=score-only",
                "--human", "coherence", "--n-boot", "10", "--cache-dir", str(chosen),
                "--quiet"]
        first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
        asked = server.calls
        again = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert first.exit_code == 0, first.output
    assert again.exit_code == 0, again.output
    assert asked == 9  # 3 documents x 3 systems, once each
    assert server.calls == asked  # the rerun asks nothing again
    assert (chosen / "llm.sqlite").exists()
    assert not (default / "llm.sqlite").exists()
