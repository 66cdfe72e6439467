"""Commands on finished runs (report, check, combine, export, compare; cli/rundir.py): an
output that cannot be written ends the command at once, in one line naming it, before any run
is read; a run directory that is broken or incomplete is refused in one line naming the file
and what is wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.report.schema import schema_problems

runner = CliRunner()


@pytest.mark.parametrize(("args", "flag"), [
    (["compare", "{missing}", "{missing}", "--out", "{folder}"], "--out"),
    (["report", "{missing}", "--out", "{folder}"], "--out"),
    (["check", "{missing}", "--junit", "{folder}"], "--junit"),
    (["export", "{missing}", "--variants", "{folder}"], "--variants"),
])
def test_an_output_file_where_a_folder_stands_is_refused_first(
        tmp_path: Path, args: list[str], flag: str) -> None:
    folder = tmp_path / "taken.html"
    folder.mkdir()
    filled = [a.format(missing=tmp_path / "no-run", folder=folder) for a in args]
    result = runner.invoke(app, filled)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"{flag} {folder}: is a folder, not a file" in said
    assert "no-run" not in said  # refused before the run directory was looked at


def test_a_run_directory_where_a_file_stands_is_refused(tmp_path: Path) -> None:
    taken = tmp_path / "out"
    taken.write_text("not a folder")
    result = runner.invoke(app, ["run", "--limit", "1", "-e", "bleu", "--out", str(taken)])
    assert result.exit_code == 2, result.output
    assert f"--out {taken}: exists and is not a directory" in " ".join(result.output.split())


# --- reading a finished run: a real fresh one is read by every command, a broken or incomplete
# one is refused by each (exit 2, one line naming the file and what is wrong) ----------------

READERS = ("check", "report", "compare", "combine")


def says(output: str, *parts: str) -> bool:
    """Whether the output holds each part, wherever the terminal width broke its lines."""
    flat = "".join(output.split())
    return all("".join(part.split()) in flat for part in parts)


def read(command: str, run: Path, tmp_path: Path, fresh: Path | None = None) -> Any:
    """`command` on `run` (compare: the fresh run against it), writing under tmp_path."""
    args = {"check": ["check", str(run), "--max-failures", "1000"],
            "report": ["report", str(run), "--out", str(tmp_path / "report.html")],
            "compare": ["compare", str(fresh or run), str(run), "--out",
                        str(tmp_path / "compare.html")],
            "combine": ["combine", str(run)]}[command]
    return runner.invoke(app, args)


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `evalstress quickstart --limit 2` writes, made by this version."""
    out = tmp_path_factory.mktemp("quickstart") / "run"
    result = runner.invoke(app, ["quickstart", "--limit", "2", "--out", str(out), "--quiet",
                                 "--no-cache"])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
@pytest.mark.parametrize("command", [*READERS, "export"])
def test_a_fresh_run_is_read_by_every_command(fresh_run: Path, tmp_path: Path,
                                              command: str) -> None:
    if command == "export":
        result = runner.invoke(app, ["export", str(fresh_run), "--variants",
                                     str(tmp_path / "v.jsonl")])
    else:
        result = read(command, fresh_run, tmp_path)
    assert result.exit_code == 0, result.output
    assert "error" not in result.output


def _edit(results: dict[str, Any], path: list[Any], value: Any = None) -> None:
    *parents, last = path
    for key in parents:
        results = results[key]
    if value is None:
        del results[last]
    else:
        results[last] = value


BROKEN = {  # a damage -> what the one line says after the run's path
    "no-analyses": (["analyses"], None, "analyses: missing (a run always has it)"),
    "no-evaluators": (["evaluators"], None, "evaluators: missing (config.evaluators lists "
                                             "bleu, chrf, rouge: the run scored them)"),
    "no-evaluator-entries": (["evaluators"], {}, "evaluators: empty (config.evaluators lists "
                                                 "bleu, chrf, rouge: the run scored them)"),
    "major-2": (["schema_version"], "2.0", "schema_version 2.0 is newer than this evalstress "
                                           "reads (1.x)"),
    "off-schema": (["analyses", "blindspot", "rows", 0, "verdict"], "maybe",
                   'analyses.blindspot.rows[0].verdict: "maybe" is not one of pass, fail, '
                   "inconclusive"),
}


@pytest.mark.slow
@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("damage", list(BROKEN))
def test_a_damaged_results_json_is_refused(fresh_run: Path, tmp_path: Path, command: str,
                                           damage: str) -> None:
    path, value, message = BROKEN[damage]
    run = tmp_path / "run"
    shutil.copytree(fresh_run, run)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    _edit(results, path, value)
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    result = read(command, run, tmp_path, fresh_run)
    assert result.exit_code == 2, result.output
    assert says(result.output, f"error: {run / 'results.json'}: {message}")
    assert not (tmp_path / f"{command}.html").exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("missing", ["scores.parquet", "variants.parquet"])
def test_a_run_directory_without_its_data_files_is_refused(
        fresh_run: Path, tmp_path: Path, command: str, missing: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(fresh_run, run)
    (run / missing).unlink()
    result = read(command, run, tmp_path, fresh_run)
    assert result.exit_code == 2, result.output
    assert says(result.output, f"error: {run / missing}: missing, so the run directory is "
                "incomplete (a stress-test run writes scores.parquet and variants.parquet "
                "beside results.json)")


@pytest.fixture(scope="module")
def correlate_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`evalstress correlate` on three documents of three systems with human scores."""
    folder = tmp_path_factory.mktemp("correlate")
    data = folder / "docs.jsonl"
    words = ["the", "council", "approved", "a", "new", "budget", "for", "the", "city",
             "schools", "on", "monday"]
    docs = [{"id": f"d{d}", "source": " ".join(words), "references": [" ".join(words[d:])],
             "systems": [{"system": f"s{s}", "summary": " ".join(words[s + d:]),
                          "coherence": 5 - s, "consistency": 4 - s, "fluency": 3 + s,
                          "relevance": 5 - s - d} for s in range(3)]} for d in range(3)]
    data.write_text("".join(json.dumps(doc) + "\n" for doc in docs), encoding="utf-8")
    out = folder / "run"
    result = runner.invoke(app, ["correlate", str(data), "-e", "bleu", "--n-boot", "20",
                                 "--out", str(out), "--quiet", "--no-cache"])
    assert result.exit_code == 0, result.output
    whole = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert "schema_version" in whole and schema_problems(whole) == []  # the run's own layout
    return out


@pytest.mark.slow
def test_a_correlation_study_is_reported_and_has_nothing_to_check(correlate_run: Path,
                                                                  tmp_path: Path) -> None:
    """report reads it as before; check, combine and compare read test verdicts, of which a
    study has none: a usage error, not a pass; without its scores it is incomplete."""
    report = read("report", correlate_run, tmp_path)
    assert report.exit_code == 0, report.output
    assert "<section id='correlation'>" in (tmp_path / "report.html").read_text("utf-8")
    for command in ("check", "combine", "compare"):
        result = read(command, correlate_run, tmp_path)
        assert result.exit_code == 2, (command, result.output)
        assert says(result.output, f"nothing to {command} in {correlate_run}: the run has "
                    "no test verdicts (its analyses: correlation;")
    run = tmp_path / "run"
    shutil.copytree(correlate_run, run)
    (run / "scores.parquet").unlink()
    result = read("report", run, tmp_path)
    assert result.exit_code == 2
    assert says(result.output, f"{run / 'scores.parquet'}: missing, so the run directory is "
                "incomplete (this run writes scores.parquet beside results.json)")
