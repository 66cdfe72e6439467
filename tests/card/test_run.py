"""Running a card: a card killed halfway resumes without running its finished methods again;
the adversarial search runs as `evalstress attack` does when a gold evaluator is given; the
Python face returns the card."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
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
    # each example one output: the agreement block ranks across the examples, no system level
    block = section["results"]["agreement"]
    assert block["systems"] == 0 and block["items"] == len(rows)
    assert {(r["level"], r["statistic"]) for r in block["rows"]} == {("item", "tau_b"),
                                                                    ("item", "alpha")}


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


def _earlier_card(folder: Path, plan: card_plan.CardPlan, **changed: str) -> Path:
    """A card folder as evalstress leaves it, of `plan`'s settings but those `changed`."""
    from evalstress.engine.outdir import record_files

    settings = {"spec": plan.evaluator.spec, "short_signature": plan.evaluator.short_signature,
                "budget": plan.budget.name, "sha256": plan.data["sha256"], **changed}
    folder.mkdir(parents=True)
    card = {"evaluator": {"spec": settings["spec"],
                          "short_signature": settings["short_signature"]},
            "budget": {"name": settings["budget"]}, "data": {"sha256": settings["sha256"]}}
    (folder / "card.json").write_text(json.dumps(card), encoding="utf-8")
    record_files(folder, ["card.json"], "card", "card")
    return folder


def test_a_card_of_another_budget_is_refused_before_any_work(tmp_path: Path,
                                                             small_data: Path) -> None:
    from evalstress.card import plan_card

    plan = plan_card("bleu", data=small_data, budget="small")
    out = _earlier_card(tmp_path / "card", plan, budget="standard")
    result = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--budget", "small",
                                 "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "budget standard there, small now" in said
    assert "another folder with --out" in said and "--force" in said
    assert not (out / "runs").exists()  # nothing was run or written
    assert json.loads((out / "card.json").read_text(encoding="utf-8"))["budget"] == {
        "name": "standard"}


def test_a_card_of_other_data_or_evaluator_is_refused_and_force_lets_it_go(
        tmp_path: Path, small_data: Path) -> None:
    from evalstress.card import plan_card
    from evalstress.card.run import CardError, check_same_card

    plan = plan_card("bleu", data=small_data, budget="small")
    other = _earlier_card(tmp_path / "data", plan, sha256="0" * 64)
    with pytest.raises(CardError, match="data sha256 000000000000 there, "
                       + plan.data["sha256"][:12] + " now"):
        evalstress.card("bleu", small_data, budget="small", out=other)
    assert not (other / "runs").exists()
    chrf = _earlier_card(tmp_path / "chrf", plan, spec="chrf")
    with pytest.raises(CardError, match="evaluator chrf there, bleu now"):
        check_same_card(chrf, plan, force=False)
    check_same_card(chrf, plan, force=True)  # --force: the other card is replaced
    check_same_card(_earlier_card(tmp_path / "same", plan), plan, force=False)  # resumes


def test_a_killed_card_of_other_settings_is_known_by_its_runs(tmp_path: Path,
                                                             small_data: Path) -> None:
    from evalstress.card import plan_card
    from evalstress.card.run import CardError, check_same_card
    from evalstress.engine.outdir import record_files

    plan = plan_card("bleu", data=small_data, budget="small")
    out = tmp_path / "card"
    run = out / "runs" / "blindspot"
    run.mkdir(parents=True)
    record = {"method": "blindspot", "evaluator": "bleu", "budget": "paper",
              "data_sha256": plan.data["sha256"]}
    (run / "results.json").write_text(json.dumps({"config": {"card": record}}),
                                      encoding="utf-8")
    record_files(out, [], "card", "card")
    with pytest.raises(CardError, match="budget paper there, small now"):
        check_same_card(out, plan, force=False)


def test_every_text_of_a_card_is_scored_once_across_its_methods(
        tmp_path: Path, small_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a scorer that writes down every request it is asked to score (text and context); the
    # blind-spot, discernment, criteria and profile methods share the examples' originals
    log = tmp_path / "asked.txt"
    module = tmp_path / "counting_scorer.py"
    module.write_text(
        "from pathlib import Path\n"
        f"LOG = Path({str(log)!r})\n"
        "def score(requests):\n"
        "    with LOG.open('a', encoding='utf-8') as out:\n"
        "        out.writelines(r.key + '\\n' for r in requests)\n"
        "    return [float(len(r.text.split())) for r in requests]\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    made = evalstress.card("python:target=counting_scorer:score,batched=true", small_data,
                           budget="small", out=tmp_path / "card", cache_dir=tmp_path / "cache",
                           workers=1)
    methods = made.to_dict()["methods"]
    ran = sorted(name for name, section in methods.items() if section.get("status") == "run")
    assert {"blindspot", "criteria", "discernment"} <= set(ran), ran
    from evalstress.evaluators.external import PROBE

    asked = [key for key in log.read_text(encoding="utf-8").split() if key != PROBE.key]
    twice = [key for key, count in Counter(asked).items() if count > 1]
    assert asked and twice == [], f"{len(twice)} of {len(set(asked))} texts scored twice"


@pytest.mark.slow
def test_a_judge_card_asks_the_model_each_question_once_across_its_methods(
        tmp_path: Path) -> None:
    from evalstress.llm.personas import persona

    # every method of a judge's small card, the judge-only ones too (bias probes, position,
    # consistency: their repeats differ in the sample's seed, so they are other questions)
    with FakeServer(responder=persona("fair"), models=("gpt-4o-mini",)) as server:
        made = evalstress.card(f"judge:model=gpt-4o-mini,base_url={server.base_url},"
                               "form=score-only,backoff=0.01", budget="small",
                               out=tmp_path / "card", cache_dir=tmp_path / "cache", workers=1)
        bodies = [json.dumps(body, sort_keys=True) for body in server.answered]
    ran = {name for name, section in made.to_dict()["methods"].items()
           if section.get("status") == "run"}
    assert {"blindspot", "criteria", "discernment", "bias", "position", "consistency"} <= ran, ran
    twice = [body for body, count in Counter(bodies).items() if count > 1]
    assert bodies and twice == [], f"{len(twice)} of {len(set(bodies))} questions asked twice"


def test_a_study_that_fails_is_said_and_kept_with_its_reason_and_nothing_written(
        tmp_path: Path) -> None:
    from evalstress.card.make import plan_card
    from evalstress.card.run import CardOptions, run_study

    plan = plan_card("bleu", budget="small")
    method = next(m for m in plan.methods if m.key == "correlation")
    said: list[str] = []

    def work() -> dict[str, object]:
        raise ValueError("the data has no scored system outputs")

    outcome = run_study(plan, method, CardOptions(tmp_path / "card", say=said.append),
                        "study.json", "a study", work)
    assert outcome.status == "failed"
    assert outcome.error == "the data has no scored system outputs"
    assert said[-1] == f"{method.title}: failed: the data has no scored system outputs"
    assert not (tmp_path / "card" / "runs" / "correlation" / "study.json").exists()
