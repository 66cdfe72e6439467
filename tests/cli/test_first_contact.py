"""What a new user meets first: `run` without a data file runs on the built-in corpus and says
so, and the closing line names report.html, the file to open, first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app

runner = CliRunner()
CORPUS = Path(__file__).resolve().parents[2] / "src" / "evalstress" / "corpus" / "sample.jsonl"


def _text(output: str) -> str:
    return " ".join(output.split())  # rich wraps long lines at the console's width


def _corpus_rows() -> list[dict[str, object]]:
    return [json.loads(line) for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]


def test_quickstart_names_report_html_first(tmp_path: Path) -> None:
    out = tmp_path / "qs"
    result = runner.invoke(app, ["quickstart", "--limit", "2", "--out", str(out),
                                 "--cache-dir", str(tmp_path / "cache"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    said = _text(result.output)
    assert f"Wrote {out / 'report.html'}, {out / 'results.json'}, " in said
    assert (out / "report.html").is_file()


def test_run_without_data_uses_the_built_in_corpus_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "-e", "bleu", "-p", "truncation", "--seeds", "1",
                                 "--limit", "3", "--out", str(out), "--workers", "1",
                                 "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    rows = _corpus_rows()
    said = _text(result.output)
    assert (f"No data given: using the built-in corpus (3 of its {len(rows)} examples"
            in said)
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["counts"]["examples"] == 3
    assert results["config"]["data"] == "built-in corpus"
    examples = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    assert [e["id"] for e in examples] == [r["id"] for r in rows[:3]]
    assert f"Wrote {out / 'report.html'}, " in said


def test_the_whole_corpus_is_announced_with_its_size(tmp_path: Path) -> None:
    """A dry run plans without scoring: the announcement counts every example and task."""
    rows = _corpus_rows()
    tasks = {r["task"] for r in rows}
    result = runner.invoke(app, ["run", "-e", "bleu", "-p", "truncation", "--seeds", "1",
                                 "--dry-run", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert (f"No data given: using the built-in corpus ({len(rows)} examples of {len(tasks)} "
            "tasks, written for evalstress)" in _text(result.output))


def test_data_flags_without_data_are_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "-m", "hypothesis=summary", "-e", "bleu"])
    assert result.exit_code == 2
    assert "--map applies to a data file: give one" in _text(result.output)
    config = tmp_path / "c.yaml"
    config.write_text("task: summarization\n")
    result = runner.invoke(app, ["run", "-c", str(config), "-e", "bleu"])
    assert result.exit_code == 2
    assert f"{config}: field 'task' applies to a data file" in _text(result.output)


def test_run_help_says_what_runs_without_data() -> None:
    """The help's promise holds: the example it gives for a run without data runs (as a dry
    run here) on the built-in corpus, and says so."""
    result = runner.invoke(app, ["run", "--help"])
    assert result.exit_code == 0
    said = _text(result.output.replace("│", " "))
    assert "Without one, the run uses the built-in corpus" in said
    example = re.search(r"Without DATA, the run uses the built-in corpus, e\.g\. "
                         r"`evalstress run ([^`]*)`", said)
    assert example is not None, said
    args = example.group(1).split()
    assert not any(Path(a).suffix in {".jsonl", ".csv", ".parquet"} for a in args)  # no data
    rows = _corpus_rows()
    ran = runner.invoke(app, ["run", *args, "--limit", "2", "--dry-run", "--no-cache"])
    assert ran.exit_code == 0, ran.output
    out = _text(ran.output)
    assert f"No data given: using the built-in corpus (2 of its {len(rows)} examples" in out
    assert "Dry run: 2 examples" in out


@pytest.fixture(scope="module")
def one_seed_swaps(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The terminal output of ROUGE on swapped neighbours, one seed, two built-in examples."""
    out = tmp_path_factory.mktemp("swaps") / "run"
    result = runner.invoke(app, ["run", "-e", "rouge", "-p", "local-swap", "--seeds", "1",
                                 "--limit", "2", "--out", str(out), "--workers", "1",
                                 "--no-cache"])
    assert result.exit_code == 0, result.output
    return _text(result.output)


def test_one_blind_spot_is_counted_in_the_singular(one_seed_swaps: str) -> None:
    """ROUGE-1 counts words, not their order, so swapping neighbours cannot move it: its one
    blind spot among ROUGE's three aspects; ROUGE-2's word pairs break and it passes."""
    assert "2 of 3 tests pass; 1 blind spot found." in one_seed_swaps
    assert "2 examples, " in one_seed_swaps


def test_a_one_seed_run_says_one_seed_and_no_lower_is_better_legend(one_seed_swaps: str) -> None:
    """--seeds 1: the title counts one seed; ROUGE is higher-is-better, so no ↓ legend."""
    assert "mean score over 1 seed as noise grows" in one_seed_swaps
    assert "lower is better" not in one_seed_swaps


def test_help_leads_with_the_card() -> None:
    """`evalstress --help` says to start with a card, and lists the card command first."""
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    text = _text(result.output)
    start = text.index("Start with")
    assert text[start:].startswith("Start with evalstress card bleu --budget small")
    commands = result.output[result.output.index("Commands"):]
    listed = re.findall(r"^│ ([a-z][a-z-]+) ", commands, flags=re.M)
    assert listed[0] == "card", listed[:3]
