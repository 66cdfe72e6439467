"""Where a card's methods score: `card` and `atlas` take `run`'s --backend and --ray-address,
refuse --shard with the reason, and a card made on Ray (inside this process, or on a two-node
cluster started with `ray start`) is the local card apart from the fields that say how it ran."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalstress.card import CardOptions, card, make_card, plan_card
from evalstress.card.execution import needs_cluster, run_backend, shard_cost
from evalstress.card.schema import card_problems
from evalstress.cli import app
from evalstress.job import SettingsError
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import persona
from tests.card.conftest import runner

STRESS = ("blindspot", "discernment", "criteria")


def one_line(text: str) -> str:
    return " ".join(text.split())


# --- what card.json says of where a method scored -------------------------------------------


def test_a_local_run_is_said_local_and_its_cost_kept() -> None:
    results = {"config": {"backend": "local"}, "evaluators": {"bleu": {"stats": {}}}}
    assert run_backend(results) == {"name": "local"}
    cost = {"requested": 10, "distinct": 8, "cached": 3, "scored": 5, "calls": 1}
    assert shard_cost(cost, results) == cost


def test_a_ray_run_names_its_shards_nodes_and_counts_what_the_shards_scored() -> None:
    # two shards on two nodes, a third merged by an earlier run; the driver's pass found the
    # 40 texts the shards scored in the cache, beside 5 cached before the run
    placement = [{"shard": 0, "reused": False, "node": "n1"},
                 {"shard": 1, "reused": False, "node": "n2"},
                 {"shard": 2, "reused": True}]
    results = {"backend": {"name": "ray", "shards": 3, "placement": placement,
                           "shard_stats": {"bleu": {"scored": 40, "calls": 3}}}}
    assert run_backend(results) == {"name": "ray", "shards": 3, "nodes": 2,
                                    "reused_shards": 1}
    driver = {"requested": 50, "distinct": 45, "cached": 45, "scored": 0, "calls": 0}
    assert shard_cost(driver, results) == {"requested": 50, "distinct": 45, "cached": 5,
                                           "scored": 40, "calls": 3}


def test_a_judge_s_card_needs_no_cluster_a_metric_s_does() -> None:
    bleu = plan_card("bleu", budget="small")
    judge = plan_card("judge:model=m,base_url=http://127.0.0.1:9,form=score-only",
                      budget="small")
    assert needs_cluster([bleu], "ray") and not needs_cluster([bleu], "local")
    # the judge scores on the driver in every method: Ray would have nothing to do
    assert not needs_cluster([judge], "ray")
    assert needs_cluster([judge, bleu], "ray")


# --- refused before any work -----------------------------------------------------------------


def test_a_card_in_shards_is_refused_with_the_reason_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "card"
    result = runner.invoke(app, ["card", "bleu", "--shard", "0/2", "--out", str(out)])
    assert result.exit_code == 2
    said = one_line(result.output)
    assert "--shard 0/2: a card is not made in shards" in said
    assert "--backend ray" in said and "Traceback" not in said
    assert not out.exists()
    config = tmp_path / "card.yaml"
    config.write_text("shard: 1/2\n", encoding="utf-8")
    result = runner.invoke(app, ["card", "bleu", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 2
    assert f"{config}: field 'shard' 1/2: a card is not made in shards" in one_line(
        result.output)
    assert not out.exists()


def test_card_and_atlas_refuse_what_run_refuses_of_the_backend(tmp_path: Path) -> None:
    for command in (["card", "bleu", "--out", str(tmp_path / "card")],
                    ["atlas", "--only", "bleu", "--work", str(tmp_path / "work")]):
        result = runner.invoke(app, [*command, "--ray-address", "head:6379"])
        assert result.exit_code == 2, result.output
        assert "--ray-address head:6379: add --backend ray" in one_line(result.output)
        result = runner.invoke(app, [*command, "--backend", "spark"])
        assert result.exit_code == 2, result.output
        assert "--backend" in result.output and "spark" in result.output
    result = runner.invoke(app, ["atlas", "--only", "bleu", "--shard", "0/2", "--work",
                                 str(tmp_path / "work")])
    assert result.exit_code == 2
    assert "--shard 0/2: a card is not made in shards" in one_line(result.output)
    assert not (tmp_path / "card").exists() and not (tmp_path / "work").exists()


def test_the_python_card_checks_its_backend_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"card\(backend=\.\.\.\) 'spark': choose local or "
                                            "ray"):
        card("bleu", budget="small", out=tmp_path / "card", backend="spark")
    assert not (tmp_path / "card").exists()


# --- the same card on Ray ---------------------------------------------------------------------


def how_it_ran_removed(made: dict[str, Any]) -> dict[str, Any]:
    """The card less exactly the fields that say how, where and when it was made: `created`;
    the paths of card.json, card.md and card.html (absolute); the seconds; each stress
    method's `backend`; and the scoring counts `scored`, `cached` and `calls` (in `cost` and
    in each method's `cost`): a Ray shard scores into a fresh cache of its own, so it scores
    again a text an earlier method of the card left in the driver's cache."""
    card_ = copy.deepcopy(made)
    del card_["created"]
    for name in ("card_json", "card_md", "card_html"):
        del card_["files"][name]
    for name in ("seconds", "calls"):
        del card_["cost"][name]
    for method in card_["cost"]["methods"].values():
        for name in ("seconds", "first_seconds", "scored", "cached", "calls"):
            method.pop(name, None)
    for section in card_["methods"].values():
        section.pop("backend", None)
        for name in ("scored", "cached", "calls"):
            section["cost"].pop(name, None)
    return card_


def make(tmp: Path, name: str, *flags: str) -> dict[str, Any]:
    """`evalstress card bleu --budget small` into tmp/name with a cache of its own; card.json."""
    result = runner.invoke(app, ["card", "bleu", "--budget", "small", "--workers", "1",
                                 "--out", str(tmp / name), "--cache-dir",
                                 str(tmp / f"{name}-cache"), "--quiet", *flags])
    assert result.exit_code == 0, result.output
    made: dict[str, Any] = json.loads((tmp / name / "card.json").read_text("utf-8"))
    assert card_problems(made) == []
    return made


def assert_same_card(local: dict[str, Any], on_ray: dict[str, Any], nodes: int) -> None:
    assert how_it_ran_removed(on_ray) == how_it_ran_removed(local)
    for key in STRESS:
        assert local["methods"][key]["backend"] == {"name": "local"}
        backend = on_ray["methods"][key]["backend"]
        assert backend["name"] == "ray" and backend["shards"] == 2
        assert backend["nodes"] == nodes and backend["reused_shards"] == 0
        # the shards' scoring is counted: at least what the local card scored, of as many
        # distinct texts
        mine, theirs = local["methods"][key]["cost"], on_ray["methods"][key]["cost"]
        assert theirs["distinct"] == mine["distinct"] and theirs["scored"] >= mine["scored"] > 0
    assert [f["text"] for f in on_ray["findings"]] == [f["text"] for f in local["findings"]]


@pytest.mark.usefixtures("in_process_ray")
class TestInProcess:
    """A Ray started in this process (2 CPUs): the card joins it and leaves it running."""

    @pytest.mark.slow
    def test_a_card_on_ray_is_the_local_card(self, tmp_path: Path) -> None:
        import ray

        local = make(tmp_path, "local")
        on_ray = make(tmp_path, "ray", "--backend", "ray")
        assert ray.is_initialized()  # a Ray the card found started is left as it was
        assert_same_card(local, on_ray, nodes=1)

    @pytest.mark.slow
    def test_the_real_data_atlas_on_ray_is_the_local_one(
            self, tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """BLEU on WMT21 under the papers' protocols (five seeds of paper 002's suite), on the
        first 8 examples instead of the atlas's 100."""
        from evalstress.card import realatlas

        monkeypatch.setattr(realatlas, "EXAMPLES", 8)
        made = {}
        for backend in ("local", "ray"):
            folder = tmp_path / backend
            result = runner.invoke(app, [
                "atlas", "--data-dir", str(shared_data), "--only", "bleu-wmt21", "--work",
                str(folder / "work"), "--published", str(folder / "published"), "--page",
                str(folder / "atlas-real.md"), "--cache-dir", str(folder / "cache"),
                "--quiet", "--backend", backend])
            assert result.exit_code == 0, result.output
            made[backend] = json.loads(
                (folder / "published" / "bleu-wmt21" / "card.json").read_text("utf-8"))
        assert made["local"]["data"]["examples"] == 8
        assert made["local"]["methods"]["blindspot"]["suite"] == "paper-translation"
        assert how_it_ran_removed(made["ray"]) == how_it_ran_removed(made["local"])
        assert {made["ray"]["methods"][key]["backend"]["shards"] for key in STRESS} == {2}


@pytest.mark.slow
def test_a_judge_s_card_on_ray_scores_on_the_driver_and_starts_no_ray(
        tmp_path: Path, ray_without_tokens: None) -> None:
    """The judge is asked by this process in every method (its cache, limits and usage stay
    in one place), so the card asks for no Ray and is the local card."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    made, calls = {}, {}
    with FakeServer(responder=persona("fair"), models=("gpt-4o-mini",)) as server:
        spec = f"judge:model=gpt-4o-mini,base_url={server.base_url},form=score-only"
        # a card on Ray is exhaustive: the local card it is compared with is made so too
        plan = plan_card(spec, budget="small", exhaustive=True)
        plan = replace(plan, methods=tuple(  # blind spots and bias probes: two stress jobs
            m if m.key in ("blindspot", "bias") else replace(m, runs=False, reason="left out")
            for m in plan.methods))
        for backend in ("local", "ray"):
            before = server.calls
            made[backend] = make_card(plan, CardOptions(
                tmp_path / backend, cache_dir=tmp_path / f"{backend}-cache", workers=1,
                backend=backend)).to_dict()
            calls[backend] = server.calls - before
    assert not ray.is_initialized()
    assert calls["ray"] == calls["local"] > 0
    assert how_it_ran_removed(made["ray"]) == how_it_ran_removed(made["local"])
    for key in ("blindspot", "bias"):  # each job went through run_on_ray, which sent no shard
        assert made["ray"]["methods"][key]["backend"] == {"name": "ray", "shards": 0,
                                                          "nodes": 0, "reused_shards": 0}


@pytest.mark.long_run  # two `ray start` nodes, a card and an atlas each way: about 2 minutes
def test_a_card_and_the_atlas_on_a_two_node_cluster_are_the_local_ones(
        cluster: str, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    assert not ray.is_initialized()  # each command joins the cluster itself, then leaves
    local = make(tmp_path, "local")
    on_ray = make(tmp_path, "ray", "--backend", "ray", "--ray-address", cluster)
    assert not ray.is_initialized()
    assert_same_card(local, on_ray, nodes=2)

    def atlas(name: str, *flags: str) -> dict[str, Any]:
        result = runner.invoke(app, [
            "atlas", "--only", "bleu", "--work", str(tmp_path / name / "work"), "--published",
            str(tmp_path / name / "published"), "--page", str(tmp_path / name / "atlas.md"),
            "--cache-dir", str(tmp_path / name / "cache"), "--quiet", *flags])
        assert result.exit_code == 0, result.output
        published: dict[str, Any] = json.loads(
            (tmp_path / name / "published" / "bleu" / "card.json").read_text("utf-8"))
        return published

    atlas_local = atlas("atlas-local")
    atlas_ray = atlas("atlas-ray", "--backend", "ray", "--ray-address", cluster)
    assert how_it_ran_removed(atlas_ray) == how_it_ran_removed(atlas_local)
    assert {atlas_ray["methods"][key]["backend"]["nodes"] for key in STRESS} == {2}
    # how long each card took and how much of it was scored in this make (Ray's shards score
    # into caches of their own)
    pages = [re.sub(r"\b\d[\d,.]* (s|min)\b", "TIME", re.sub(
                 r": [\d,]+ of ([\d,]+) texts scored(, [\d,]+ model calls)?",
                 r": SCORED of \1 texts", (tmp_path / name / "atlas.md").read_text("utf-8")))
             for name in ("atlas-local", "atlas-ray")]
    assert "TIME" in pages[0] and pages[0] == pages[1]


def test_the_standard_card_suggested_after_a_small_one_keeps_the_backend() -> None:
    from evalstress.cli.card import card_next
    from evalstress.job.studysettings import CardSettings

    s = CardSettings.resolve({"specs": ["bleu"], "budget": "small", "backend": "ray",
                              "ray_address": "head:6379"})
    command, _ = card_next(s, [Path("cards/bleu")])
    assert command == ["card", "bleu", "--backend", "ray", "--ray-address", "head:6379",
                       "--budget", "standard", "--out", "cards/bleu-standard"]
    local = CardSettings.resolve({"specs": ["bleu"], "budget": "small"})
    assert card_next(local, [Path("cards/bleu")])[0] == [
        "card", "bleu", "--budget", "standard", "--out", "cards/bleu-standard"]


def test_a_sequential_plan_made_on_ray_is_made_exhaustive() -> None:
    judge = "judge:model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1,form=score-only"
    sequential = plan_card(judge, budget="small")
    assert any(m.design for m in sequential.methods)
    assert not any(m.design for m in sequential.exhaustive().methods)
    assert sequential.exhaustive().fingerprint("blindspot") == plan_card(
        judge, budget="small", exhaustive=True).fingerprint("blindspot")


def test_a_card_on_ray_plans_every_test_on_every_example(tmp_path: Path) -> None:
    """The sequential design decides look by look on one machine; the shards of a Ray job
    score every example at once, so a model-based evaluator's card on Ray is exhaustive (its
    dry run no longer says its counts are the most the design asks)."""
    with FakeServer(responder=persona("fair"), models=("persona-judge",)) as server:
        spec = f"judge:model=persona-judge,base_url={server.base_url},form=score-only"
        said = {}
        for flags in ([], ["--backend", "ray"]):
            result = runner.invoke(app, ["card", spec, "--budget", "small", "--dry-run",
                                         *flags, "--out", str(tmp_path / "card")])
            assert result.exit_code == 0, result.output
            said[bool(flags)] = one_line(result.output)
        assert server.calls == 0
    assert "the sequential design stops each test" in said[False]
    assert "sequential design" not in said[True]
