from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.variantfile import read_records

runner = CliRunner()


def test_quickstart_writes_results_and_score_table(tmp_path: Path) -> None:
    out = tmp_path / "qs"
    result = runner.invoke(app, ["quickstart", "--limit", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Blind-spot tests" in result.output
    results = json.loads((out / "results.json").read_text())
    assert results["counts"]["examples"] == 3
    rows = results["analyses"]["blindspot"]["rows"]
    assert {r["evaluator"] for r in rows} == {"bleu", "chrf", "rouge"}
    assert all("passed" in r for r in rows)
    table = pd.read_parquet(out / "scores.parquet")
    assert {"example_id", "perturbation", "severity", "seed", "score", "status"} <= set(table)
    assert len(list(read_records(out / "variants.parquet"))) == results["counts"]["variants"]


def test_run_with_config_file_and_flags(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    pd.DataFrame([{"id": i, "summary": f"Anna met Bo in Oslo on day {i}. They talked a lot.",
                   "gold": "Anna and Bo met in Oslo and talked."} for i in range(3)]).to_csv(
        data, index=False)
    config = tmp_path / "c.yaml"
    config.write_text(f"data: {data}\nmap: [hypothesis=summary, references=gold]\n"
                      "task: summarization\nevaluators: [rouge]\nseeds: 2\n")
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "--config", str(config), "-p", "truncation",
                                 "-p", "token-drop", "--out", str(out)])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["suite"]["seeds"] == [0, 1]
    assert set(results["suite"]["perturbations"]) == {"truncation", "token-drop"}
    assert results["evaluators"]["rouge"]["signature"]["evaluator"] == "rouge"


def test_bad_data_error_names_file_line_and_field(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"hypothesis": "fine"}\n{"text": "x"}\n')
    result = runner.invoke(app, ["run", str(data), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert f"{data}, line 2, field 'hypothesis': is missing" in " ".join(result.output.split())


def test_unknown_names_get_suggestions(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"hypothesis": "A text. Another one.", "references": ["A text."]}\n')
    result = runner.invoke(app, ["run", str(data), "-e", "rogue"])
    assert result.exit_code == 2 and "Did you mean 'rouge'" in result.output
    result = runner.invoke(app, ["run", str(data), "-p", "truncate"])
    assert result.exit_code == 2 and "truncation" in result.output


def test_list_shows_perturbations_and_evaluators() -> None:
    result = runner.invoke(app, ["list", "perturbations", "--json"])
    assert result.exit_code == 0
    names = {row["name"] for row in json.loads(result.output)}
    assert {"truncation", "token-drop", "repeated-token", "local-swap", "article-removal",
            "noised-punctuation", "sentence-switching", "repetition"} <= names
    result = runner.invoke(app, ["list", "evaluators", "--json"])
    assert {"bleu", "chrf", "ter", "rouge", "rep", "python", "command"} <= set(
        json.loads(result.output))


def test_sharded_runs_merge_into_one_run_that_scores_nothing_again(tmp_path: Path) -> None:
    base = ["--limit", "6", "-p", "truncation", "--seeds", "1", "-e", "rouge", "--quiet",
            "--workers", "1"]  # shards and merging, not the pool: one process each
    data = str(Path(__file__).resolve().parents[2] / "src/evalstress/corpus/sample.jsonl")
    for i in range(2):
        result = runner.invoke(app, ["run", data, *base, "--shard", f"{i}/2",
                                     "--cache-dir", str(tmp_path / f"c{i}"),
                                     "--out", str(tmp_path / f"o{i}")])
        assert result.exit_code == 0, result.output
    merged = runner.invoke(app, ["cache", "merge", str(tmp_path / "c0"), str(tmp_path / "c1"),
                                 "--cache-dir", str(tmp_path / "all")])
    assert merged.exit_code == 0, merged.output
    result = runner.invoke(app, ["run", data, *base, "--cache-dir", str(tmp_path / "all"),
                                 "--out", str(tmp_path / "whole")])
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "whole" / "results.json").read_text())["evaluators"]["rouge"]
    assert stats["stats"]["scored"] == 0
    assert stats["stats"]["cached"] == stats["stats"]["distinct"] > 0


def test_unknown_analysis_fails_before_any_scoring(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text("name: x\nperturbations: [truncation]\nanalyses: [blindspot, nonsense]\n")
    data = str(Path(__file__).resolve().parents[2] / "src/evalstress/corpus/sample.jsonl")
    result = runner.invoke(app, ["run", data, "--limit", "2", "--suite", str(suite),
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "unknown analysis 'nonsense'" in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()
