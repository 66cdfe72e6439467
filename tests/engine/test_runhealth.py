"""What a user sees when a run cannot be trusted: mostly missing scores exit 3 after writing
everything; rows beyond the text length limit are skipped by id, never a spaCy traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.variantfile import read_records
from evalstress.llm.fake_server import FakeServer, Reply

runner = CliRunner()
LONGER = ("The council met on Monday to discuss the new bridge over the river. Engineers said the "
          "old one was unsafe after the floods of last spring. Residents asked for a footpath "
          "and a cycle lane. The mayor promised a decision before the end of the year. Work "
          "could start in March if the budget allows it.")
SENTENCES = "Anna met Bo in Oslo on a cold day. They talked about the long winter. Bo left early."


def _data(tmp_path: Path, texts: dict[str, str]) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"id": i, "hypothesis": t, "references": [SENTENCES],
                                        "task": "summarization"}) + "\n"
                            for i, t in texts.items()))
    return path


def _text(result: object) -> str:
    return " ".join(str(getattr(result, "output", "")).split())


def _closed_port_url() -> str:
    with FakeServer() as srv:
        return srv.base_url  # nothing listens there once the server is closed


def test_a_judge_run_with_every_call_failing_exits_3_after_writing(tmp_path: Path) -> None:
    """The server is there (a judge on a closed port stops before any work: tests/job), but
    answers every request with a 503."""
    data = _data(tmp_path, {"a": SENTENCES, "b": SENTENCES.replace("Oslo", "Bergen")})
    out = tmp_path / "run"
    with FakeServer(default=Reply(status=503, error="overloaded")) as server:
        judge = (f"judge:model=m,base_url={server.base_url},form=score-only,max_attempts=1,"
                 "backoff=0.01")
        args = ["run", str(data), "-e", judge, "-p", "truncation", "--seeds", "1", "--out",
                str(out), "--no-cache"]
        result = runner.invoke(app, args)
        assert result.exit_code == 3, result.output
        said = _text(result)
        # 2 originals + 2 examples x 5 truncation severities = 12 requests, every one failed
        assert "12 of 12 scores missing (100%)" in said
        assert "HTTP 503" in said and "overloaded" in said
        assert (out / "results.json").exists() and (out / "scores.parquet").exists()
        # --max-missing 1 accepts the run
        again = runner.invoke(app, [*args, "--max-missing", "1"])
        assert again.exit_code == 0, again.output


@pytest.mark.parametrize(("unparsable", "code"), [(2, 0), (3, 0), (4, 3)])
def test_the_default_threshold_is_half_of_the_scores(tmp_path: Path, unparsable: int,
                                                     code: int) -> None:
    """6 requests (the original and 5 truncations); 2 or 3 unparsable answers (33%, 50%) pass,
    4 (67%) is "mostly missing"."""
    data = _data(tmp_path, {"a": LONGER})
    script = [Reply("no idea")] * unparsable
    with FakeServer(script=script, default=Reply("4")) as srv:
        result = runner.invoke(app, [
            "run", str(data), "-e", f"judge:model=m,base_url={srv.base_url},form=score-only,"
            "max_concurrency=1,logprobs=False,max_reasks=0", "-p", "truncation", "--seeds", "1", "--out",
            str(tmp_path / "run"), "--no-cache", "--workers", "1"])
    assert result.exit_code == code, result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["counts"]["missing_scores"] == unparsable
    if code:
        assert f"{unparsable} of 6 scores missing" in _text(result)


def test_max_missing_out_of_range_is_a_clear_error(tmp_path: Path) -> None:
    data = _data(tmp_path, {"a": SENTENCES})
    result = runner.invoke(app, ["run", str(data), "--max-missing", "1.5", "-e", "rouge"])
    assert result.exit_code == 2
    assert "--max-missing 1.5: give a fraction between 0 and 1" in _text(result)


def test_max_missing_in_the_config_must_be_a_number(tmp_path: Path) -> None:
    data = _data(tmp_path, {"a": SENTENCES})
    config = tmp_path / "c.yaml"
    config.write_text("max_missing: half\n")
    result = runner.invoke(app, ["run", str(data), "-c", str(config), "-e", "rouge"])
    assert result.exit_code == 2
    assert "field 'max_missing' 'half': give a fraction between 0 and 1" in _text(result)


def test_help_documents_exit_code_3() -> None:
    said = _text(runner.invoke(app, ["--help"]))
    assert "3 outputs written but an evaluator's scores are mostly missing" in said
    run_help = _text(runner.invoke(app, ["run", "--help"]))
    assert "--max-missing" in run_help and "--max-chars" in run_help


def test_a_row_beyond_max_chars_is_skipped_by_id(tmp_path: Path) -> None:
    long_text = " ".join([SENTENCES] * 3)  # 252 characters
    data = _data(tmp_path, {"short": SENTENCES, "long-row": long_text})
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", str(data), "-e", "rouge", "-p", "truncation",
                                 "--seeds", "1", "--max-chars", "200", "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = _text(result)
    assert f"row 'long-row': its text of {len(long_text)} characters is beyond the text " \
           "length limit (200;" in said
    results = json.loads((out / "results.json").read_text())
    assert results["counts"]["skipped"] == 5  # every truncation severity of the long row
    variants = list(read_records(out / "variants.parquet"))
    assert {v["example_id"] for v in variants} == {"short"}
    import pandas as pd

    scored = set(pd.read_parquet(out / "scores.parquet")["example_id"])
    assert scored == {"short"}  # the long row is not scored either


def test_max_chars_comes_from_the_config_file_and_zero_lifts_it(tmp_path: Path) -> None:
    long_text = " ".join([SENTENCES] * 3)
    data = _data(tmp_path, {"long-row": long_text})
    config = tmp_path / "c.yaml"
    config.write_text("max_chars: 100\n")
    out = tmp_path / "run"
    base = ["run", str(data), "-c", str(config), "-e", "rouge", "-p", "truncation", "--seeds",
            "1", "--out", str(out), "--quiet"]
    assert runner.invoke(app, base).exit_code == 0
    assert json.loads((out / "results.json").read_text())["counts"]["variants"] == 0
    assert runner.invoke(app, [*base, "--max-chars", "0"]).exit_code == 0
    assert json.loads((out / "results.json").read_text())["counts"]["variants"] == 5


def test_a_negative_max_chars_is_a_clear_error(tmp_path: Path) -> None:
    data = _data(tmp_path, {"a": SENTENCES})
    result = runner.invoke(app, ["run", str(data), "--max-chars", "-5", "-e", "rouge"])
    assert result.exit_code == 2
    assert "max_chars must be a positive whole number of characters" in _text(result)


def test_a_1_mb_row_under_the_default_limit_is_a_warning_not_a_traceback(tmp_path: Path) -> None:
    """The issue's case: > 1,000,000 characters gave spaCy's E088 traceback naming no row."""
    huge = ("The harbour was quiet that night. " * 32_000)[:1_000_001]
    data = _data(tmp_path, {"huge": huge, "fine": SENTENCES})
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", str(data), "-e", "rouge", "-p", "truncation",
                                 "--seeds", "1", "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    said = _text(result)
    assert "E088" not in said and "Traceback" not in said
    assert ("skipped row 'huge': its text of 1,000,001 characters is beyond the text length "
            "limit (100,000;") in said
    assert json.loads((out / "results.json").read_text())["counts"]["skipped"] == 5


def test_a_suite_option_sets_the_limit_and_the_flag_wins(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text("name: short-texts\nperturbations: [truncation]\nseeds: [0]\n"
                     "analyses: [blindspot]\noptions:\n  max_chars: 50\n")
    data = _data(tmp_path, {"r": SENTENCES})  # 84 characters
    out = tmp_path / "run"
    base = ["run", str(data), "--suite", str(suite), "-e", "rouge", "--out", str(out), "--quiet"]
    assert runner.invoke(app, base).exit_code == 0
    assert json.loads((out / "results.json").read_text())["counts"]["variants"] == 0
    assert runner.invoke(app, [*base, "--max-chars", "100"]).exit_code == 0
    assert json.loads((out / "results.json").read_text())["counts"]["variants"] == 5


def test_attack_shares_count_gold_victims_and_generator_by_hand() -> None:
    from types import SimpleNamespace

    from evalstress.engine.runhealth import above, attack_missing_shares
    from evalstress.llm.accounting import Usage

    records = [
        SimpleNamespace(victim="bleu", gold_queries=4, queries=5,
                        missing={"gold: j: timeout": 3, "victim: empty text": 1}),
        SimpleNamespace(victim="rouge", gold_queries=6, queries=5,
                        missing={"gold: j: refused": 2}),
        SimpleNamespace(victim="bleu", gold_queries=0, queries=2, missing={}),
    ]
    usage = Usage(requests=8, errors=6, errors_by_kind={"connection": 5, "timeout": 1})
    shares = {s.evaluator: s for s in attack_missing_shares(records, usage)}
    # gold: 3 + 2 of 4 + 6 + 0; bleu: 1 of 5 + 2; rouge: 0 of 5; generator: 6 of 8
    assert (shares["gold"].missing, shares["gold"].rows, shares["gold"].top_reason) == (
        5, 10, "j: timeout")
    assert (shares["bleu"].missing, shares["bleu"].rows) == (1, 7)
    assert (shares["rouge"].missing, shares["rouge"].rows) == (0, 5)
    assert (shares["generator"].missing, shares["generator"].top_reason) == (6, "connection")
    # 50% is not above the default cap of half; 75% is
    assert [s.evaluator for s in above(list(shares.values()), 0.5)] == ["generator"]


def test_frame_shares_per_evaluator_with_the_commonest_reason() -> None:
    import pandas as pd

    from evalstress.engine.runhealth import frame_missing_shares

    frame = pd.DataFrame({"evaluator": ["a", "a", "a", "b"],
                          "score": [float("nan"), float("nan"), 1.0, 2.0],
                          "reason": ["refused", "refused", None, None]})
    shares = {s.evaluator: s for s in frame_missing_shares(frame)}
    assert (shares["a"].missing, shares["a"].rows, shares["a"].top_reason) == (2, 3, "refused")
    assert (shares["b"].missing, shares["b"].rows) == (0, 1)


def test_correlate_with_every_judge_call_failing_exits_3_after_writing(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": d, "references": [SENTENCES], "systems": [
        {"system": s, "summary": f"{SENTENCES} ({d}{s})", "coherence": i}
        for i, s in enumerate(["x", "y"])]}) + "\n" for d in ("d1", "d2")))
    server = FakeServer(default=Reply(status=503, error="overloaded")).start()
    judge = (f"judge:model=m,base_url={server.base_url},form=score-only,max_attempts=1,"
             "backoff=0.01")
    args = ["correlate", str(docs), "-e", "bleu", "-e", judge, "--human", "coherence",
            "--out", str(tmp_path / "o"), "--no-cache", "--n-boot", "10"]
    try:
        result = runner.invoke(app, args)
        again = runner.invoke(app, [*args, "--max-missing", "1"])
    finally:
        server.stop()
    assert result.exit_code == 3, result.output
    said = _text(result)
    assert "4 of 4 scores missing (100%)" in said and "HTTP 503" in said
    # BLEU scored everything: the missing-scores lines do not name it (its progress lines,
    # "scoring bleu: 4/4 (100%)", say it finished)
    missing_lines = [line for line in str(result.output).splitlines() if "missing" in line]
    assert missing_lines and not any("bleu" in line for line in missing_lines)
    scores = pd.read_parquet(tmp_path / "o" / "scores.parquet")
    judged = scores[scores["evaluator"] != "bleu"]
    assert judged["score"].isna().all() and judged["reason"].str.contains("503").all()
    assert (tmp_path / "o" / "results.json").exists()
    assert again.exit_code == 0, again.output


def test_correlate_with_a_judge_on_a_closed_port_stops_before_any_work(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "references": [SENTENCES], "systems": [
        {"system": "x", "summary": SENTENCES, "coherence": 1}]}) + "\n")
    url = _closed_port_url()
    judge = f"judge:model=m,base_url={url},form=score-only"
    out = tmp_path / "o"
    result = runner.invoke(app, ["correlate", str(docs), "-e", judge, "--human", "coherence",
                                 "--out", str(out), "--no-cache"])
    assert result.exit_code == 2, result.output
    assert _text(result).startswith(f"error: judge(m): connection refused by {url}")
    assert not out.exists()


def test_attack_with_the_gold_judge_always_failing_exits_3_after_writing(tmp_path: Path) -> None:
    data = _data(tmp_path, {"a": LONGER, "b": SENTENCES})
    server = FakeServer(default=Reply(status=503, error="overloaded")).start()
    gold = f"judge:model=g,base_url={server.base_url},max_attempts=1,backoff=0.01"
    out = tmp_path / "attack"
    args = ["attack", str(data), "-v", "bleu", "-g", gold, "--method", "rule:jumble",
            "--direction", "bad", "--no-cache", "--out", str(out)]
    try:
        result = runner.invoke(app, args)
        again = runner.invoke(app, [*args, "--max-missing", "1"])
    finally:
        server.stop()
    assert result.exit_code == 3, result.output
    said = _text(result)
    assert "error: gold:" in said and "scores missing (100%)" in said
    assert "HTTP 503" in said
    records = [json.loads(line) for line in (out / "attacks.jsonl").read_text().splitlines()]
    assert records and all(not r["success"] for r in records)
    asked = sum(r["gold_queries"] for r in records)
    assert asked > 0 and sum(sum(r["missing"].values()) for r in records) == asked
    results = json.loads((out / "results.json").read_text())
    assert sum(results["analyses"]["adversarial"]["missing"].values()) == asked
    assert again.exit_code == 0, again.output


def test_attack_with_the_gold_judge_on_a_closed_port_stops_before_any_search(
        tmp_path: Path) -> None:
    data = _data(tmp_path, {"a": LONGER})
    url = _closed_port_url()
    out = tmp_path / "attack"
    result = runner.invoke(app, ["attack", str(data), "-v", "bleu", "-g",
                                 f"judge:model=g,base_url={url}", "--method", "rule:jumble",
                                 "--no-cache", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert _text(result) == (f"error: --gold judge(g): connection refused by {url} (nothing "
                             "listens there: is the server running, and is the port right?)")
    assert not out.exists()
    assert not any(p.name.startswith(".attack") for p in tmp_path.iterdir())


def test_a_run_mostly_missing_does_not_print_a_clean_verdict_alone(tmp_path: Path) -> None:
    data = _data(tmp_path, {"a": LONGER})
    with FakeServer(default=Reply("no idea")) as srv:
        result = runner.invoke(app, [
            "run", str(data), "-e", f"judge:model=m,base_url={srv.base_url},form=score-only,"
            "logprobs=False,max_reasks=0,name=lenient", "-p", "truncation", "--seeds", "1",
            "--out", str(tmp_path / "run"), "--no-cache", "--workers", "1"])
    assert result.exit_code == 3, result.output
    said = _text(result)
    assert "Most scores of lenient are missing: their verdicts above say nothing" in said
    assert said.index("blind spots found") < said.index("Most scores of lenient")


def test_degenerate_share_counts_the_commonest_score_of_those_scored() -> None:
    from evalstress.engine.runhealth import DEGENERATE_SHARE, degenerate_share

    # 1.0 three times (once through float noise), 2.0 once; None and NaN are missing
    share = degenerate_share([1.0, 0.1 + 0.9, 1.0 + 1e-12, 2.0, None, float("nan")])
    assert (share.value, share.count, share.scored) == (1.0, 3, 4)
    assert share.share == 0.75 and not share.degenerate()
    assert degenerate_share([5.0] * 19 + [4.0]).degenerate(DEGENERATE_SHARE)  # 95%
    assert degenerate_share([2.0, 1.0]).value == 1.0  # equally common: the smallest
    empty = degenerate_share([None])
    assert (empty.value, empty.scored, empty.degenerate()) == (None, 0, False)
    assert empty.describe() == "no scores"


@given(st.lists(st.one_of(
    st.none(), st.sampled_from([0.0, -0.0, 1.0, 2.5, float("nan"), float("inf"), 0.1 + 0.2,
                                0.3, 1.0 + 1e-12, 1.0 - 1e-12, 0.1234567895, 0.1234567885]),
    st.floats(min_value=-5, max_value=5, allow_nan=False)), max_size=60))
def test_degenerate_share_is_a_count_of_each_score_rounded_to_nine_decimals(
        scores: list[float | None]) -> None:
    """Counted column-wise, the commonest value is the one a plain count of Python-rounded
    scores finds (None, NaN and infinities left out; -0.0 is 0.0; ties: the smallest)."""
    from evalstress.engine.runhealth import degenerate_share

    counts: dict[float, int] = {}
    for score in scores:
        if score is not None and math.isfinite(score):
            key = round(score, 9) + 0.0
            counts[key] = counts.get(key, 0) + 1
    share = degenerate_share(scores)
    if not counts:
        assert (share.value, share.count, share.scored) == (None, 0, 0)
        return
    most = max(counts.values())
    assert share.value == min(v for v, n in counts.items() if n == most)
    assert (share.count, share.scored) == (most, sum(counts.values()))


def _near_halves(draw: st.DrawFn) -> float:
    """A value whose scaled form lies at or next to a half: where scale-and-round can go wrong."""
    decimals = draw(st.integers(0, 12))
    half = (draw(st.integers(-10**9, 10**9)) + 0.5) / 10.0 ** decimals
    return float(np.nextafter(half, draw(st.sampled_from([-math.inf, math.inf])))
                 if draw(st.booleans()) else half)


@given(st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                          st.composite(_near_halves)(),
                          st.sampled_from([0.0, -0.0, 5e-324, 1e300, 2.0 ** 52 + 0.5])),
                min_size=1, max_size=40),
       st.integers(0, 12))
def test_python_rounded_gives_what_pythons_round_gives(values: list[float],
                                                       decimals: int) -> None:
    """The whole array rounded at once equals Python's correctly rounded `round`, value by
    value, also next to halves and for values too large to have a fraction."""
    from evalstress.engine.runhealth import python_rounded

    got = python_rounded(np.array(values, dtype=float), decimals)
    assert got.tolist() == [round(v, decimals) for v in values]


def test_a_judge_that_writes_one_label_is_degenerate_though_its_scores_vary(
        tmp_path: Path) -> None:
    """The expected rating over the labels' probabilities varies a little (1.41 to 2.01 for the
    shipped 135M judge) while the label it writes is "1" every time: the answers decide."""
    from evalstress.core.scoretable import ScoreTable
    from evalstress.engine.runhealth import degenerate_evaluators

    n = 20
    rows = ([{"evaluator": "judge(m)", "aspect": "fluency", "score": 1.4 + 0.03 * i,
              "status": "ok", "answer": "1"} for i in range(n)]
            + [{"evaluator": "bleu", "aspect": "bleu", "score": float(i), "status": "ok",
                "answer": None} for i in range(n)]
            + [{"evaluator": "flat", "aspect": "score", "score": 0.5, "status": "ok",
                "answer": None} for _ in range(n - 1)]
            + [{"evaluator": "flat", "aspect": "score", "score": 0.7, "status": "ok",
                "answer": None}])
    found = {d.evaluator: d for d in degenerate_evaluators(ScoreTable(pd.DataFrame(rows)))}
    assert set(found) == {"judge(m)", "flat"}  # bleu varies; flat: 19 of 20 (95%) are 0.5
    assert (found["judge(m)"].by, found["judge(m)"].modal.value) == ("answer", "1")
    assert found["judge(m)"].modal.count == found["judge(m)"].modal.scored == n
    assert (found["flat"].by, found["flat"].modal.count) == ("score", 19)
    old = pd.DataFrame(rows).drop(columns="answer")  # a score file of an older run
    assert {d.evaluator for d in degenerate_evaluators(ScoreTable(old))} == {"flat"}
    # a run's score file (Parquet) says the same, in the order the evaluators come
    pd.DataFrame(rows).to_parquet(tmp_path / "scores.parquet")
    on_disk = degenerate_evaluators(ScoreTable(tmp_path / "scores.parquet"))
    assert [d.to_dict() for d in on_disk] == [found["judge(m)"].to_dict(),
                                              found["flat"].to_dict()]


def test_a_run_whose_judge_answers_one_constant_is_flagged_everywhere(tmp_path: Path) -> None:
    """results.json, the report and the terminal say its verdicts rest on no variation."""
    data = _data(tmp_path, {f"e{i}": LONGER.replace("Monday", day) for i, day in
                            enumerate(["Monday", "Tuesday", "Friday"])})
    out = tmp_path / "run"
    with FakeServer(default=Reply("Rating: 1")) as server:
        judge = f"judge:model=m,base_url={server.base_url},form=score-only,aspect=fluency"
        result = runner.invoke(app, ["run", str(data), "-e", judge, "-p", "truncation",
                                     "--seeds", "1", "--out", str(out),
                                     "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    from evalstress.report.schema import schema_problems

    assert schema_problems(results) == []
    [entry] = results["health"]["degenerate"]
    assert (entry["by"], entry["value"], entry["count"], entry["scored"]) == ("answer", "1",
                                                                              18, 18)
    assert entry["analyses"] == ["blindspot"]
    assert "is degenerate</b>: it answered 1 for 18 of 18 texts" in (
        out / "report.html").read_text()
    assert "answered '1' for 18 of 18 scored texts (100%): a degenerate evaluator" in _text(
        result)
    scores = pd.read_parquet(out / "scores.parquet")
    assert set(scores["answer"].dropna()) == {"1"}
