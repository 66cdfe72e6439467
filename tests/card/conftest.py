"""Shared pieces of the card tests: a few examples of the built-in corpus as a data file, and
one small card of BLEU on the built-in corpus made once for the tests that read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.data import builtin_corpus

runner = CliRunner(env={"COLUMNS": "1000"})  # an error line is never wrapped


def write_examples(path: Path, ids: tuple[str, ...] = ("sum-01", "sum-02", "story-01")) -> Path:
    """Some examples of the built-in corpus as a JSONL data file."""
    chosen = [e for e in builtin_corpus() if e.id in ids]
    assert len(chosen) == len(ids)
    path.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in chosen), encoding="utf-8")
    return path


@pytest.fixture
def small_data(tmp_path: Path) -> Path:
    return write_examples(tmp_path / "data.jsonl")


@pytest.fixture(scope="session")
def bleu_card(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`evalstress card bleu --budget small` on the built-in corpus: (its folder, the output)."""
    root = tmp_path_factory.mktemp("bleu-card")
    out = root / "card"
    result = runner.invoke(app, ["card", "bleu", "--budget", "small", "--workers", "1",
                                 "--out", str(out), "--cache-dir", str(root / "cache")])
    assert result.exit_code == 0, result.output
    return out, result.output
