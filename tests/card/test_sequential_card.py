"""A judge's card stops its blind-spot, bias and criteria tests once settled: on the fake
server's judge personas it reaches the verdicts of the exhaustive card with fewer calls, says so
on every face, and `--exhaustive` (plan_card(exhaustive=True)) runs every example."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalstress.card.estimate import estimate_card
from evalstress.card.make import make_card, plan_card
from evalstress.card.plan import CardPlan, get_budget
from evalstress.card.run import CardOptions
from evalstress.card.schema import card_problems
from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import persona
from tests.card.conftest import runner

MODEL = "gpt-4o-mini"
FIVE_BIASES = ("verbosity:0.4+authority:0.4+bandwagon:0.4+sycophancy:0.4+self-preference:0.4"
               "+noisy:0.3")


def only(plan: CardPlan, keys: tuple[str, ...]) -> CardPlan:
    return replace(plan, methods=tuple(
        m if m.key in keys else replace(m, runs=False, reason="left out by this test")
        for m in plan.methods))


def verdicts(folder: Path) -> dict[tuple[str, ...], str]:
    """Every four-way verdict of the card's blind-spot severities and bias arms."""
    found: dict[tuple[str, ...], str] = {}
    blind = folder / "runs" / "blindspot" / "results.json"
    if blind.exists():
        for row in json.loads(blind.read_text())["analyses"]["blindspot"]["rows"]:
            for point in row["points"]:
                found[(row["perturbation"], row["aspect"], str(point["severity"]))] = \
                    point["test"]["verdict"]
    bias = folder / "runs" / "bias" / "results.json"
    if bias.exists():
        for row in json.loads(bias.read_text())["analyses"]["bias"]["rows"]:
            found[(row["probe"], row["aspect"], row["arm"])] = row["outcome"]
    return found


def pair(tmp: Path, who: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The standard card of persona `who`, exhaustive and sequential (caches of their own):
    each one's calls, verdicts and card.json."""
    out: dict[str, Any] = {}
    for design in ("exhaustive", "sequential"):
        with FakeServer(responder=persona(who), models=(MODEL,)) as server:
            spec = f"judge:model={MODEL},base_url={server.base_url},form=score-only,backoff=0.01"
            plan = only(plan_card(spec, budget="standard", exhaustive=design == "exhaustive"),
                        keys)
            folder = tmp / design
            card = make_card(plan, CardOptions(out=folder, cache_dir=tmp / f"cache-{design}",
                                               workers=1)).to_dict()
            out[design] = {"calls": server.calls, "verdicts": verdicts(folder), "card": card,
                           "folder": folder}
    return out


@pytest.fixture(scope="module")
def five_biases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return pair(tmp_path_factory.mktemp("five"), FIVE_BIASES, ("blindspot", "bias"))


@pytest.mark.long_run  # the five-bias persona's card, both designs: about 20 s
def test_the_sequential_card_reaches_the_exhaustive_verdicts_with_fewer_calls(
        five_biases: dict[str, Any]) -> None:
    exhaustive, sequential = five_biases["exhaustive"], five_biases["sequential"]
    assert len(exhaustive["verdicts"]) >= 40  # 7 bias arms and every blind-spot severity
    assert sequential["verdicts"] == exhaustive["verdicts"]
    # the planted biases are still found
    assert {k[0] for k, v in sequential["verdicts"].items() if v == "detects" and k[2] == "probe"
            } >= {"verbosity", "authority", "bandwagon", "sycophancy"}
    assert sequential["calls"] <= 0.6 * exhaustive["calls"], (sequential["calls"],
                                                              exhaustive["calls"])


@pytest.mark.long_run  # the five-bias persona's card, both designs: about 20 s
def test_the_card_states_the_texts_it_scored_against_the_full_design(
        five_biases: dict[str, Any]) -> None:
    sequential, exhaustive = five_biases["sequential"], five_biases["exhaustive"]
    card = sequential["card"]
    assert card_problems(card) == []
    for key in ("blindspot", "bias"):
        design = card["methods"][key]["design"]
        assert design["design"] == "sequential" and design["texts"] < design["full_texts"]
        # the full design: what the exhaustive card asked for, and the variants it planned
        # but a perturbation could not make (a single sentence has nothing to switch)
        run = json.loads((exhaustive["folder"] / "runs" / key / "results.json").read_text())
        full = exhaustive["card"]["methods"][key]["cost"]["requested"]
        assert design["full_texts"] == full + run["counts"]["skipped"]
        assert "design" not in exhaustive["card"]["methods"][key]
    md = (sequential["folder"] / "card.md").read_text()
    html = (sequential["folder"] / "card.html").read_text()
    line = f"{card['methods']['bias']['design']['texts']:,} of"
    assert "sequential design:" in md and line in md
    assert "sequential design:" in html and line in html
    assert "sequential design:" not in (exhaustive["folder"] / "card.md").read_text()


@pytest.mark.parametrize("who", ["fair", "noisy:0.5", "constant"])
def test_bias_probes_of_each_persona_reach_the_exhaustive_verdicts(tmp_path: Path,
                                                                    who: str) -> None:
    found = pair(tmp_path, who, ("bias",))
    assert found["sequential"]["verdicts"] == found["exhaustive"]["verdicts"]
    assert len(found["exhaustive"]["verdicts"]) == 7
    assert found["sequential"]["calls"] <= 0.4 * found["exhaustive"]["calls"]


#: the personas the criteria method is checked on: fair, noisy, constant and a biased one
CRITERIA_PERSONAS = ("fair", "noisy:0.5", "constant", "verbosity:0.4+noisy:0.3")


def criteria_items(folder: Path) -> dict[tuple[str, ...], bool | None]:
    """The criteria method's items -> PASS (True), FAIL (False), no test (None)."""
    analysis = json.loads((folder / "runs" / "criteria" / "results.json").read_text())
    return {(i["evaluator"], i["aspect"], i["perturbation"], str(i["severity"])): i["passed"]
            for i in analysis["analyses"]["criteria-confusion"]["items"]}


@pytest.fixture(scope="module")
def criteria_cards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each persona's standard card of the criteria method alone, exhaustive and sequential."""
    return {who: pair(tmp_path_factory.mktemp("criteria"), who, ("criteria",))
            for who in CRITERIA_PERSONAS}


def test_the_criteria_method_of_the_personas_reaches_the_exhaustive_verdicts(
        criteria_cards: dict[str, dict[str, Any]]) -> None:
    items = same = calls = full = 0
    for who, found in criteria_cards.items():
        exhaustive = criteria_items(found["exhaustive"]["folder"])
        sequential = criteria_items(found["sequential"]["folder"])
        assert len(exhaustive) == 11, who  # 11 perturbation x severity units, one aspect
        items += len(exhaustive)
        same += sum(sequential.get(k) == v for k, v in exhaustive.items())
        calls += found["sequential"]["calls"]
        full += found["exhaustive"]["calls"]
        # each persona on its own spends at most half the exhaustive card's calls
        assert found["sequential"]["calls"] <= 0.5 * found["exhaustive"]["calls"], who
    assert same >= 0.95 * items, (same, items)
    assert calls <= 0.4 * full, (calls, full)
    # the fair persona misses what leaves its content signal alone (sentence and word
    # exchange) and finds spelling mistakes and deleted sentences, in both designs
    fair = criteria_items(criteria_cards["fair"]["sequential"]["folder"])
    assert {k[2] for k, v in fair.items() if v} == {"spelling-mistake", "sentence-deletion"}


def test_the_card_states_the_criteria_method_s_design(
        criteria_cards: dict[str, dict[str, Any]]) -> None:
    found = criteria_cards["fair"]
    card = found["sequential"]["card"]
    assert card_problems(card) == []
    design = card["methods"]["criteria"]["design"]
    assert design["design"] == "sequential" and design["tests"] == 11
    assert design["settled_early"] + design["futile_early"] == 11
    assert design["texts"] < design["full_texts"]
    md = (found["sequential"]["folder"] / "card.md").read_text()
    assert f"sequential design: {design['texts']:,} of the {design['full_texts']:,}" in md
    # the line points at the criteria rule's own page
    assert "criteria-confusion.md&#35;sequential-items-on-a-card" in md
    assert "given the no-effect verdict by futility" in md
    assert "design" not in found["exhaustive"]["card"]["methods"]["criteria"]


def test_a_criteria_item_without_a_test_is_not_counted_and_futility_is_worded_for_it() -> None:
    from evalstress.card.sequential import design_line, design_of

    def test(reason: str) -> dict[str, Any]:
        return {"evaluator": "j", "aspect": "a", "verdict": None, "reason": reason}

    record = {"sequential": {
        "design": "sequential verdicts", "looks": 6, "interim_alpha": 0.01, "futility": 0.1,
        "cost": {"texts": 40, "full_texts": 100, "share": 0.4},
        "units": [{"perturbation": "p", "severity": "1", "stopped": {"look": 1},
                   "tests": [test("settled"), test("futility"), test("no test")]},
                  {"perturbation": "q", "severity": "1", "stopped": None,
                   "tests": [test("open at the last look")]}]}}
    design = design_of(record)
    assert design is not None
    assert (design["tests"], design["settled_early"], design["futile_early"]) == (3, 1, 1)
    criteria = design_line({"key": "criteria", "design": design})
    blindspot = design_line({"key": "blindspot", "design": design})
    assert criteria is not None and blindspot is not None
    assert "1 of 3 tests settled before the last example, 1 given the no-effect verdict by " \
           "futility" in criteria and "criteria-confusion.md#sequential-items" in criteria
    assert "1 left inconclusive by futility" in blindspot and "blind-spots.md#" in blindspot


def test_a_lexical_metric_and_exhaustive_cards_plan_no_sequential_design() -> None:
    assert all(not m.design for m in plan_card("bleu", budget="small").methods)
    judge = "judge:model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1,form=score-only"
    sequential = plan_card(judge, budget="small")
    assert sequential.method("blindspot").design["kind"] == "blindspot"
    assert sequential.method("bias").design["kind"] == "bias"
    assert sequential.method("criteria").design["kind"] == "criteria"
    # a metric whose scores stand for no quality aspect has no criteria item to settle: its
    # criteria method is a sensitivity profile, which takes every example
    bertscore = plan_card("bertscore", budget="small")
    assert bertscore.method("blindspot").design and not bertscore.method("criteria").design
    assert not sequential.method("discernment").design
    exhaustive = plan_card(judge, budget="small", exhaustive=True)
    assert all(not m.design for m in exhaustive.methods)
    # the design is part of the method's record: a finished exhaustive run is not reused
    assert sequential.fingerprint("blindspot") != exhaustive.fingerprint("blindspot")
    assert sequential.fingerprint("discernment") == exhaustive.fingerprint("discernment")
    assert get_budget("standard").examples == 60


def test_the_dry_run_says_its_counts_are_the_most_a_sequential_method_asks(
        tmp_path: Path) -> None:
    judge = "judge:model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1,form=score-only"
    options = CardOptions(out=tmp_path / "card", workers=1)
    rows = {e.key: e for e in estimate_card(plan_card(judge, budget="small"), options)}
    assert "at most: the sequential design" in rows["blindspot"].note
    assert "at most: the sequential design" in rows["criteria"].note
    assert "sequential" not in rows["discernment"].note
    rows = {e.key: e for e in estimate_card(plan_card(judge, budget="small", exhaustive=True),
                                            options)}
    assert "sequential" not in rows["blindspot"].note


def test_the_card_command_takes_exhaustive(tmp_path: Path, small_data: Path) -> None:
    with FakeServer(responder=persona("fair"), models=(MODEL,)) as server:
        spec = f"judge:model={MODEL},base_url={server.base_url},form=score-only"
        said = {}
        for flag in ([], ["--exhaustive"]):
            result = runner.invoke(app, ["card", spec, "--data", str(small_data), "--budget",
                                         "small", "--dry-run", *flag, "--out",
                                         str(tmp_path / "card")])
            assert result.exit_code == 0, result.output
            said[bool(flag)] = " ".join(result.output.split())
        assert server.calls == 0
    assert "sequential design" in said[False] and "sequential design" not in said[True]


def test_an_evaluator_with_an_unbounded_score_keeps_every_example() -> None:
    # GPT-PPL's negated perplexity has no range: one example not yet seen can move a mean
    # without limit, so its card takes every example; BERTScore's scores lie in [-1, 1]
    gpt = plan_card("gpt-ppl", budget="small")
    assert gpt.evaluator.score_range == {"neg_ppl": None} and not gpt.evaluator.bounded
    assert gpt.evaluator.model_based and all(not m.design for m in gpt.methods)
    assert plan_card("bertscore", budget="small").evaluator.bounded
