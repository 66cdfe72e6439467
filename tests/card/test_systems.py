"""The card's human correlation on data that lists other systems' outputs with human scores
(SummEval's layout): every output scored, summary and system level, intervals over documents."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import evalstress
from evalstress.card.make import plan_card
from evalstress.card.plan import SYSTEMS_MODE, system_score_fields
from evalstress.card.schema import card_problems
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import persona

#: scores each text by its number of words (a stand-in metric whose scores the test knows)
WORDS = "python:target=tests.evaluators.test_external:length_score"
SYSTEMS = ("s1", "s2", "s3", "s4")
#: per document, each system's summary length in words and its experts' coherence
LENGTHS = [[3, 5, 8, 12], [4, 4, 9, 6], [2, 7, 5, 11], [6, 3, 8, 10], [5, 9, 4, 12],
           [3, 6, 7, 9]]
COHERENCE = [[1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 4.0, 3.0], [1.0, 3.0, 2.0, 4.0],
             [2.0, 1.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0], [4.0, 3.0, 2.0, 1.0]]


def summeval_like(path: Path) -> Path:
    rows = []
    for doc, (lengths, coherence) in enumerate(zip(LENGTHS, COHERENCE, strict=True)):
        rows.append({
            "id": f"doc-{doc}", "source": "An article about a town and its river.",
            "highlight": "The town's river rose. People moved to higher ground.",
            "references": ["The river in the town rose and people left."],
            "systems": [{"system": sid, "summary": " ".join(["word"] * n), "coherence": c,
                         "fluency": 3.0}
                        for sid, n, c in zip(SYSTEMS, lengths, coherence, strict=True)]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_scored_system_outputs_plan_the_correlation_as_its_own_study(tmp_path: Path) -> None:
    data = summeval_like(tmp_path / "summeval.jsonl")
    plan = plan_card(WORDS, data=data, field_map=["hypothesis=highlight"],
                     task="summarization", budget="small")
    method = plan.method("correlation")
    assert method.runs and method.mode == SYSTEMS_MODE and method.kind == "study"
    assert system_score_fields(plan.examples) == ("coherence", "fluency")
    # the originals carry no human score: the blind-spot run adds no correlation of its own
    assert plan.method("blindspot").analyses == ("blindspot",)


def test_a_system_map_without_scores_plans_no_correlation(tmp_path: Path) -> None:
    path = tmp_path / "wmt.jsonl"  # WMT21's layout: systems maps a system to its text
    path.write_text(json.dumps({"id": "w0", "source": "Ein Satz.", "ref_a": "A sentence.",
                                "ref_b": "One sentence.", "systems": {"A": "A sentence."}})
                    + "\n", encoding="utf-8")
    plan = plan_card("bleu", data=path, field_map=["hypothesis=ref_a", "references=ref_b"],
                     task="translation", budget="small")
    assert not plan.method("correlation").runs


def test_the_card_correlates_every_output_at_summary_and_system_level(tmp_path: Path) -> None:
    data = summeval_like(tmp_path / "summeval.jsonl")
    out, cache = tmp_path / "card", tmp_path / "cache"
    made = evalstress.card(WORDS, data, mapping=["hypothesis=highlight"],
                           task="summarization", budget="small", out=out, cache_dir=cache)
    card = made.to_dict()
    assert card_problems(card) == []
    section = card["methods"]["correlation"]
    assert section["status"] == "run" and section["files"] == {
        "results": "runs/correlation/correlation.json"}
    assert (out / "runs" / "correlation" / "correlation.json").exists()
    rows = {(r["human"], r["level"], r["method"]): r for r in section["results"]["rows"]}
    lengths, coherence = np.array(LENGTHS, float), np.array(COHERENCE)
    # summary level: the mean over the 6 documents of Kendall across their 4 systems
    per_doc = [stats.kendalltau(x, y).statistic for x, y in zip(lengths, coherence,
                                                                 strict=True)]
    summary = rows[("coherence", "segment-doc", "kendall")]
    assert summary["value"] == pytest.approx(np.mean(per_doc))
    assert summary["n"] == 6 and summary["ci_low"] <= summary["value"] <= summary["ci_high"]
    # system level: Kendall and Spearman of the 4 systems' means
    system = rows[("coherence", "system", "kendall")]
    assert system["value"] == pytest.approx(
        stats.kendalltau(lengths.mean(0), coherence.mean(0)).statistic)
    assert rows[("coherence", "system", "spearman")]["value"] == pytest.approx(
        stats.spearmanr(lengths.mean(0), coherence.mean(0)).statistic)
    assert system["n"] == 4
    # fluency is the same 3.0 everywhere: undefined, never a number
    assert rows[("fluency", "system", "kendall")]["value"] is None
    from evalstress.card.findings import correlation_findings

    texts = [f.text for f in correlation_findings(section, lambda *args: None)]
    assert any("at system level" in t and "4 systems" in t for t in texts)
    assert any("at item level" in t and "6 items" in t for t in texts)


def test_a_correlation_whose_interval_holds_zero_is_undecided(tmp_path: Path) -> None:
    from evalstress.card.findings import correlation_findings

    section = {"results": {"rows": [
        {"human": "fluency", "level": "system", "method": "kendall", "value": 0.12,
         "ci_low": -0.13, "ci_high": 0.45, "n": 16},
        {"human": "coherence", "level": "system", "method": "kendall", "value": 0.32,
         "ci_low": 0.03, "ci_high": 0.55, "n": 16}]}, "files": {}}
    found = correlation_findings(section, lambda *args: None)
    assert [f.text.split(":")[0] for f in found] == [
        "Follows human coherence ratings at system level (each system's mean)"]
    section["results"]["rows"][1]["ci_low"] = -0.01
    text = correlation_findings(section, lambda *args: None)[0].text
    assert text.startswith("Undecided whether it follows human coherence ratings")
    assert "95% CI -0.01 to 0.55, 16 systems" in text


def test_a_card_made_again_reuses_the_correlation(tmp_path: Path) -> None:
    data = summeval_like(tmp_path / "summeval.jsonl")
    said: list[str] = []
    from evalstress.card.make import make_card
    from evalstress.card.run import CardOptions

    plan = plan_card(WORDS, data=data, field_map=["hypothesis=highlight"],
                     task="summarization", budget="small")
    options = CardOptions(tmp_path / "card", cache_dir=tmp_path / "cache", workers=1,
                          say=said.append)
    make_card(plan, options)
    said.clear()
    again = make_card(plan, options).to_dict()
    assert any(line.startswith("human correlation: reused") for line in said)
    assert again["cost"]["methods"]["correlation"]["reused"] is True


def test_the_card_adds_the_agreement_block_and_the_raters_when_lists_are_given(
        tmp_path: Path) -> None:
    import krippendorff

    from evalstress.card.run import CardOptions
    from evalstress.card.systems import correlate_systems

    rows = []
    raters = np.array(COHERENCE)[..., None] + np.array([-1.0, 0.0, 1.0])  # three raters
    raters[0, 0, 2] = 5.0
    for doc, lengths in enumerate(LENGTHS):
        rows.append({"id": f"doc-{doc}", "source": "An article.", "highlight": "A summary.",
                     "references": ["A reference."],
                     "systems": [{"system": sid, "summary": " ".join(["word"] * n),
                                  "coherence": list(raters[doc, k])}
                                 for k, (sid, n) in enumerate(zip(SYSTEMS, lengths,
                                                                  strict=True))]})
    data = tmp_path / "raters.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plan = plan_card(WORDS, data=data, field_map=["hypothesis=highlight"],
                     task="summarization", budget="small")
    assert system_score_fields(plan.examples) == ("coherence",)
    block = correlate_systems(plan, ["coherence"], CardOptions(tmp_path / "card"))[
        "analyses"]["agreement"]
    assert block["human_human_note"] == ""
    mean = raters.mean(axis=2)  # the evaluator is compared with the raters' mean
    tau = next(r for r in block["rows"] if (r["level"], r["statistic"]) == ("item", "tau_b"))
    assert tau["value"] == pytest.approx(np.mean(
        [stats.kendalltau(x, y).statistic for x, y in zip(LENGTHS, mean, strict=True)]))
    among = {(r["level"], r["statistic"]): r for r in block["human_human"]}
    within = np.stack([stats.rankdata(raters[:, :, k], axis=1).ravel() for k in range(3)])
    assert among[("item", "alpha")]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=within, level_of_measurement="ordinal"))
    from evalstress.card.findings import correlation_findings

    texts = [f.text for f in correlation_findings(
        {"results": {"rows": [], "agreement": block}, "files": {}}, lambda *args: None)]
    assert any(f"the raters among themselves: tau-b {among[('item', 'tau_b')]['value']:.2f}"
               in t for t in texts)


@pytest.mark.parametrize("spec", ["bleu", "rouge:types=rougeL", "persona:fair"])
def test_agreement_on_twenty_summeval_articles_matches_scipy_and_krippendorff(
        spec: str, tmp_path: Path, shared_data: Path) -> None:
    """The worked example: BLEU, ROUGE-L and a judge (the fake server's fair persona) against
    SummEval's experts on 20 articles x 16 systems, every value recomputed here from the same
    scores with scipy and krippendorff."""
    with contextlib.ExitStack() as stack:
        if spec.startswith("persona:"):
            server = stack.enter_context(FakeServer(responder=persona(spec.split(":")[1])))
            spec = (f"judge:model=fair,base_url={server.base_url},form=score-only,"
                    "backoff=0.01")
        check_summeval_agreement(spec, tmp_path, shared_data)


def check_summeval_agreement(spec: str, tmp_path: Path, shared_data: Path) -> None:
    import krippendorff

    from evalstress.card.run import CardOptions
    from evalstress.card.systems import correlate_systems, system_documents
    from evalstress.evaluators.base import create_evaluator
    from evalstress.studies.correlate import score_system_outputs

    lines = (shared_data / "summeval.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    data = tmp_path / "summeval20.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    plan = plan_card(spec, data=data, field_map=["hypothesis=highlight",
                                                 "references=references"],
                     task="summarization", budget="standard")  # the small one takes 8
    fields = system_score_fields(plan.examples)
    assert fields == ("coherence", "consistency", "fluency", "relevance")
    cache = tmp_path / "cache"
    block = correlate_systems(plan, fields, CardOptions(tmp_path / "card", cache_dir=cache))[
        "analyses"]["agreement"]
    assert (block["items"], block["systems"]) == (20, 16)
    assert block["human_human_note"] == ("not available: the data gives one (averaged) score "
                                         "per output")
    evaluator = create_evaluator(spec)
    scores, human, _ = score_system_outputs(system_documents(plan.examples, fields),
                                            [evaluator])
    evaluator.close()
    wide = scores.pivot_table(index="doc_id", columns="system_id", values="score")
    for aspect in fields:
        hum = human.pivot_table(index="doc_id", columns="system_id", values=aspect)
        metric = wide.loc[hum.index, hum.columns].to_numpy()
        people = hum.to_numpy()
        got = {(r["level"], r["statistic"]): r for r in block["rows"] if r["human"] == aspect}
        per_item = [stats.kendalltau(m, h).statistic for m, h in zip(metric, people,
                                                                    strict=True)]
        assert got[("item", "tau_b")]["value"] == pytest.approx(np.nanmean(per_item))
        # items where the experts (or the metric) tie all 16 summaries rank nothing
        varied = np.repeat((np.ptp(people, axis=1) > 0) & (np.ptp(metric, axis=1) > 0), 16)
        within = np.stack([stats.rankdata(metric, axis=1).ravel(),
                           stats.rankdata(people, axis=1).ravel()])[:, varied]
        assert got[("item", "alpha")]["value"] == pytest.approx(krippendorff.alpha(
            reliability_data=within, level_of_measurement="ordinal"))
        assert got[("item", "alpha")]["n"] == varied.sum() // 16
        means = metric.mean(axis=0), people.mean(axis=0)
        assert got[("system", "tau_b")]["value"] == pytest.approx(
            stats.kendalltau(*means).statistic)
        assert got[("system", "alpha")]["value"] == pytest.approx(krippendorff.alpha(
            reliability_data=np.stack([stats.rankdata(m) for m in means]),
            level_of_measurement="ordinal"))
        for r in got.values():  # the Holm interval holds the 95% one, both hold the value
            assert r["low"] <= r["ci_low"] <= r["value"] <= r["ci_high"] <= r["high"]
            assert r["verdict"] == ("agrees" if r["low"] > 0 else
                                    "disagrees" if r["high"] < 0 else "inconclusive")
