"""The card's bias method against judge personas of known bias: it finds each planted bias
above its placebo, nothing in a fair judge, no false alarm in a noisy one; a rerun asks
nothing; the dry run counts its calls; card.md, card.html, card.json and compare show it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalstress.card.compare import compare_cards, compare_markdown
from evalstress.card.estimate import estimate_card
from evalstress.card.make import make_card, plan_card
from evalstress.card.plan import CardPlan, judge_family
from evalstress.card.run import CardOptions
from evalstress.card.schema import card_problems
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import persona

MODEL = "gpt-4o-mini"
#: the planted strength: 0.4 points on the 1-5 scale, beside noise of sd 0.3 on every answer
STRENGTH = 0.4
PLANTED = ("verbosity", "authority", "bandwagon", "sycophancy", "self-preference")


def spec(server: FakeServer) -> str:
    return f"judge:model={MODEL},base_url={server.base_url},form=score-only,backoff=0.01"


def bias_only(plan: CardPlan) -> CardPlan:
    """The standard card's plan with the bias method alone (the others are tested elsewhere)."""
    return replace(plan, methods=tuple(
        m if m.key == "bias" else replace(m, runs=False, reason="left out by this test")
        for m in plan.methods))


def bias_card(tmp: Path, who: str, name: str = "card",
              cache: str = "cache") -> tuple[dict[str, Any], int]:
    """A standard-budget card of the judge persona `who` (bias method only, every example:
    exhaustive, so each test's n is the corpus's), and the calls the server took."""
    with FakeServer(responder=persona(who), models=(MODEL,)) as server:
        plan = bias_only(plan_card(spec(server), budget="standard", exhaustive=True))
        card = make_card(plan, CardOptions(out=tmp / name, cache_dir=tmp / cache, workers=1))
        return card.to_dict(), server.calls


def rows(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["probe"] + ("" if r["arm"] == "probe" else f"/{r['arm']}"): r
            for r in card["methods"]["bias"]["results"]["rows"]}


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], int, Path]:
    tmp = tmp_path_factory.mktemp("planted")
    who = "+".join(f"{kind}:{STRENGTH}" for kind in PLANTED) + "+noisy:0.3"
    card, calls = bias_card(tmp, who)
    return card, calls, tmp


def test_each_planted_bias_is_found_above_its_placebo(planted: tuple[Any, ...]) -> None:
    card = planted[0]
    found = rows(card)
    assert card["budget"]["name"] == "standard" and card_problems(card) == []
    for kind in PLANTED:
        row = found[kind]
        assert row["outcome"] == "detects", row
        assert row["low"] > 0 and row["low"] <= STRENGTH <= row["high"], row
        assert row["verdict"].startswith("biased toward"), row
        assert row["n"] == 57
    # attribution was planted in no component: its arms are not called biased
    assert found["attribution/model"]["outcome"] not in ("detects", "reversed")
    assert found["attribution/person"]["outcome"] not in ("detects", "reversed")
    biased = [f for f in card["findings"] if f["kind"] == "biased"]
    assert biased and all(f["method"] == "bias" and f["interval"]["low"] > 0 for f in biased)


def test_a_fair_judge_shows_no_bias_beyond_placebo(tmp_path: Path) -> None:
    card, _ = bias_card(tmp_path, "fair")
    for name, row in rows(card).items():
        assert row["outcome"] == "blind", (name, row)
        assert row["verdict"].startswith("no bias beyond placebo within ±")
    assert not [f for f in card["findings"] if f["kind"] == "biased"]


def test_a_noisy_judge_raises_no_false_alarm(tmp_path: Path) -> None:
    card, _ = bias_card(tmp_path, "noisy:0.5")
    found = rows(card)
    assert len(found) == 7
    assert all(r["outcome"] not in ("detects", "reversed") for r in found.values()), found
    # the noise moves the probe and the placebo alike: each moves, the effect does not
    assert any(abs(r["probe_shift"]) > 0 for r in found.values())


def test_a_rerun_asks_the_server_nothing_and_the_card_records_what_the_method_cost(
        planted: tuple[Any, ...]) -> None:
    card, calls, tmp = planted
    cost = card["methods"]["bias"]["cost"]
    assert cost["calls"] == calls > 0  # every call the server took, as the card records it
    assert cost["prompt_tokens"] > 0 and cost["completion_tokens"] > 0
    who = "+".join(f"{kind}:{STRENGTH}" for kind in PLANTED) + "+noisy:0.3"
    again, calls_again = bias_card(tmp, who, name="again")
    assert calls_again == 0  # every probe's request came from the response cache
    assert rows(again) == rows(card)


def test_the_dry_run_counts_the_bias_methods_calls_and_tokens(tmp_path: Path) -> None:
    with FakeServer(responder=persona("fair"), models=(MODEL,)) as server:
        plan = bias_only(plan_card(spec(server), budget="standard", exhaustive=True))
        options = CardOptions(out=tmp_path / "card", cache_dir=tmp_path / "cache", workers=1)
        before = next(e for e in estimate_card(plan, options) if e.key == "bias")
        asked = server.calls
        make_card(plan, options)
        made = server.calls - asked
        after = next(e for e in estimate_card(plan, options) if e.key == "bias")
    assert before.runs and before.calls == made and before.tokens and before.tokens > 0
    assert after.calls == 0


def test_the_bias_method_shows_in_the_cards_files_and_in_compare(
        planted: tuple[Any, ...]) -> None:
    card, _, tmp = planted
    markdown = (tmp / "card" / "card.md").read_text(encoding="utf-8")
    html = (tmp / "card" / "card.html").read_text(encoding="utf-8")
    assert "### Bias probes" in markdown and "| authority | probe | overall |" in markdown
    assert "id='m-bias'" in html and "t-bias" in html
    fair = {**card, "evaluator": {**card["evaluator"], "label": "other"}}
    table = compare_markdown(compare_cards([card, fair]))
    line = next(x for x in table.splitlines() if x.startswith("| authority |"))
    assert "biased toward an invented citation" in line


def test_the_bias_method_runs_only_for_an_evaluator_that_asks_a_model() -> None:
    plan = plan_card("bleu", budget="small")
    bias = plan.method("bias")
    assert not bias.runs and "asks no model" in bias.reason


def test_the_self_preference_probe_gets_the_judges_model_family() -> None:
    assert judge_family("judge:model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1") == "gpt"
    assert judge_family("judge:model=local") == "smollm"
    with FakeServer(models=(MODEL,)) as server:
        plan = plan_card(spec(server), budget="small")
    assert plan.method("bias").runs and plan.method("bias").mode == "self-preference family gpt"


def position_card(tmp: Path, who: str) -> tuple[dict[str, Any], int]:
    """A standard card of persona `who` with the position test and the bias probes (whose
    scores the sanity gate reads: a card without any gives no findings)."""
    with FakeServer(responder=persona(who), models=(MODEL,)) as server:
        plan = plan_card(spec(server), budget="standard")
        plan = replace(plan, methods=tuple(
            m if m.key in ("position", "bias") else replace(m, runs=False,
                                                            reason="left out by this test")
            for m in plan.methods))
        card = make_card(plan, CardOptions(out=tmp / "card", cache_dir=tmp / "cache",
                                           workers=1))
        return card.to_dict(), server.calls


def test_a_judge_that_favours_the_first_shown_text_is_found_position_biased(
        tmp_path: Path) -> None:
    card, calls = position_card(tmp_path, "position:0.3")
    section = card["methods"]["position"]
    result = section["results"]
    assert card_problems(card) == [] and section["status"] == "run"
    assert result["outcome"] == "detects" and result["low"] > 0.05
    assert result["reask_flip_rate"] == 0  # a deterministic judge asked again says the same
    assert result["first_win_share"] > 0.9 and result["first_win_low"] > 0.5
    assert section["cost"]["calls"] == 3 * result["pairs"] and calls > section["cost"]["calls"]
    assert any(f["method"] == "position" and f["kind"] == "biased" for f in card["findings"])
    markdown = (tmp_path / "card" / "card.md").read_text(encoding="utf-8")
    assert "### Position bias" in markdown and "biased toward the position" in markdown


def test_a_fair_judge_keeps_its_verdict_in_both_orders(tmp_path: Path) -> None:
    card, _ = position_card(tmp_path, "fair")
    result = card["methods"]["position"]["results"]
    assert result["swap_flip_rate"] == 0 and result["outcome"] == "blind"
    assert result["first_win_share"] == pytest.approx(0.5)


def test_the_position_test_runs_only_for_a_judge() -> None:
    position = plan_card("bleu", budget="small").method("position")
    assert not position.runs and "pairwise" in position.reason


def test_a_metrics_card_says_in_one_line_why_the_judges_methods_did_not_run(
        bleu_card: tuple[Path, str]) -> None:
    out, _ = bleu_card
    page = (out / "card.html").read_text(encoding="utf-8")
    assert page.count("<section class='method notrun' id='m-bias'>") == 1
    assert ("Bias probes, position bias and consistency</strong>: not run: it asks no model: "
            "these methods test an LLM judge") in page
    assert "id='m-consistency'" not in page
    assert "id='m-position'" not in page
