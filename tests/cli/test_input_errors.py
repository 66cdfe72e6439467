"""Bad input files on the command line: each is one error line, exit 2, naming the file and where
in it, before any work; an imported perturbation the suite lacks is scored, as it is counted."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evalstress.cli import app

runner = CliRunner(env={"COLUMNS": "1000"})  # an error line is never wrapped
ROWS = [
    {"id": "a", "hypothesis": "The bridge opened in 1898. It has three stone arches over the "
     "river.", "references": ["The old bridge opened in 1898."]},
    {"id": "b", "hypothesis": "The moss grows on the cliffs of Ardvale. Fog feeds it every "
     "night.", "references": ["Fog feeds the moss."]},
]


def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), "utf-8")
    return path


def refused(tmp_path: Path, args: list[str]) -> str:
    """Run `evalstress run` expecting a refusal before any work: the error as one line."""
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", *args, "-e", "rep", "-p", "negation", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert not out.exists()
    return result.output.strip()


def test_a_folder_given_as_data_cannot_be_read(tmp_path: Path) -> None:
    folder = tmp_path / "adir.jsonl"
    folder.mkdir()
    text = refused(tmp_path, [str(folder)])
    assert text == f"error: {folder}: is a folder, so it cannot be read as data; give the path " \
                   "of a file"


def test_a_mapping_that_names_no_field_is_refused_as_a_mapping(tmp_path: Path) -> None:
    text = refused(tmp_path, [str(data_file(tmp_path)), "-m", "hypothesis="])
    assert text.startswith("error: --map 'hypothesis=': names no field")


def test_a_line_nested_too_deeply_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": "x", "hypothesis": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
                    "utf-8")
    assert refused(tmp_path, [str(path)]).startswith(f"error: {path}, line 1: is nested too "
                                                     "deeply")


def test_a_raw_tab_in_a_jsonl_text_is_named_by_line_and_column(tmp_path: Path) -> None:
    path = data_file(tmp_path)
    path.write_text(path.read_text("utf-8") + '{"id": "c", "hypothesis": "a\tb"}\n', "utf-8")
    assert refused(tmp_path, [str(path)]).startswith(
        f"error: {path}, line 3, column 29: invalid control character in a text (JSON needs a "
        "line break written as \\n and a tab as \\t)")


def test_files_that_are_not_utf8_are_named_with_line_and_offset(tmp_path: Path) -> None:
    data = data_file(tmp_path)
    latin = "caf\xe9".encode("latin-1")
    config = tmp_path / "run.yaml"
    config.write_bytes(b"seeds: 1\n# " + latin + b"\n")
    suite = tmp_path / "suite.yaml"
    suite.write_bytes(b"name: s\nperturbations: [negation]\n# " + latin + b"\n")
    prompts = tmp_path / "prompts.yaml"
    prompts.write_bytes(b"continuation:\n  instruction: " + latin + b"\n")
    variants = tmp_path / "variants.csv"
    variants.write_bytes(b"example_id,perturbation,text\na,my-attack," + latin + b"\n")
    # offsets counted by hand: the bytes before the Latin-1 e-acute
    cases = [(["--config", str(config)], config, 2, 14),
             (["--suite", str(suite)], suite, 3, 39),
             (["--perturbation-prompts", str(prompts)], prompts, 2, 32),
             (["--variants", str(variants)], variants, 2, 44)]
    for flags, path, line, offset in cases:
        text = refused(tmp_path, [str(data), *flags])
        assert f"{path}, line {line}: is not UTF-8 text: byte 0xE9 at byte offset {offset} " \
               "(invalid continuation byte); save the file as UTF-8" in text, text


def test_an_imported_seed_that_is_no_whole_number_is_refused(tmp_path: Path) -> None:
    variants = tmp_path / "v.jsonl"
    variants.write_text('{"example_id": "a", "perturbation": "negation", "seed": 1.7, "text": '
                        '"The bridge did not open in 1898."}\n', "utf-8")
    text = refused(tmp_path, [str(data_file(tmp_path)), "--variants", str(variants)])
    assert text == (f"error: {variants}, line 1, field 'seed': a seed must be a whole number "
                    ">= 0, got 1.7")


def test_an_imported_perturbation_the_suite_lacks_is_scored_as_counted(tmp_path: Path) -> None:
    variants = tmp_path / "v.jsonl"
    variants.write_text(json.dumps({"example_id": "a", "perturbation": "my-attack", "text":
                                    "The bridge closed in 1898. It has three stone arches over "
                                    "the river."}) + "\n", "utf-8")
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(data_file(tmp_path)), "-e", "rep", "-p", "negation",
                                 "--seeds", "1", "--variants", str(variants), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"Imported 1 variants from {variants} (my-attack 1)" in " ".join(result.output.split())
    scores = pd.read_parquet(out / "scores.parquet")
    mine = scores[scores["perturbation"] == "my-attack"]
    assert len(mine) == 3 and set(mine["aspect"]) == {"rep-2", "rep-3", "rep-4"}
    assert set(mine["example_id"]) == {"a"}


def test_export_refuses_a_variants_file_that_is_not_ours(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), run_dir / "variants.parquet")
    out = tmp_path / "v.csv"
    result = runner.invoke(app, ["export", str(run_dir), "--variants", str(out)])
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert "\n" not in text
    assert text.startswith(f"error: {run_dir / 'variants.parquet'}: is not a variants file "
                           "written by evalstress: column 'example_id' is missing;")
    assert not out.exists()


DEEP = "[" * 100_000 + "]" * 100_000  # parses to nothing deeper than Python's recursion limit


@pytest.mark.parametrize("command", [["compare", "{card}", "{card}"], ["report", "{run}"],
                                     ["check", "{run}"], ["compare", "{run}", "{run}"],
                                     ["combine", "{run}"]])
def test_a_file_nested_100_000_levels_deep_is_one_error_and_exit_2(
        tmp_path: Path, command: list[str]) -> None:
    """A card.json or results.json nested 100,000 levels deep ended in a RecursionError, exit 4."""
    (tmp_path / "card").mkdir()
    (tmp_path / "run").mkdir()
    card, results = tmp_path / "card" / "card.json", tmp_path / "run" / "results.json"
    card.write_text(DEEP, "utf-8")
    results.write_text('{"analyses": {}, "x": ' + DEEP + "}", "utf-8")
    args = [a.format(card=card, run=tmp_path / "run") for a in command]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    named = card if "{card}" in command else results
    assert f"{named}: is nested too deeply" in result.output


def test_a_card_cut_short_is_said_to_be_a_json_file_cut_short(tmp_path: Path) -> None:
    """A truncated card.json was described as a broken JSONL line."""
    card = tmp_path / "card.json"
    card.write_text('{"evaluator": {"label": "bleu", "aspects": ["bleu"]}, "gate": {', "utf-8")
    result = runner.invoke(app, ["compare", str(card), str(card)])
    assert result.exit_code == 2, result.output
    assert "the file ends before its JSON is complete" in result.output
    assert "JSONL" not in result.output


@pytest.mark.parametrize("option", ["--config", "--suite", "--perturbation-prompts"])
def test_a_yaml_file_nested_100_000_levels_deep_is_one_error_and_exit_2(
        tmp_path: Path, option: str) -> None:
    """YAML is read as JSON is, bounded in depth: this was a RecursionError, exit 4."""
    deep = tmp_path / "deep.yaml"
    deep.write_text(DEEP, "utf-8")
    result = runner.invoke(app, ["run", str(data_file(tmp_path)), "-e", "bleu", option, str(deep),
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert f"{deep}" in result.output and "nested too deeply" in result.output


def test_a_reference_metric_over_data_without_references_is_one_line_before_any_work(
        tmp_path: Path) -> None:
    """It perturbed and asked for every score, then ended in exit 3 (100% missing)."""
    path = tmp_path / "norefs.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "hypothesis": r["hypothesis"]}) + "\n"
                            for r in ROWS), "utf-8")
    out, cache = tmp_path / "out", tmp_path / "cache"
    result = runner.invoke(app, ["run", str(path), "-e", "chrf", "-p", "truncation", "--out",
                                 str(out), "--cache-dir", str(cache)])
    assert result.exit_code == 2, result.output
    assert result.output == (f"error: {path}: chrf needs references, and none of the 2 "
                             "examples has one: map the field that holds them (--map "
                             "references=FIELD), or choose an evaluator that needs none\n")
    assert not out.exists() and not cache.exists()
    assert not any(p.name.startswith(".out") for p in tmp_path.iterdir())  # no staging folder
