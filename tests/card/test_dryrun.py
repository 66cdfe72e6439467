"""The card's dry run timed here: each method's seconds by hand, a text counted once for the card
(and not at all once the measurement scored it), the rate's source said, the sequential
design's least, and the options that choose how it is timed. No timing is asserted: the rates
themselves are the machine's."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from evalstress.card import CardOptions, make_card, plan_card
from evalstress.card.dryrun import (
    SECONDS_PER_CARD,
    SECONDS_PER_CORRELATION,
    Rate,
    at_first_look,
    duration_text,
    example_order,
    first_look,
    method_seconds,
    spread,
    time_card,
    time_lines,
)
from evalstress.card.estimate import SECONDS_PER_JOB, SECONDS_PER_TEXT, MethodEstimate
from evalstress.cli import app
from evalstress.evaluators.base import ScoreRequest
from evalstress.llm.fake_server import FakeServer, Reply
from tests.card.conftest import runner


def one_line(text: str) -> str:
    return " ".join(text.split())


def row(key: str, texts: int | None, plan_seconds: float | None = None) -> MethodEstimate:
    return MethodEstimate(key, key, True, texts=texts, plan_seconds=plan_seconds)


def test_a_method_s_seconds_by_hand() -> None:
    rate = Rate(0.02, load=4.0, texts=9, source="measured")
    # planning 1.5 s + a job's 2 s + 50 texts at 0.02 s + the model's load 4 s
    assert method_seconds(row("blindspot", 50, 1.5), rate) == pytest.approx(1.5 + 2 + 1 + 4)
    # the load once a card: a later method does not pay it again
    assert method_seconds(row("criteria", 50, 1.5), rate, load=False) == pytest.approx(4.5)
    # nothing left to score: no load, no rate needed
    assert method_seconds(row("discernment", 0, 0.5), Rate(None)) == pytest.approx(2.5)
    assert method_seconds(row("discernment", 3, 0.5), Rate(None)) is None
    # the systems' correlation: its own fixed share, no planning of its own
    assert method_seconds(row("correlation", 100), rate, load=False) == pytest.approx(
        SECONDS_PER_CORRELATION + 2.0)
    for key in ("adversarial", "position", "consistency"):
        assert method_seconds(row(key, 10, 1.0), rate) is None
    assert SECONDS_PER_JOB == 2.0


def test_the_first_look_of_the_sequential_design_by_hand() -> None:
    def plan_of(n: int) -> object:
        return type("P", (), {"examples": [None] * n})()

    # a sixth of the examples, at least 10 (MIN_N), at most all of them
    assert first_look(plan_of(100), {"looks": 6}) == 17  # type: ignore[arg-type]
    assert first_look(plan_of(30), {"looks": 6}) == 10  # type: ignore[arg-type]
    assert first_look(plan_of(8), {"looks": 6}) == 8  # type: ignore[arg-type]


def test_the_measured_texts_are_taken_in_runs_of_one_example() -> None:
    requests = [ScoreRequest(f"text {i} of {e}", f"source {e}", (f"ref {e}",))
                for e in range(4) for i in range(5)]
    ordered = example_order(requests)
    assert sorted(r.key for r in ordered) == sorted(r.key for r in requests)
    sources = [r.source for r in ordered]
    # each example's 5 texts are together: the source changes exactly three times
    assert sum(1 for a, b in itertools.pairwise(sources) if a != b) == 3
    assert example_order(requests) == ordered  # seeded
    # runs of 2: each example gives 2 texts in turn (4 examples x [2, 2, 1]: 12 runs)
    runs = example_order(requests, group=2)
    sources = [r.source for r in runs]
    assert sum(1 for a, b in itertools.pairwise(sources) if a != b) == 11
    assert len({r.source for r in runs[:8]}) == 4  # the first 8 texts span every example


def test_a_slow_evaluator_s_sample_spreads_one_text_an_example() -> None:
    requests = [ScoreRequest(f"text {i} of {e}", f"source {e}", (f"ref {e}",))
                for e in range(4) for i in range(5)]
    first = example_order(requests)[:3]  # three texts of one example, measured first
    out = spread(first, requests, 7)
    assert out[:3] == first and len(out) == 7
    assert len({r.key for r in out}) == 7
    # after them, one text of each example in turn: the next three are of the three others
    assert {r.source for r in out[3:6]} == {f"source {e}" for e in range(4)} - {first[0].source}


def test_duration_text() -> None:
    assert [duration_text(s) for s in (37.2, 252.0, 8280.0)] == ["~37 s", "~4.2 min", "~2.3 h"]


def scored(card: Path) -> dict[str, int]:
    methods = json.loads((card / "card.json").read_text(encoding="utf-8"))["methods"]
    return {key: int(m["cost"]["scored"]) for key, m in methods.items()
            if m.get("status") == "run" and m.get("cost")}


def test_each_method_s_texts_are_what_the_card_then_scores(tmp_path: Path,
                                                           small_data: Path) -> None:
    """A text counts once for the card: a method's texts are net of the score cache and of
    the methods before it (the originals every method scores), as the make then scores them.
    With --no-measure the shipped rate is used and nothing is scored."""
    plan = plan_card("bleu", data=small_data, budget="small")
    options = CardOptions(tmp_path / "card", cache_dir=tmp_path / "cache", workers=1)
    timed = time_card(plan, options, measure=False)
    assert timed.rate.seconds == SECONDS_PER_TEXT["bleu"]
    assert timed.rate.texts == 0 and "shipped" in timed.rate.source
    rows = {r.key: r for r in timed.rows if r.runs and r.texts is not None}
    assert set(rows) == {"blindspot", "discernment", "criteria"}
    make_card(plan, options)
    assert {key: rows[key].texts for key in rows} == scored(tmp_path / "card")
    assert timed.texts == sum(scored(tmp_path / "card").values())
    # the card's time: its methods' and the card's own share
    assert timed.seconds == pytest.approx(
        SECONDS_PER_CARD + sum(r.seconds or 0.0 for r in timed.rows if r.runs))


def test_the_texts_measured_on_are_not_scored_again(tmp_path: Path, small_data: Path) -> None:
    plan = plan_card("bleu", data=small_data, budget="small")
    options = CardOptions(tmp_path / "card", cache_dir=tmp_path / "cache", workers=1)
    cold = time_card(plan, options, measure=False).texts
    timed = time_card(plan, options)  # measured here: some texts scored into the cache
    assert timed.rate.texts > 0 and timed.rate.seconds is not None
    assert "measured now on" in timed.rate.source
    assert timed.texts + timed.rate.texts == cold
    make_card(plan, options)
    assert sum(scored(tmp_path / "card").values()) == timed.texts


def test_the_dry_run_says_where_its_rate_came_from(tmp_path: Path, small_data: Path) -> None:
    base = ["card", "bleu", "--data", str(small_data), "--budget", "small", "--dry-run",
            "--out", str(tmp_path / "card")]
    result = runner.invoke(app, [*base, "--cache-dir", str(tmp_path / "c1")])
    assert result.exit_code == 0, result.output
    said = one_line(result.output)
    assert "Rate: " in said and "measured now on" in said and "kept in the score cache" in said
    assert "Estimated time of the card: ~" in said and "texts to time the evaluator" in said
    result = runner.invoke(app, [*base, "--no-measure", "--cache-dir", str(tmp_path / "c2")])
    assert result.exit_code == 0, result.output
    said = one_line(result.output)
    assert "shipped: measured once on the project's 2-core machine, not here" in said
    assert "Nothing was scored." in said
    assert not (tmp_path / "card").exists()


def test_a_judge_behind_a_server_is_not_asked_to_measure(tmp_path: Path,
                                                         small_data: Path) -> None:
    with FakeServer(default=Reply("Rating: 3")) as server:
        spec = (f"judge:model=fake,base_url={server.base_url},form=score-only,backoff=0.01,"
                f"cache={tmp_path / 'llm.sqlite'}")
        plan = plan_card(spec, data=small_data, budget="small")
        timed = time_card(plan, CardOptions(tmp_path / "card", cache_dir=tmp_path / "c"))
        assert server.calls == 0
    assert timed.rate.seconds is None and timed.seconds is None
    assert "not measured: a dry run asks no server" in timed.rate.source


def test_a_sequential_card_says_the_most_and_the_least(tmp_path: Path,
                                                       small_data: Path) -> None:
    """A judge's card runs its blind-spot, bias and criteria tests under the sequential design: the
    card's time is the exhaustive bound, and the least is every test settled at the first
    look (here all 3 examples: a first look holds at least 10)."""
    with FakeServer(default=Reply("Rating: 3")) as server:
        spec = (f"judge:model=fake,base_url={server.base_url},form=score-only,backoff=0.01,"
                f"cache={tmp_path / 'llm.sqlite'}")
        plan = plan_card(spec, data=small_data, budget="small")
        timed = time_card(plan, CardOptions(tmp_path / "card", cache_dir=tmp_path / "c"),
                          measure=False, shipped=0.5)
    assert timed.rate.seconds == 0.5
    assert set(timed.first_look) == {"blindspot", "bias", "criteria"}
    assert all(n == 3 for n in timed.first_look.values())  # 3 examples: the first look is all
    assert timed.least_texts == timed.texts  # every example in the first look
    # the position test and consistency have no time of their own here: the card's is unknown
    assert timed.seconds is None and timed.least_seconds is None
    said = time_lines(timed)[0]
    assert said.startswith("Estimated time of the card: unknown: no time for position bias")
    assert "consistency" in said and "; the rest ~" in said


def test_the_least_of_a_sequential_method_by_hand() -> None:
    """Planning 6 s and 400 texts at 0.05 s (20 s) in a run of 30 s: a first look of a
    quarter of the examples keeps a quarter of those 26 s and the 4 s fixed."""
    rate = Rate(0.05, load=2.0)
    method = row("blindspot", 400, 6.0)
    seconds = method_seconds(method, rate, load=False)
    assert seconds == pytest.approx(6 + 2 + 20)
    assert at_first_look(30.0, method, rate, 0.25) == pytest.approx(30 - 26 * 0.75)
    assert at_first_look(30.0, method, rate, 1.0) == pytest.approx(30.0)
    # 40 of the 400 texts are originals the design scores before any look: 360 x 0.05 s of
    # scoring and the 6 s of planning keep a quarter
    assert at_first_look(30.0, method, rate, 0.25, first=40) == pytest.approx(
        30 - (6 + 18) * 0.75)


def test_no_measure_applies_to_a_dry_run(tmp_path: Path) -> None:
    result = runner.invoke(app, ["card", "bleu", "--no-measure", "--out",
                                 str(tmp_path / "card")])
    assert result.exit_code == 2
    assert "--no-measure: applies to --dry-run" in one_line(result.output)
    result = runner.invoke(app, ["atlas", "--only", "bleu", "--no-measure", "--work",
                                 str(tmp_path / "w")])
    assert result.exit_code == 2
    assert "--no-measure: applies to --dry-run" in one_line(result.output)
    assert not (tmp_path / "card").exists() and not (tmp_path / "w").exists()


def test_the_atlas_dry_run_measures_into_the_cache_it_is_given(tmp_path: Path,
                                                               shared_data: Path) -> None:
    """The real-data atlas's dry run reads and fills --cache-dir (it read the default cache
    before): a second dry run finds the texts the first measured on, and has that many fewer
    to score."""
    args = ["atlas", "--data-dir", str(shared_data), "--only", "bleu-wmt21", "--dry-run",
            "--work", str(tmp_path / "w"), "--cache-dir", str(tmp_path / "cache")]

    def counts() -> tuple[int, int]:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        line = one_line(result.output)
        texts = int(line.split(" texts to score")[0].rsplit(" ", 1)[1].replace(",", ""))
        measured = int(line.split("measured now on ")[1].split(" ")[0])
        return texts, measured

    first, measured = counts()
    assert measured > 0 and (tmp_path / "cache").is_dir()
    second, _ = counts()
    assert second == first - measured
    assert not (tmp_path / "w").exists()
