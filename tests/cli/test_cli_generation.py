"""The command line's two ways into LLM-written attacks: --generator, or --variants FILE."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.variantfile import read_records
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.perturb.precision import precision_table
from tests.llm_fakes import continue_with, is_verifier, labelled_originals, labelled_writer

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


# --- variants nothing verified ----------------------------------------------------------------

BELOW_FLOOR = ("uncommon-phrase", "rewriting-and-insertion")


def labelled_run(tmp_path: Path, out: Path, server: FakeServer, *extra: str):  # type: ignore[no-untyped-def]
    """A criteria-full run on two texts of the labelled set, the two attacks below the floor
    written by a model that gives their correct labelled replies (which pass the checks), and a
    rule-based attack beside them."""
    data = tmp_path / "labelled.jsonl"
    originals = labelled_originals()
    data.write_text("".join(json.dumps({"id": key, "task": originals[key][0],
                                        "hypothesis": originals[key][1],
                                        "references": [originals[key][1]]}) + "\n"
                            for key in ("library", "tunnel")), "utf-8")
    config = tmp_path / "config.yaml"
    config.write_text("options:\n  aspect_map: {bleu: simplicity}\n", "utf-8")
    return runner.invoke(app, [
        "run", str(data), "--suite", "criteria-full", "-p", BELOW_FLOOR[0], "-p", BELOW_FLOOR[1],
        "-p", "word-exchange", "-e", "bleu", "--seeds", "1", "--out", str(out),
        "--cache-dir", str(tmp_path / "c"), "--config", str(config), "--generator",
        f"model=fake,base_url={server.base_url},max_attempts=1", *extra])


def test_variants_below_the_floor_are_unverified_and_kept_out_of_the_verdicts(
        tmp_path: Path) -> None:
    out, kept = tmp_path / "out", tmp_path / "kept"
    with FakeServer(responder=labelled_writer()) as server:
        result = labelled_run(tmp_path, out, server)
        again = labelled_run(tmp_path, kept, server, "--include-unverified")
    assert result.exit_code == 0, result.output
    assert again.exit_code == 0, again.output
    # variants.parquet: every LLM-written variant unverified, with its attack's precision
    shipped = precision_table()["checks"]
    rows = [r for r in read_records(out / "variants.parquet") if r["method"] == "llm"]
    assert {r["perturbation"] for r in rows} == set(BELOW_FLOOR) and len(rows) == 6
    assert all(r["verification"] == "unverified"
               and r["check_precision"] == shipped[r["perturbation"]]["precision"] < 0.95
               for r in rows)
    rules = [r for r in read_records(out / "variants.parquet") if r["method"] is None]
    assert rules and all(r["verification"] is None for r in rules)
    # results.json: the generation block says so per attack
    results = json.loads((out / "results.json").read_text())
    block = results["generation"]["perturbations"]
    assert block["uncommon-phrase"]["verification"] == "unverified"
    assert (block["uncommon-phrase"]["unverified"],
            block["rewriting-and-insertion"]["unverified"]) == (2, 4)
    # the verdicts: uncommon-phrase set aside by default, and counted
    confusion = results["analyses"]["criteria-confusion"]
    assert "uncommon-phrase" not in {i["perturbation"] for i in confusion["items"]}
    assert "word-exchange" in {i["perturbation"] for i in confusion["items"]}
    assert confusion["trust"]["set_aside"] == {"rewriting-and-insertion": 4,
                                               "uncommon-phrase": 2}
    assert any("6 unverified LLM-written variant(s) set aside" in n for n in confusion["notes"])
    # the report: the acceptance table and the note
    html = (out / "report.html").read_text()
    assert "unverified 2 (checks 0.67)" in html and "set aside" in html
    printed = " ".join(result.output.split())  # the terminal's table wraps its cells
    assert "verification" in printed and "unverified 2 (checks" in printed
    # --include-unverified puts them back, and every verdict on them says so
    kept_results = json.loads((kept / "results.json").read_text())
    items = [i for i in kept_results["analyses"]["criteria-confusion"]["items"]
             if i["perturbation"] == "uncommon-phrase"]
    assert items and all(i["n_unverified"] == i["n"] == 2 for i in items)
    assert kept_results["config"]["include_unverified"] is True
    kept_html = (kept / "report.html").read_text()
    assert "rests on unverified LLM-written variants" in kept_html and "†" in kept_html


def test_a_verifier_verifies_or_rejects_the_variants_below_the_floor(tmp_path: Path) -> None:
    writer = labelled_writer()

    def reply(request: dict) -> Reply:  # the verifier: no about the tunnel, yes otherwise
        if is_verifier(request):
            said = request["messages"][-1]["content"].lower()
            return Reply("no" if "tunnel" in said else "yes")
        return writer(request)

    out = tmp_path / "out"
    with FakeServer(responder=reply) as server:
        result = labelled_run(tmp_path, out, server, "--verifier",
                              f"model=fake-judge,base_url={server.base_url},max_attempts=1,"
                              "temperature=0", "--max-reasks", "0")
    assert result.exit_code == 0, result.output
    rows = [r for r in read_records(out / "variants.parquet") if r["method"] == "llm"]
    assert {(r["example_id"], r["verification"]) for r in rows} == {("library", "verifier")}
    assert all(set(r["provenance"]["verifier"]) == {"yes"} for r in rows)
    skips = (out / "skips.jsonl").read_text()
    assert skips.count("verifier-rejected") == 3  # the tunnel: once, minor and major
    results = json.loads((out / "results.json").read_text())
    block = results["generation"]["perturbations"]["uncommon-phrase"]
    assert block["verification"] == "verifier" and block["verifier_measured"] is False
    confusion = results["analyses"]["criteria-confusion"]
    assert "uncommon-phrase" in {i["perturbation"] for i in confusion["items"]}
    assert all(i["n_below_floor"] == 1 for i in confusion["items"]
               if i["perturbation"] == "uncommon-phrase")
    assert "verifier (checks 0.67, verifier unmeasured)" in (out / "report.html").read_text()
