"""Running a card: a card killed halfway resumes without running its finished methods again;
the adversarial search runs as `evalstress attack` does when a gold evaluator is given; the
Python face returns the card."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import evalstress
from evalstress.card import plan as card_plan
from evalstress.card.schema import card_problems
from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer, Reply
from tests.card.conftest import runner

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_card_killed_after_its_first_method_resumes_without_running_it_again(
        tmp_path: Path, small_data: Path) -> None:
    out, cache = tmp_path / "card", tmp_path / "cache"
    args = ["card", "bleu", "--data", str(small_data), "--budget", "small", "--workers", "1",
            "--out", str(out), "--cache-dir", str(cache)]
    finished = out / "runs" / "blindspot" / "results.json"
    proc = subprocess.Popen([sys.executable, "-m", "evalstress.cli", *args, "--quiet"],
                            env={**os.environ, "PYTHONPATH": str(SRC)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not finished.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the blind-spot method never finished"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    assert not (out / "card.json").exists()  # killed halfway
    created = json.loads(finished.read_text(encoding="utf-8"))["created"]
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    said = " ".join(again.output.split())
    assert "blind spots: reused" in said and "blind spots: running" not in said
    assert "criteria response: done" in said
    assert json.loads(finished.read_text(encoding="utf-8"))["created"] == created
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    cost = card["cost"]["methods"]
    assert cost["blindspot"]["reused"] and cost["blindspot"]["seconds"] == 0
    assert cost["blindspot"]["first_seconds"] > 0  # what the killed card's run took
    assert not cost["criteria"]["reused"]


def test_with_a_gold_judge_the_card_runs_the_attack_baselines(
        tmp_path: Path, small_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # TextFooler loads MiniLM: leave it out, as on a machine without the models extra
    monkeypatch.setattr(card_plan, "missing_modules", lambda names: ["torch"])
    with FakeServer(default=Reply("Rating: 80")) as server:
        gold = (f"judge:model=gold,base_url={server.base_url},backoff=0.01,"
                f"cache={tmp_path / 'llm.sqlite'}")
        made = evalstress.card("bleu", small_data, budget="small", gold=gold,
                               out=tmp_path / "card", cache_dir=tmp_path / "cache")
    data = made.to_dict()
    assert card_problems(data) == []
    section = data["methods"]["adversarial"]
    assert section["status"] == "run", section["reason"]
    assert (tmp_path / "card" / section["files"]["attacks"]).exists()
    rows = section["results"]["asr"]
    assert {r["direction"] for r in rows} == {"good", "bad"}
    assert all(r["method"].startswith("rule:") for r in rows)
    for row in rows:  # a Wilson interval around every rate that has attempts
        if row["attempts"]:
            assert row["ci_low"] <= row["asr"] <= row["ci_high"]
    assert "TextFooler left out" in json.dumps(data["methods"]["adversarial"])
    assert data["cost"]["methods"]["adversarial"]["searches"] > 0


def test_human_scores_in_the_data_add_the_correlation_section(tmp_path: Path,
                                                                small_data: Path) -> None:
    rows = [json.loads(line) for line in small_data.read_text(encoding="utf-8").splitlines()]
    for number, row in enumerate(rows):
        row["human"] = {"overall": float(number + 1)}  # unmapped fields land in meta
    small_data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    made = evalstress.card("bleu", small_data, budget="small", out=tmp_path / "card",
                           cache_dir=tmp_path / "cache")
    section = made.to_dict()["methods"]["correlation"]
    assert section["status"] == "run" and section["run_dir"] == "runs/blindspot"
    humans = {(r["human"], r["method"]) for r in section["results"]["rows"]}
    assert ("overall", "kendall") in humans


def test_a_paper_card_builds_its_blind_spot_job_without_what_does_not_ship(
        tmp_path: Path, small_data: Path) -> None:
    from evalstress.card import plan_card
    from evalstress.card.run import CardOptions, stress_job_of
    from evalstress.card.sections import method_section

    plan = plan_card("bleu", data=small_data, budget="paper")
    method = plan.method("blindspot")
    # `evalstress run --suite blindspot-full --protocol paper` refuses the whole suite here
    job = stress_job_of(plan, method, CardOptions(tmp_path / "card", workers=1))
    names = [p.name for p in job.suite.perturbations]
    assert "frequent-ngram" not in names and "truncation" in names and len(names) == 21
    section = method_section(method, plan, None, None, tmp_path)
    assert section["left_out"][0]["line"].startswith("frequent-ngram not run: under rule=paper "
                                                     "needs a separate corpus")
