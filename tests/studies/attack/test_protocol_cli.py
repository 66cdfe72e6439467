"""`evalstress attack --protocol paper` end to end against the fake server: the settings the
paper's code uses (stop rule, the original response as reference, patience 1, sampling at
temperature 1.0 with 512 tokens) are the ones that run and the ones recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.studies.attack.scoring import FRESH_SEED_SHIFT

from .conftest import GENERATOR_SYSTEM, ORIGINAL, example, judged_text


def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(example(i).to_dict()) + "\n" for i in range(2)))
    return path


def responder(bodies: list[dict[str, Any]]) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        bodies.append(body)
        if body["messages"][0]["content"] == GENERATOR_SYSTEM:
            if "Report number 1." in body["messages"][-1]["content"]:
                return Reply("I'm sorry, I cannot write that.")  # example 1: nothing usable
            return Reply(f"<text>Entirely fresh wording, take {body['seed']}.</text>")
        return Reply("60" if judged_text(body) == ORIGINAL else "90")  # the original: no success

    return respond


def run(tmp_path: Path, server: FakeServer, out: str, *extra: str) -> dict[str, Any]:
    url = server.base_url
    result = CliRunner().invoke(app, [
        "attack", str(data_file(tmp_path)), "-v", "bleu",
        "-g", f"judge:model=gold,base_url={url},max_attempts=1",
        "--generator", f"model=writer,base_url={url},max_attempts=1", "--direction", "good",
        "--gold-samples", "1", "--max-iterations", "3", "--out", str(tmp_path / out),
        "--quiet", *extra])
    assert result.exit_code == 0, result.output
    return json.loads((tmp_path / out / "results.json").read_text())


def records(tmp_path: Path, out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / out / "attacks.jsonl").read_text()
            .splitlines()]


def test_the_paper_protocol_runs_and_records_the_papers_settings(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []
    with FakeServer(responder=responder(bodies)) as server:
        results = run(tmp_path, server, "paper", "--protocol", "paper")
        block = results["analyses"]["adversarial"]
        assert block["protocol"] == "paper" and results["config"]["protocol"] == "paper"
        assert block["params"]["stop_rule"] == "highest-feedback"
        assert block["params"]["patience"] == 1
        [victim] = block["victims"]
        # BLEU is a victim of the released code: its map (BLEU as it is, one decimal) is used
        assert victim["reference_mode"] == "original" and victim["scale"]["how"] == "paper-code"
        assert any("code's 0-100 map: bleu (sentence BLEU as it is" in note
                   for note in block["notes"]), block["notes"]
        asked = [b for b in bodies if b["messages"][0]["content"] == GENERATOR_SYSTEM]
        assert asked and {(b["temperature"], b["max_tokens"]) for b in asked} == {(1.0, 512)}
        ours, theirs = records(tmp_path, "paper")
        assert {ours["stop_rule"], theirs["stop_rule"]} == {"highest-feedback"}
        # example 0: BLEU of fresh wording against the original is 0 and the gold says 90, so
        # S = 90 > 80 ends the search after one iteration with a success
        assert (ours["stop"], ours["iterations"], ours["success"]) == ("threshold", 1, True)
        # the returned text is rated again by the gold on fresh samples (90 again: a success)
        assert block["params"]["rescore_final"] is True
        assert ours["extra"]["rescored"] == {"search_gold": 90.0, "search_success": True,
                                             "gold": 90.0}
        fresh = [b for b in bodies if b["messages"][0]["content"] != GENERATOR_SYSTEM
                 and int(b["seed"]) >= FRESH_SEED_SHIFT]
        # example 1 returns its original, which is rated again too (60: no success)
        assert [judged_text(b) for b in fresh] == [ours["text"], ORIGINAL]
        assert theirs["extra"]["rescored"]["gold"] == 60.0 and not theirs["success"]
        # example 1: one iteration without a usable candidate ends it (patience 1)
        assert (theirs["stop"], theirs["iterations"]) == ("no-candidates", 1)
        assert "Protocol <b>paper</b>" in (tmp_path / "paper" / "report.html").read_text()

        bodies.clear()
        mine = run(tmp_path, server, "mine", "--protocol", "paper", "--stop-rule",
                   "first-success", "--reference", "example", "--patience", "2",
                   "--no-rescore-final",
                   "--generator", f"model=writer,base_url={server.base_url},max_attempts=1,"
                   "temperature=0.3")
    block = mine["analyses"]["adversarial"]
    assert (block["params"]["stop_rule"], block["params"]["patience"]) == ("first-success", 2)
    assert block["victims"][0]["reference_mode"] == "example"
    assert block["params"]["rescore_final"] is False
    assert "rescored" not in records(tmp_path, "mine")[0]["extra"]
    asked = [b for b in bodies if b["messages"][0]["content"] == GENERATOR_SYSTEM]
    assert {(b["temperature"], b["max_tokens"]) for b in asked} == {(0.3, 512)}
    assert records(tmp_path, "mine")[1]["iterations"] == 2  # patience 2


def test_an_unknown_protocol_or_stop_rule_is_refused(tmp_path: Path) -> None:
    base = ["attack", str(data_file(tmp_path)), "-v", "bleu", "-g",
            "judge:model=g,base_url=http://127.0.0.1:9/v1", "--method", "rules"]
    result = CliRunner().invoke(app, [*base, "--protocol", "papr"])
    assert result.exit_code == 2 and "Did you mean 'paper'" in result.output
    result = CliRunner().invoke(app, [*base, "--stop-rule", "first"])
    assert result.exit_code == 2 and "unknown stop rule 'first'" in result.output
