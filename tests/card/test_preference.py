"""Explicit human preferences on the card (card/preference.py, `--preferences`): a judge
persona of the fake server on pairs made from SummEval, whose expert relevance says which
summary people preferred; the persona's own rule gives the picks the card must count."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.card.compare import compare_cards, compare_markdown
from evalstress.card.make import make_card, plan_card
from evalstress.card.plan import CardPlan
from evalstress.card.run import CardOptions
from evalstress.card.schema import card_problems
from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import coverage, persona

SUMMEVAL = Path("/work/shared/data/summeval.jsonl")
DATA = SUMMEVAL if SUMMEVAL.exists() else Path(__file__).parents[2] / "shared" / "data" / \
    "summeval.jsonl"
MODEL = "gpt-4o-mini"
ARTICLES = 12

pytestmark = pytest.mark.skipif(not DATA.exists(), reason="SummEval data not present")


def summeval_pairs(path: Path) -> list[dict[str, Any]]:
    """Of each of the first articles, neighbouring systems' summaries whose expert relevance
    differs: the one rated higher is the one people preferred."""
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    pairs = []
    for row in rows[:ARTICLES]:
        systems = row["systems"]
        for i in range(0, len(systems) - 1, 2):
            a, b = systems[i], systems[i + 1]
            if a["relevance"] == b["relevance"]:
                continue
            pairs.append({"id": f"{row['id']}-{i}", "item": row["id"], "source": row["source"],
                          "a": a["summary"], "b": b["summary"], "task": "summarization",
                          "references": row["references"][:1],
                          "preference": "a" if a["relevance"] > b["relevance"] else "b"})
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    return pairs


def correlation_only(plan: CardPlan) -> CardPlan:
    return replace(plan, methods=tuple(
        m if m.key == "correlation" else replace(m, runs=False, reason="left out by this test")
        for m in plan.methods))


def spec(server: FakeServer) -> str:
    return f"judge:model={MODEL},base_url={server.base_url},form=score-only,backoff=0.01"


def card_of(tmp: Path, who: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pairs = summeval_pairs(tmp / "prefs.jsonl")
    with FakeServer(responder=persona(who), models=(MODEL,)) as server:
        plan = correlation_only(plan_card(spec(server), budget="small",
                                          preferences=tmp / "prefs.jsonl"))
        made = make_card(plan, CardOptions(out=tmp / name, cache_dir=tmp / "cache", workers=1))
    return made.to_dict(), pairs


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.fixture(scope="module")
def fair(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[Any], Path]:
    tmp = tmp_path_factory.mktemp("fair")
    card, pairs = card_of(tmp, "fair", "fair")
    return card, pairs, tmp


def rows(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    block = card["methods"]["correlation"]["results"]["agreement"]["preferences"]
    return {r["reading"]: r for r in block["rows"]}


def test_the_fair_persona_is_counted_as_its_rule_says(fair: tuple[Any, ...]) -> None:
    card, pairs, _ = fair
    assert card_problems(card) == []
    # the fair persona rates the share of the source's content words a summary covers: the
    # higher share is its pick, equal shares a tie (a miss)
    hits = ties = 0
    for pair in pairs:
        ca, cb = coverage(pair["source"], pair["a"]), coverage(pair["source"], pair["b"])
        ties += ca == cb
        hits += ca != cb and ("a" if ca > cb else "b") == pair["preference"]
    low, high = wilson(hits, len(pairs))
    for reading in ("scores", "pairwise"):  # the same rule read both ways
        row = rows(card)[reading]
        assert (row["pairs"], row["agree"], row["evaluator_ties"]) == (len(pairs), hits, ties)
        assert row["ci_low"] == pytest.approx(low) and row["ci_high"] == pytest.approx(high)
        assert row["flips"] == 0 and row["items"] == ARTICLES
        assert row["conf"] == pytest.approx(1 - 0.05 / 2)  # Holm over two tests, none passes
        assert row["low"] <= row["accuracy"] <= row["high"]


def test_a_judge_that_follows_the_slot_misses_every_flipped_pair(tmp_path: Path) -> None:
    card, pairs = card_of(tmp_path, "position:3", "slot")
    found = rows(card)
    # shown first gains 3 points: every pair flips with the order, each a miss
    assert found["pairwise"]["flips"] == len(pairs) and found["pairwise"]["agree"] == 0
    assert found["pairwise"]["verdict"] == "disagrees"
    # its scores of one text at a time know no slot: as the fair rule
    hits = sum(coverage(p["source"], p["a"]) != coverage(p["source"], p["b"]) and
               ("a" if coverage(p["source"], p["a"]) > coverage(p["source"], p["b"])
                else "b") == p["preference"] for p in pairs)
    assert found["scores"]["agree"] == hits


def test_card_md_html_json_and_compare_show_the_preference_rows(fair: tuple[Any, ...]) -> None:
    card, pairs, tmp = fair
    md = (tmp / "fair" / "card.md").read_text(encoding="utf-8")
    html = (tmp / "fair" / "card.html").read_text(encoding="utf-8")
    assert "**Agreement with the human preferences**" in md
    assert f"| overall | preference | pairwise | {len(pairs)} |" in md
    assert "t-agreement-preferences" in html
    assert "the raters among themselves: not available" in md
    table = compare_cards([card, card], ["one", "two"])
    text = compare_markdown(table)
    assert "human preference preference, pairwise" in text
    assert "human preference preference, scores" in text


def test_a_rerun_asks_nothing_and_a_changed_file_runs_the_method_again(
        tmp_path: Path) -> None:
    pairs = summeval_pairs(tmp_path / "prefs.jsonl")
    options = CardOptions(out=tmp_path / "card", cache_dir=tmp_path / "cache", workers=1)
    with FakeServer(responder=persona("fair"), models=(MODEL,)) as server:
        plan = correlation_only(plan_card(spec(server), budget="small",
                                          preferences=tmp_path / "prefs.jsonl"))
        first = make_card(plan, options).to_dict()
        asked = server.calls
        again = make_card(plan, options).to_dict()
        assert server.calls == asked > 0  # reused: its fingerprint holds the file's hash
        (tmp_path / "prefs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs[1:]),
                                              encoding="utf-8")
        fewer = correlation_only(plan_card(spec(server), budget="small",
                                           preferences=tmp_path / "prefs.jsonl"))
        assert fewer.fingerprint("correlation") != plan.fingerprint("correlation")
        third = make_card(fewer, options).to_dict()
    assert again["methods"]["correlation"]["results"] == first["methods"]["correlation"][
        "results"]
    assert rows(third)["scores"]["pairs"] == len(pairs) - 1
    settings = plan.method("correlation").to_dict()["settings"]["preferences"]
    assert settings["pairs"] == len(pairs) and settings["items"] == ARTICLES
    assert plan.method("correlation").mode == "preferences"


runner = CliRunner()


def test_a_bad_preference_file_is_one_error_line_before_any_work(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": "x", "b": "y", "preference": "a"}\n{"a": "x", "preference": "b"}\n',
                   encoding="utf-8")
    for args in (["card", "bleu", "--preferences", str(bad), "--out", str(tmp_path / "c")],
                 ["correlate", "--preferences", str(bad), "--out", str(tmp_path / "r")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert f"{bad}, line 2, field 'b': is missing" in result.output
        assert not (tmp_path / "c").exists() and not (tmp_path / "r").exists()


def test_correlate_takes_a_preference_file_alone(tmp_path: Path) -> None:
    pairs = summeval_pairs(tmp_path / "prefs.jsonl")
    result = runner.invoke(app, ["correlate", "--preferences", str(tmp_path / "prefs.jsonl"),
                                 "-e", "rouge", "-e", "bleu", "--n-boot", "200",
                                 "--out", str(tmp_path / "run"),
                                 "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    block = results["analyses"]["preference"]
    assert {r["evaluator"] for r in block["rows"]} == {"rouge", "bleu"}
    assert all(r["pairs"] + r["missing"] == len(pairs) for r in block["rows"])
    assert "Agreement with the human preferences" in result.output


def test_correlate_exits_3_when_an_evaluators_scores_are_mostly_missing(
        tmp_path: Path) -> None:
    # BLEU needs references; these pairs give none, so every score is missing
    path = tmp_path / "bare.jsonl"
    path.write_text("".join(json.dumps({"a": f"one {i}", "b": f"two {i}", "preference": "a"})
                            + "\n" for i in range(4)), encoding="utf-8")
    result = runner.invoke(app, ["correlate", "--preferences", str(path), "-e", "bleu",
                                 "--n-boot", "50", "--out", str(tmp_path / "run"),
                                 "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 3, result.output
    block = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))[
        "analyses"]["preference"]
    assert block["rows"][0]["missing"] == 4 and block["rows"][0]["pairs"] == 0


def test_the_dry_run_counts_the_pairs_texts_and_a_judges_calls(tmp_path: Path) -> None:
    from evalstress.card.estimate import estimate_card

    pairs = summeval_pairs(tmp_path / "prefs.jsonl")
    with FakeServer(responder=persona("fair"), models=(MODEL,)) as server:
        plan = plan_card(spec(server), budget="small", preferences=tmp_path / "prefs.jsonl")
        row = next(e for e in estimate_card(plan, CardOptions(out=tmp_path / "card"))
                   if e.key == "correlation")
    # each pair's two texts scored; each pair asked in both orders on the judge's one aspect
    assert row.texts == 2 * len(pairs) and row.calls == 2 * len(pairs)


def test_the_terminal_prints_a_line_per_preference_test(fair: tuple[Any, ...]) -> None:
    from evalstress.card.agreement import preference_lines

    card, pairs, _ = fair
    lines = preference_lines(card["methods"]["correlation"])
    assert lines[0].startswith(f"human preferences ({len(pairs)} pairs, {ARTICLES} items, "
                               "Holm over 2 tests")
    assert any("overall on preference, pairwise: accuracy" in line for line in lines[1:])


def test_votes_give_the_raters_agreement_on_the_card(tmp_path: Path) -> None:
    # 12 items; three raters; a metric that scores by the reference it is given
    rows = [{"id": f"p{i}", "item": f"q{i}", "a": "the cat sat on the mat",
             "b": "a dog ran in the park", "references": ["the cat sat on the mat"],
             "votes": ["a", "a", "b" if i % 3 == 0 else "a"]} for i in range(12)]
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plan = correlation_only(plan_card("bleu", budget="small", preferences=path))
    card = make_card(plan, CardOptions(out=tmp_path / "card", cache_dir=tmp_path / "cache",
                                       workers=1)).to_dict()
    assert card_problems(card) == []
    found = card["methods"]["correlation"]["results"]["agreement"]["preferences"]
    row = found["rows"][0]
    assert (row["pairs"], row["agree"], row["verdict"]) == (12, 12, "agrees")
    rater = found["raters"][0]
    # by hand: 4 pairs split 2-1 (1/3 of rater pairs alike), 8 unanimous
    assert rater["agreement"] == pytest.approx((4 / 3 + 8) / 12)
    md = (tmp_path / "card" / "card.md").read_text(encoding="utf-8")
    assert "The raters' votes among themselves:" in md


def test_beside_scored_system_outputs_the_pairs_join_the_same_agreement_block(
        tmp_path: Path) -> None:
    pairs = summeval_pairs(tmp_path / "prefs.jsonl")
    data = tmp_path / "summeval.jsonl"
    rows = DATA.read_text(encoding="utf-8").splitlines()[:12]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    plan = correlation_only(plan_card("bleu", data=data, field_map=["hypothesis=highlight"],
                                      budget="small", preferences=tmp_path / "prefs.jsonl"))
    assert plan.method("correlation").mode == "systems"
    card = make_card(plan, CardOptions(out=tmp_path / "card", cache_dir=tmp_path / "cache",
                                       workers=1)).to_dict()
    assert card_problems(card) == []
    block = card["methods"]["correlation"]["results"]["agreement"]
    assert block["rows"] and block["systems"] == 16  # the systems' agreement, as before
    assert block["preferences"]["pairs"] == len(pairs)
    md = (tmp_path / "card" / "card.md").read_text(encoding="utf-8")
    assert "**Agreement with the human raters**" in md
    assert "**Agreement with the human preferences**" in md


def test_the_python_card_takes_preferences_and_checks_them_first(tmp_path: Path) -> None:
    import evalstress
    from evalstress.core.userfile import DataError

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": "x", "b": "y", "preference": "maybe"}\n', encoding="utf-8")
    with pytest.raises(DataError, match="line 1, field 'preference'"):
        evalstress.card("bleu", budget="small", preferences=bad, out=tmp_path / "card")
    assert not (tmp_path / "card").exists()


def test_preference_picks_mostly_missing_make_the_card_unhealthy(tmp_path: Path) -> None:
    # BLEU needs references; the first 3 of these 4 pairs give none, so 3 of 4 picks are
    # missing: above the default 50%, the card's run is unhealthy (`card` exits 3)
    rows = [{"id": f"p{i}", "a": "the cat sat on the mat", "b": "a dog ran in the park",
             "preference": "a", **({"references": ["the cat sat on the mat"]} if i == 3
                                   else {})} for i in range(4)]
    path = tmp_path / "bare.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plan = correlation_only(plan_card("bleu", budget="small", preferences=path))
    made = make_card(plan, CardOptions(out=tmp_path / "card", cache_dir=tmp_path / "cache",
                                       workers=1))
    assert card_problems(made.to_dict()) == []
    found = {s.evaluator: s for s in made.missing_shares()}
    share = found["bleu on the preference pairs (bleu, scores)"]
    assert (share.missing, share.rows) == (3, 4)
    assert "reference" in share.top_reason
    assert made.mostly_missing


def test_answered_preference_pairs_leave_the_card_healthy(tmp_path: Path) -> None:
    rows = [{"id": f"p{i}", "a": "the cat sat on the mat", "b": "a dog ran in the park",
             "references": ["the cat sat on the mat"], "preference": "a"} for i in range(4)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plan = correlation_only(plan_card("bleu", budget="small", preferences=path))
    made = make_card(plan, CardOptions(out=tmp_path / "card", cache_dir=tmp_path / "cache",
                                       workers=1))
    assert not [s for s in made.missing_shares() if "preference" in s.evaluator]
