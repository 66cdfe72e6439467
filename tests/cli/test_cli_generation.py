"""The command line's two ways into LLM-written attacks: --generator, or --variants FILE."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.variantfile import read_records
from evalstress.llm.fake_server import FakeServer
from tests.llm_fakes import continue_with

runner = CliRunner()
DATA = [
    {"id": "a", "task": "summarization", "hypothesis": "The bridge opened in 1898. It has three "
     "stone arches over the river.", "references": ["The old bridge opened in 1898."]},
    {"id": "b", "task": "qa", "hypothesis": "The moss grows on the cliffs of Ardvale. Fog feeds "
     "it every night.", "references": ["Fog feeds the moss."]},
]


def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in DATA), "utf-8")
    return path


def test_llm_suite_without_generator_stops_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(data_file(tmp_path)), "--suite", "criteria-full",
                                 "-e", "bleu", "--out", str(out)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "suite 'criteria-full' plans 28 LLM-written variants" in text
    assert "pass --generator" in text and "--variants FILE" in text
    assert not out.exists()


def test_run_with_a_generator_reports_acceptance(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeServer(responder=continue_with()) as server:
        result = runner.invoke(app, [
            "run", str(data_file(tmp_path)), "-p", "continuation", "-p", "fact-negation",
            "-e", "rouge", "--seeds", "1", "--out", str(out), "--cache-dir", str(tmp_path / "c"),
            "--generator", f"model=fake,base_url={server.base_url},max_attempts=1",
            "--max-reasks", "1"])
        assert result.exit_code == 0, result.output
        calls = server.calls
    assert "LLM-written perturbations" in result.output
    block = json.loads((out / "results.json").read_text())["generation"]
    assert block["max_reasks"] == 1 and block["usage"]["calls"] == calls
    continuation, negation = block["perturbations"]["continuation"], \
        block["perturbations"]["fact-negation"]
    assert continuation["accepted"] == 2 and continuation["acceptance_rate"] == 1.0
    # a continuation answer is no negation: rejected, re-asked once, then skipped
    assert negation["accepted"] == 0 and negation["asks"] == 4
    assert negation["rejections"] == {"too-long": 4}  # bounds first: +8 words on 13
    lines = list(read_records(out / "variants.parquet"))
    assert {line["method"] for line in lines} == {"llm"}
    assert all(line["provenance"]["model"] == "fake" for line in lines)
    skips = (out / "skips.jsonl").read_text()
    assert "no acceptable rewrite in 2 asks; last: too-long: length change 0.62 is above 0.30" in skips


def test_dry_run_counts_generation_calls_and_tokens(tmp_path: Path) -> None:
    with FakeServer(responder=continue_with()) as server:
        result = runner.invoke(app, [
            "run", str(data_file(tmp_path)), "-p", "continuation", "-p", "hypernym",
            "-e", "bleu", "--seeds", "2", "--dry-run", "--cache-dir", str(tmp_path / "c"),
            "--generator", f"model=fake,base_url={server.base_url}"])
        assert server.calls == 0
    assert result.exit_code == 0, result.output
    assert "generator fake" in result.output
    assert "8 LLM-written variants planned" in " ".join(result.output.split())


def test_imported_variants_need_no_generator(tmp_path: Path) -> None:
    variants = tmp_path / "v.csv"
    variants.write_text("example_id,perturbation,severity,text\n"
                        "a,hypernym,default,The structure opened in 1898. It has three stone "
                        "arches over the river.\n"
                        "b,hypernym,default,The plant grows on the cliffs of Ardvale. Fog feeds "
                        "it every night.\n", "utf-8")
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(data_file(tmp_path)), "-p", "hypernym", "-e", "rouge",
                                 "--seeds", "1", "--variants", str(variants), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"Imported 2 variants from {variants}" in " ".join(result.output.split())
    results = json.loads((out / "results.json").read_text())
    assert results["generation"]["imported"]["variants"] == 2
    assert results["counts"]["variants"] == 2


def test_variant_file_errors_are_clear(tmp_path: Path) -> None:
    variants = tmp_path / "v.jsonl"
    variants.write_text('{"example_id": "zz", "perturbation": "hypernym", "text": "x"}\n', "utf-8")
    result = runner.invoke(app, ["run", str(data_file(tmp_path)), "-p", "hypernym",
                                 "--variants", str(variants)])
    assert result.exit_code == 2
    assert f"{variants}, line 1, field 'example_id': example id 'zz' matches no example" in \
        " ".join(result.output.split())


def test_prompt_file_errors_name_the_file(tmp_path: Path) -> None:
    prompts = tmp_path / "p.yaml"
    prompts.write_text("hypernym:\n  instructions: x\n", "utf-8")
    result = runner.invoke(app, ["run", str(data_file(tmp_path)), "-p", "hypernym",
                                 "--perturbation-prompts", str(prompts)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert f"{prompts}, attack 'hypernym', field 'instructions': unknown field" in text
    assert "did you mean 'instruction'" in text
