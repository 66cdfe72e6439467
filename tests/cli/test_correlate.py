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


def test_correlate_writes_and_prints_the_agreement_block(tmp_path: Path) -> None:
    from scipy import stats

    docs = tmp_path / "varied.jsonl"
    texts = {"x": "A dog ran.", "y": "The cat sat.", "z": "The cat sat on the mat."}
    docs.write_text("".join(json.dumps({"id": d, "references": ["The cat sat on the mat."],
                                        "systems": [{"system": s, "summary": texts[s],
                                                     "coherence": i}
                                                    for i, s in enumerate(texts)]}) + "\n"
                            for d in ("d1", "d2", "d3")))
    result = runner.invoke(app, ["correlate", str(docs), "-e", "chrf",
                                 "--human", "coherence", "--n-boot", "50", "--out",
                                 str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "Agreement with the human raters" in result.output
    written = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    block = written["analyses"]["correlation"]["agreement"]
    assert (block["items"], block["systems"]) == (3, 3)
    import pandas as pd

    scores = pd.read_parquet(tmp_path / "run" / "scores.parquet")
    wide = scores.pivot_table(index="doc_id", columns="system_id", values="score")
    item = next(r for r in block["rows"] if (r["level"], r["statistic"]) == ("item", "tau_b"))
    # every document rates x < y < z (coherence 0, 1, 2); scipy on the written scores
    expected = [stats.kendalltau(wide.loc[d, ["x", "y", "z"]], [0, 1, 2]).statistic
                for d in ("d1", "d2", "d3")]
    assert item["value"] == pytest.approx(float(pd.Series(expected).mean()))
    assert item["verdict"] == "inconclusive"  # 3 documents cannot decide anything


def test_the_summeval_agreement_command_quoted_on_the_card_page_parses() -> None:
    """docs/card.md quotes the command behind its SummEval agreement numbers inline (it reads
    the full public set, which the pages' runnable blocks may not): it must still parse."""
    import re

    from tests.test_reproductions_doc import check_values, parse_command

    page = (Path(__file__).parents[2] / "docs" / "card.md").read_text(encoding="utf-8")
    found = re.search(r"Made by `(evalstress correlate [^`]+)`", page)
    assert found, "docs/card.md no longer quotes the SummEval agreement command"
    name, ctx = parse_command(found.group(1))
    assert name == "correlate" and ctx.params["n_boot"] == 2000
    check_values(found.group(1), ctx)
