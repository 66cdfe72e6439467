"""`evalstress run --protocol paper`: the paper suite of the task, the protocol in results.json,
and no set-level score against the gold set."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.variantfile import read_records

runner = CliRunner()


def test_protocol_paper_on_summeval_picks_the_paper_suite(tmp_path: Path,
                                                          shared_data: Path) -> None:
    out = tmp_path / "paper"
    result = runner.invoke(app, [
        "run", str(shared_data / "summeval.jsonl"), "-m", "hypothesis=highlight",
        "-m", "references=references", "--task", "summarization", "--limit", "3",
        "--seeds", "1", "-e", "rouge", "--protocol", "paper", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["protocol"] == "paper"
    assert results["suite"]["name"] == "paper-summarization"
    assert results["suite"]["protocol"] == "paper"
    blind = results["analyses"]["blindspot"]
    assert blind["protocol"] == "paper" and blind["strict"] is True
    assert results["suite"]["perturbations"]["token-drop"]["grid"][0] == 0.05
    rows = [r for r in blind["rows"] if r["perturbation"] == "truncation"]
    assert rows and all(r["tolerance"] == 0.0 for r in rows)


def test_protocol_paper_on_another_suite_keeps_its_grids(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "hypothesis": f"Anna met Bo in Oslo on "
                                        f"day {i}. They talked a lot about the weather.",
                                        "references": ["Anna and Bo met in Oslo."]}) + "\n"
                            for i in range(3)))
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", str(data), "--task", "summarization", "-e", "rouge",
                                 "--suite", "blindspot", "--protocol", "paper", "--seeds", "1",
                                 "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["suite"]["name"] == "blindspot"
    assert results["suite"]["perturbations"]["truncation"]["grid"] == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert results["analyses"]["blindspot"]["protocol"] == "paper"


def test_protocol_paper_refuses_mauve_against_the_gold_set(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "1", "hypothesis": "A text.", "references": ["B."]}) + "\n")
    result = runner.invoke(app, ["run", str(data), "--task", "open-ended", "-e", "mauve",
                                 "--protocol", "paper", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "reference_set" in result.output
    bad = runner.invoke(app, ["run", str(data), "--task", "open-ended", "--protocol", "exact",
                              "--out", str(tmp_path / "r")])
    assert bad.exit_code == 2
    assert "--protocol: expected one of default, paper (got 'exact')" in bad.output


THREE = ("The council met on Monday. It approved the new harbour bridge plan. Work will start "
         "in the spring.")


def _variants(out: Path) -> list[dict[str, object]]:
    return list(read_records(out / "variants.parquet"))


def test_protocol_paper_runs_paper_000_attacks_by_that_papers_rules(tmp_path: Path) -> None:
    """Paper 000's code applies each rule attack once per text: sentence deletion drops the last
    sentence. Under --protocol paper the graded `criteria-rules` suite runs that way: severity
    `paper`, one seed; the last sentence of THREE is 'Work will start in the spring.'"""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "hypothesis": THREE, "references": [THREE]}) + "\n")
    out = tmp_path / "paper000"
    result = runner.invoke(app, ["run", str(data), "--task", "summarization", "-e", "rouge",
                                 "--suite", "criteria-rules", "--protocol", "paper",
                                 "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    made = _variants(out)
    assert {(v["perturbation"], v["severity"], v["seed"]) for v in made} <= {
        (name, "paper", 0) for name in ("sentence-exchange", "word-exchange",
                                        "spelling-mistake", "sentence-deletion")}
    deleted = next(v for v in made if v["perturbation"] == "sentence-deletion")
    assert deleted["text"] == "The council met on Monday. It approved the new harbour bridge plan."
    suite = json.loads((out / "results.json").read_text())["suite"]
    assert suite["seeds"] == [0] and suite["protocol"] == "paper"
    # --seeds still wins over the protocol's one seed
    again = runner.invoke(app, ["run", str(data), "--task", "summarization", "-e", "rouge",
                                "--suite", "criteria-rules", "--protocol", "paper", "--seeds",
                                "2", "--out", str(tmp_path / "two"), "--quiet"])
    assert again.exit_code == 0, again.output
    assert {v["seed"] for v in _variants(tmp_path / "two")} == {0, 1}


def test_protocol_paper_builds_one_dhp_set_per_perturbation(tmp_path: Path) -> None:
    """Paper 003 builds one perturbed set per method: under --protocol paper the `dhp` suite
    runs one seed where its default averages five."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "hypothesis": THREE, "references": [THREE]}) + "\n")
    runs = {}
    for protocol in ("default", "paper"):
        out = tmp_path / protocol
        result = runner.invoke(app, ["run", str(data), "--task", "summarization", "-e", "rouge",
                                     "--suite", "dhp", "--protocol", protocol, "--out", str(out),
                                     "--quiet"])
        assert result.exit_code == 0, result.output
        runs[protocol] = _variants(out)
    assert {v["seed"] for v in runs["default"]} == {0, 1, 2, 3, 4}
    assert {v["seed"] for v in runs["paper"]} == {0}
    units = {(v["perturbation"], v["severity"]) for v in runs["paper"]}
    assert len(units) == len(runs["paper"])  # one text per perturbation and severity
