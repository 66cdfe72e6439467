"""The card's consistency method against the fake server: repeats, rewording, the verdicts of
each wording, and the judge's identity."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from evalstress.card.consistency import run_consistency, subset
from evalstress.card.make import plan_card
from evalstress.card.run import CardOptions, claim_out
from evalstress.criteria import builtin_criteria, paraphrases
from evalstress.llm.fake_server import FakeServer, Reply

#: the texts the judge is steady on: it gives them the same rating every time
STEADY = ("sum-", "story-")


def judge_spec(server: FakeServer, tmp: Path) -> str:
    return (f"judge:model=judge-mini,base_url={server.base_url},form=score-only,"
            f"logprobs=false,backoff=0.01,cache={tmp / 'llm.sqlite'}")


class Wavering:
    """Answers a prompt differently each time it is asked (the j-th time: 1 + j % 5), except
    for texts whose example id starts as STEADY (always 3); under the first rewording of the
    criterion every rating is one point higher, under the second it is unchanged."""

    def __init__(self, steady_texts: set[str], served: str | None = None) -> None:
        self.asked: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.steady = steady_texts
        self.served = served
        self.reworded = paraphrases()["overall"][0]

    def __call__(self, request: dict[str, Any]) -> Reply:
        prompt = request["messages"][-1]["content"]
        with self.lock:
            times = self.asked[prompt]
            self.asked[prompt] += 1
        text = prompt.split("Text to evaluate:\n", 1)[1].split("\n\n", 1)[0]
        rating = 3 if text in self.steady else 1 + times % 5
        if self.reworded in prompt:
            rating += 1
        return Reply(f"{min(rating, 5)}", model=self.served)


@pytest.fixture(scope="module")
def consistency(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("consistency")
    with FakeServer() as server:
        spec = judge_spec(server, tmp)
        plan = plan_card(spec, budget="standard")
        method = plan.method("consistency")
        items = subset(plan.examples, int(method.settings["items"]))
        steady = {e.hypothesis for e in items if e.id.startswith(STEADY)}
        server.responder = Wavering(steady, served="judge-mini-2026-01-15")
        out = tmp / "card"
        lock = claim_out(out, force=False, inputs=[])
        try:
            outcome = run_consistency(plan, method, CardOptions(out, cache_dir=tmp / "cache",
                                                                workers=1))
        finally:
            lock.release()
    assert outcome.status == "run", outcome.error
    assert outcome.results is not None
    return {"results": outcome.results, "items": items, "steady": len(steady)}


def test_repeats_report_the_share_of_items_answered_identically(
        consistency: dict[str, Any]) -> None:
    results = consistency["results"]["results"]
    row = results["repeat_rows"][0]
    items, steady = len(consistency["items"]), consistency["steady"]
    assert results["repeats"] == 5 and row["items"] == items == 30
    # the steady items answer 3 every time; every other answers 1, 2, 3, 4, 5 in some order
    assert row["identical"] == steady
    ci = binomtest(steady, items).proportion_ci(method="wilson")
    assert row["identical_low"] == pytest.approx(ci.low)
    assert row["identical_high"] == pytest.approx(ci.high)
    # the SD of 1..5 (ddof 1) is sqrt(2.5); the steady items' is 0
    assert row["mean_sd"] == pytest.approx((items - steady) * 2.5 ** 0.5 / items)
    assert any("determinism" in note for note in results["notes"])  # temperature 0


def test_a_rewording_that_moves_the_judge_shows_a_shift_whose_interval_excludes_zero(
        consistency: dict[str, Any]) -> None:
    shifts = {r["variant"]: r for r in consistency["results"]["results"]["shift_rows"]}
    assert shifts[1]["shift"] == pytest.approx(1.0)
    assert shifts[1]["low"] > 0 and shifts[1]["outcome"] == "moves up"
    assert shifts[2]["shift"] == pytest.approx(0.0) and shifts[2]["outcome"] == "stable"


def test_a_constant_shift_changes_no_blind_spot_verdict(consistency: dict[str, Any]) -> None:
    verdicts = consistency["results"]["results"]["verdicts"]
    assert verdicts["compared"] > 0
    assert verdicts["changed"] == []


def test_identity_records_the_model_the_endpoint_names(consistency: dict[str, Any]) -> None:
    identity = consistency["results"]["identity"]
    assert identity["model"] == "judge-mini"
    assert identity["served"] == ["judge-mini-2026-01-15"]
    assert identity["base_url"].startswith("http://127.0.0.1:")
    assert len(identity["prompt_sha256"]) == 64 and len(identity["contract_sha256"]) == 64
    assert identity["sampling"]["temperature"] == 0.0
    assert identity["sampling"]["top_p"] is None


def test_the_paraphrases_cover_every_builtin_criterion_in_other_words() -> None:
    builtin = builtin_criteria()
    for aspect, texts in paraphrases().items():
        assert len(texts) == 2
        assert builtin[aspect].default not in texts


def test_the_findings_say_what_the_intervals_show(consistency: dict[str, Any]) -> None:
    from evalstress.card.findings import RANKS, consistency_findings

    section = {"status": "run", "results": consistency["results"]["results"],
               "files": {"results": "runs/consistency/consistency.json"}}
    found = consistency_findings(section, lambda *args: None)
    kinds = [f.kind for f in found]
    # rewording 1 lifts every rating by one point; rewording 2 moves nothing; no verdict
    # changes; at temperature 0 the wavering items' answers spread (SD interval above 0)
    assert kinds == ["wording", "inconsistent"]
    wording, wavering = found
    assert wording.rank == RANKS["wording"] and wording.interval["low"] > 0
    assert "rewording 1" in wording.text and "raises the score by 1.00" in wording.text
    assert wavering.interval["low"] > 0 and "temperature 0" in wavering.text
    assert all(f.evidence == ["runs/consistency/consistency.json"] for f in found)


def test_a_rerun_reads_the_same_answers_from_the_cache(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.responder = Wavering(set())
        spec = judge_spec(server, tmp_path)
        plan = plan_card(spec, budget="small")
        method = plan.method("consistency")
        outs = []
        for name in ("one", "two"):
            lock = claim_out(tmp_path / name, force=False, inputs=[])
            try:
                outs.append(run_consistency(plan, method, CardOptions(
                    tmp_path / name, cache_dir=tmp_path / "cache", workers=1)))
            finally:
                lock.release()
            if name == "one":
                calls = server.calls
        assert server.calls == calls  # the second card asked nothing
    first, second = (o.results["results"] for o in outs)
    assert first["repeat_rows"] == second["repeat_rows"]
    assert first["shift_rows"] == second["shift_rows"]


def test_a_judge_whose_prompt_shows_no_definition_has_nothing_reworded(
        tmp_path: Path) -> None:
    with FakeServer(default=Reply("4")) as server:
        plan = plan_card(judge_spec(server, tmp_path) + ",level=term", budget="small")
        lock = claim_out(tmp_path / "card", force=False, inputs=[])
        try:
            outcome = run_consistency(plan, plan.method("consistency"), CardOptions(
                tmp_path / "card", cache_dir=tmp_path / "cache", workers=1))
        finally:
            lock.release()
    assert outcome.results is not None, outcome.error
    results = outcome.results["results"]
    assert results["shift_rows"] == [] and results["verdicts"]["compared"] == 0
    assert any("nothing reworded" in note for note in results["notes"])
    assert not (tmp_path / "card" / "runs" / "consistency" / "wording-1").exists()
    [row] = results["repeat_rows"]  # a judge answering 4 every time: all identical
    assert row["identical"] == row["items"] == 8 and row["mean_sd"] == 0


def test_a_metric_plans_consistency_as_not_run_with_the_reason() -> None:
    plan = plan_card("bleu", budget="small")
    method = plan.method("consistency")
    assert not method.runs and "asks no model" in method.reason


def test_a_spread_below_the_tolerance_is_no_finding() -> None:
    from evalstress.card.findings import consistency_findings

    row = {"aspect": "overall", "k": 5, "items": 30, "identical": 14, "identical_low": 0.3,
           "identical_high": 0.64, "mean_sd": 0.007, "sd_low": 0.004, "sd_high": 0.011,
           "delta": 0.15}
    section = {"status": "run", "results": {"temperature": 0.0, "repeat_rows": [row]},
               "files": {}}
    assert consistency_findings(section, lambda *args: None) == []
    row["delta"] = 0.001  # the same spread against a tolerance it clears
    assert [f.kind for f in consistency_findings(section, lambda *args: None)] == [
        "inconsistent"]
