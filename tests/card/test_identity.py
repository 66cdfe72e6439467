"""The judge's identity across cards: the family warning, and what `evalstress compare` names
when the judge changed between two cards."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalstress.card.compare import read_card
from evalstress.card.identity import family_warnings, identity_changes
from evalstress.card.schema import card_problems
from evalstress.cli import app
from tests.card.conftest import runner

IDENTITY = {"model": "gpt-4o-mini", "served": ["gpt-4o-mini-2024-07-18"],
            "base_url": "https://api.openai.com/v1", "endpoint": "https://api.openai.com/v1",
            "prompt_sha256": "a" * 64, "contract_sha256": "b" * 64, "templates": {},
            "sampling": {"temperature": 0.0, "n": 1, "top_p": None, "max_tokens": 256,
                         "logprobs": True, "constrain": "off"},
            "evalstress": "0.1.0", "warnings": []}


def with_identity(card: dict[str, Any], **changed: Any) -> dict[str, Any]:
    made = copy.deepcopy(card)
    made["evaluator"]["identity"] = {**copy.deepcopy(IDENTITY), **changed}
    return made


def test_a_judge_of_the_generators_or_golds_family_is_warned_of() -> None:
    judge = "judge:model=gpt-4o-mini,base_url=https://api.openai.com/v1"
    [line] = family_warnings(judge, None, "model=gpt-4.1-2025-04-14")
    assert "generator (gpt-4.1-2025-04-14)" in line and "gpt family" in line
    [line] = family_warnings(judge, "judge:model=gpt-4o,base_url=https://x.example/v1", None)
    assert "gold evaluator (gpt-4o)" in line
    assert family_warnings(judge, "judge:model=claude-3-haiku", "model=llama-3-8b") == []
    assert family_warnings("bleu", None, "model=gpt-4.1") == []  # no model, no family


def test_the_changes_name_model_prompt_contract_and_sampling() -> None:
    first = {"evaluator": {"identity": IDENTITY}}
    second = {"evaluator": {"identity": {
        **IDENTITY, "served": ["gpt-4o-mini-2025-01-31"], "prompt_sha256": "c" * 64,
        "sampling": {**IDENTITY["sampling"], "temperature": 0.7}}}}
    assert identity_changes(first, second) == [
        "judge model changed: gpt-4o-mini-2024-07-18 → gpt-4o-mini-2025-01-31",
        "judge prompt changed: aaaaaaaaaaaa → cccccccccccc",
        "judge temperature changed: 0.0 → 0.7"]
    assert identity_changes(first, first) == []
    assert identity_changes(first, {"evaluator": {}}) == []  # a card of no judge


def test_compare_names_the_changed_judge_model_above_the_table(
        bleu_card: tuple[Path, str], tmp_path: Path) -> None:
    bleu = read_card(bleu_card[0])
    paths = []
    for name, served in (("one", "gpt-4o-mini-2024-07-18"), ("two", "gpt-4o-mini-2025-01-31")):
        card = with_identity(bleu, served=[served])
        assert card_problems(card) == []
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(card), encoding="utf-8")
    result = runner.invoke(app, ["compare", *map(str, paths), "--md", "-"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    said = next(i for i, line in enumerate(lines)
                if "judge model changed: gpt-4o-mini-2024-07-18 → gpt-4o-mini-2025-01-31"
                in line)
    table = next(i for i, line in enumerate(lines) if line.startswith("| test |"))
    assert said < table
    assert sum("changed:" in line for line in lines) == 1  # nothing else differs


@pytest.mark.parametrize("bad", [{"prompt_sha256": "not a hash"}, {"warnings": "one"}])
def test_an_identity_out_of_shape_departs_from_the_schema(
        bleu_card: tuple[Path, str], bad: dict[str, Any]) -> None:
    assert card_problems(with_identity(read_card(bleu_card[0]), **bad))


def test_the_terminal_warns_before_the_card_when_judge_and_gold_share_a_family(
        tmp_path: Path) -> None:
    from evalstress.llm.fake_server import FakeServer, Reply

    with FakeServer(default=Reply("4")) as server:
        judge = f"judge:model=gpt-4o-mini,base_url={server.base_url},form=score-only"
        gold = f"judge:model=gpt-4o,base_url={server.base_url}"
        result = runner.invoke(app, ["card", judge, "--gold", gold, "--budget", "small",
                                     "--dry-run", "--out", str(tmp_path / "card"),
                                     "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert ("warning: the judge (gpt-4o-mini) and the gold evaluator (gpt-4o) are both of "
            "the gpt family") in output
    assert "consistency" in output


def planned_card(tmp: Path, spec: str, name: str, keep: tuple[str, ...]) -> dict[str, Any]:
    """A small card of `spec` with only the methods in `keep` run (consistency left out)."""
    from dataclasses import replace

    from evalstress.card.make import make_card, plan_card
    from evalstress.card.run import CardOptions

    plan = plan_card(spec, budget="small")
    plan = replace(plan, methods=tuple(
        m if m.key in keep else replace(m, runs=False, reason="left out by this test")
        for m in plan.methods))
    return make_card(plan, CardOptions(out=tmp / name, cache_dir=tmp / "cache",
                                       workers=1)).to_dict()


def dated(responder: Any) -> Any:
    """A persona that answers under a dated snapshot name, as hosted endpoints do."""
    from dataclasses import replace

    return lambda body: replace(responder(body), model="gpt-4o-mini-2024-07-18")


def test_a_judge_card_without_consistency_still_records_the_identity(tmp_path: Path) -> None:
    from evalstress.llm.fake_server import FakeServer
    from evalstress.llm.personas import persona

    with FakeServer(responder=dated(persona("fair")), models=("gpt-4o-mini",)) as server:
        spec = f"judge:model=gpt-4o-mini,base_url={server.base_url},form=score-only"
        asked = planned_card(tmp_path, spec, "position", ("position",))
        silent = planned_card(tmp_path, spec, "none", ())
    assert card_problems(asked) == [] and card_problems(silent) == []
    assert asked["methods"]["consistency"]["status"] == "not run"
    identity = asked["evaluator"]["identity"]
    assert identity["model"] == "gpt-4o-mini"
    # completed from the position test's answers: the name the endpoint reported
    assert identity["served"] == ["gpt-4o-mini-2024-07-18"]
    assert identity["base_url"] == server.base_url
    assert identity["sampling"]["temperature"] == 0.0 and identity["sampling"]["n"] == 1
    assert len(identity["prompt_sha256"]) == 64 and len(identity["contract_sha256"]) == 64
    # a card whose methods asked nothing still has the planned identity, served unknown
    quiet = silent["evaluator"]["identity"]
    assert quiet["served"] == []
    assert {k: v for k, v in quiet.items() if k != "served"} == \
        {k: v for k, v in identity.items() if k != "served"}
    assert "gpt-4o-mini" in (Path(tmp_path / "none" / "card.md")).read_text(encoding="utf-8")


def test_compare_names_a_changed_model_and_prompt_between_two_such_cards(
        tmp_path: Path) -> None:
    from evalstress.llm.fake_server import FakeServer
    from evalstress.llm.personas import persona

    with FakeServer(responder=persona("fair"), models=("gpt-4o-mini", "gpt-4.1")) as server:
        first = planned_card(tmp_path, f"judge:model=gpt-4o-mini,base_url={server.base_url},"
                             "form=score-only", "one", ())
        second = planned_card(tmp_path, f"judge:model=gpt-4.1,base_url={server.base_url},"
                              "form=score-only,level=detailed", "two", ())
    paths = []
    for name, card in (("one", first), ("two", second)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(card), encoding="utf-8")
    result = runner.invoke(app, ["compare", *map(str, paths), "--md", "-"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "judge model asked changed: gpt-4o-mini → gpt-4.1" in output
    assert "judge prompt changed:" in output
