"""Command-line values and suite files a user gets wrong end in one clear line and exit code 2,
never a traceback; a suite's own settings win over defaults, and flags over both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app

runner = CliRunner()

TEXT = "Anna met Bo in Oslo on a cold day. They talked about the harbour for an hour."


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "hypothesis": TEXT, "references": [TEXT],
                                        "task": "summarization"}) + "\n" for i in range(3)))
    return path


def _fails_clearly(result: object, *needles: str) -> str:
    output = " ".join(result.output.split())  # type: ignore[attr-defined]
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    assert "Traceback" not in output
    for needle in needles:
        assert needle in output, output
    return output


@pytest.mark.parametrize("value", ["0", "-1"])
def test_limit_below_one_is_an_error(data: Path, tmp_path: Path, value: str) -> None:
    # before: --limit 0 ran every example and --limit -1 ran one
    result = runner.invoke(app, ["run", str(data), "-e", "bleu", "-p", "truncation",
                                 "--limit", value, "--out", str(tmp_path / "o")])
    _fails_clearly(result, "--limit")
    assert not (tmp_path / "o").exists()


def test_zero_seeds_is_an_error(data: Path, tmp_path: Path) -> None:
    # before: exit 0 and "0 of 0 tests"
    result = runner.invoke(app, ["run", str(data), "-e", "bleu", "--seeds", "0",
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, "--seeds")


@pytest.mark.parametrize("shard", ["3/2", "2/2", "a/2", "1/0", "1-2"])
def test_a_shard_that_does_not_exist_is_an_error(data: Path, tmp_path: Path, shard: str) -> None:
    result = runner.invoke(app, ["run", str(data), "-e", "bleu", "--shard", shard,
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, f"--shard '{shard}'")


def test_correlate_map_entry_without_equals_is_an_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d", "references": ["A b c."], "systems": [
        {"system": "s", "summary": "A b c.", "coherence": 3}]}) + "\n")
    result = runner.invoke(app, ["correlate", str(docs), "-e", "bleu", "-m", "references",
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, "--map 'references' must look like FIELD=NAME")


def _suite(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "my-suite.yaml"
    path.write_text(body)
    return path


@pytest.mark.parametrize(("body", "needles"), [
    ("perturbations:\n  truncation: {grid: [5, -1, 'abc']}\n",
     ["field 'perturbations.truncation.grid'", "5 is not a ratio in (0, 1]"]),
    ("perturbations: [truncation]\nseeds: 'abc'\n", ["field 'seeds'", "'abc'"]),
    ("perturbations: [truncation]\nseed: 3\n", ["unknown suite key 'seed'",
                                                "Did you mean 'seeds'?"]),
    ("perturbations:\n  truncation: {ratoi: 3}\n",
     ["field 'perturbations.truncation'", "unknown parameter 'ratoi'", "Did you mean 'ratio'?"]),
    ("perturbations: [truncation]\nanalyses: [blindspt]\n",
     ["field 'analyses'", "Did you mean 'blindspot'?"]),
    ("perturbations: [truncation]\noptions: {rel_tl: 0.5}\n",
     ["field 'options'", "unknown option 'rel_tl'", "Did you mean 'rel_tol'?"]),
])
def test_suite_file_errors_name_the_file_and_key(data: Path, tmp_path: Path, body: str,
                                                  needles: list[str]) -> None:
    suite = _suite(tmp_path, body)
    result = runner.invoke(app, ["run", str(data), "-e", "bleu", "--suite", str(suite),
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, str(suite), *needles)


def test_analyses_as_one_string_runs_that_analysis(data: Path, tmp_path: Path) -> None:
    # before: "unknown analysis b, l, i, n, ..."
    suite = _suite(tmp_path, "perturbations:\n  truncation: {grid: [0.5]}\nseeds: 1\n"
                             "analyses: blindspot\n")
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(data), "-e", "bleu", "--suite", str(suite),
                                 "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert list(json.loads((out / "results.json").read_text())["analyses"]) == ["blindspot"]


def _tolerance(out: Path) -> float:
    return json.loads((out / "results.json").read_text())["analyses"]["blindspot"][
        "tolerance"]["rel_tol"]


def test_the_suites_rel_tol_wins_over_the_default_and_the_flag_over_both(
        data: Path, tmp_path: Path) -> None:
    suite = _suite(tmp_path, "perturbations:\n  truncation: {grid: [0.5]}\nseeds: 1\n"
                             "options: {rel_tol: 0.25}\n")
    base = ["run", str(data), "-e", "bleu", "--suite", str(suite), "--quiet"]
    assert runner.invoke(app, [*base, "--out", str(tmp_path / "a")]).exit_code == 0
    assert _tolerance(tmp_path / "a") == 0.25  # before: the CLI's 0.01 replaced it
    assert runner.invoke(app, [*base, "--rel-tol", "0.1", "--out", str(tmp_path / "b")]
                         ).exit_code == 0
    assert _tolerance(tmp_path / "b") == 0.1
    plain = _suite(tmp_path, "perturbations:\n  truncation: {grid: [0.5]}\nseeds: 1\n")
    assert runner.invoke(app, ["run", str(data), "-e", "bleu", "--suite", str(plain), "--quiet",
                               "--out", str(tmp_path / "c")]).exit_code == 0
    assert _tolerance(tmp_path / "c") == 0.01  # blindspot's documented default


def test_unknown_evaluator_parameter_is_an_error_not_a_traceback(data: Path,
                                                                 tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(data), "-e", "rouge:use_stemer=true",
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, "evaluator 'rouge'", "unknown parameter 'use_stemer'",
                   "Did you mean 'use_stemmer'?")


def test_missing_idf_corpus_names_the_path_before_any_work(data: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(data), "-e",
                                 "bertscore:idf=true,idf_corpus=/nope.txt",
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, "'idf_corpus' = '/nope.txt'", "no such file")
    assert not (tmp_path / "o").exists()


def test_a_csv_with_a_byte_order_mark_runs(tmp_path: Path) -> None:
    # spreadsheet exports start with a BOM; before, "'hypothesis' is missing"
    data = tmp_path / "d.csv"
    data.write_bytes("hypothesis,references\n".encode("utf-8-sig")
                     + f'"{TEXT}","{TEXT}"\n'.encode())
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(data), "-e", "bleu", "-p", "truncation",
                                 "--seeds", "1", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results.json").read_text())["counts"]["examples"] == 1


def test_an_unknown_config_field_suggests_the_known_one(data: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("evaluator: [bleu]\n")
    result = runner.invoke(app, ["run", str(data), "--config", str(config),
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, f"{config}: unknown config field 'evaluator'",
                   "Did you mean 'evaluators'?")


@pytest.mark.parametrize(("field", "value"), [("limit", "0"), ("limit", "abc"),
                                              ("rel_tol", "-0.5"), ("seeds", "0")])
def test_bad_config_values_name_the_file_and_field(data: Path, tmp_path: Path, field: str,
                                                   value: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"evaluators: [bleu]\n{field}: {value}\n")
    result = runner.invoke(app, ["run", str(data), "--config", str(config),
                                 "--out", str(tmp_path / "o")])
    _fails_clearly(result, str(config), f"field '{field}'")


def test_perturbations_given_by_flag_keep_the_suites_options(data: Path, tmp_path: Path) -> None:
    suite = _suite(tmp_path, "perturbations:\n  truncation: {grid: [0.5]}\nseeds: 1\n"
                             "options: {rel_tol: 0.25}\n")
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(data), "-e", "bleu", "--suite", str(suite), "-p",
                                 "token-drop", "--seeds", "1", "--quiet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert _tolerance(out) == 0.25
