"""`evalstress card` end to end: every section present or not run with its reason, the gate
at the top, a degenerate judge said to be one, no new scoring on a second card, the dry run,
and bad input refused in one line before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.card.schema import card_problems
from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer, Reply
from tests.card.conftest import runner

METHODS = ["blindspot", "discernment", "criteria", "adversarial", "correlation", "bias",
           "position", "consistency"]


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_a_small_bleu_card_on_the_built_in_corpus(bleu_card: tuple[Path, str]) -> None:
    out, said = bleu_card
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    assert card_problems(card) == []
    assert list(card["methods"]) == METHODS
    methods = card["methods"]
    for key in ("blindspot", "discernment", "criteria"):
        section = methods[key]
        assert section["status"] == "run" and section["trusted"] is True
        for path in section["files"].values():  # relative to the card's folder
            assert (out / path).exists(), path
        assert card["cost"]["methods"][key]["reused"] is False
    assert methods["adversarial"]["status"] == "not run"
    assert methods["adversarial"]["reason"].startswith("needs --gold")
    assert methods["correlation"]["status"] == "not run"
    assert "human scores" in methods["correlation"]["reason"]
    assert card["evaluator"]["short_signature"].startswith("bleu|tok:13a")
    assert card["data"]["source"] == "built-in corpus" and card["data"]["examples"] == 8
    assert len(card["data"]["tasks"]) == 7  # the small budget's 8 examples reach every task
    assert card["gate"]["trusted"] is True and card["gate"]["ranking"]["verdict"] == "pass"
    assert 3 <= len(card["findings"]) <= 5
    for finding in card["findings"]:
        # 95%, or for a blind-spot finding the level corrected for the number of tests
        level = finding["interval"]["level"]
        assert finding["rows"] and (level == 0.95 or (finding["method"] == "blindspot"
                                                      and 0.95 <= level < 1))
        example = finding["example"]
        if example is not None:  # a concrete pair from the run's files
            assert example["original"] and example["variant"]
            assert all((out / f).exists() for f in example["files"])
    markdown = (out / "card.md").read_text(encoding="utf-8")
    assert markdown.index("Sanity gate") < markdown.index("## Findings")
    assert "needs --gold" in markdown and "## Figures" in markdown
    for line in ("blind spots: running", "blind spots: done", "adversarial search: not run"):
        assert line in one_line(said)


def judge_spec(server: FakeServer, tmp: Path) -> str:
    return (f"judge:model=fake,base_url={server.base_url},form=score-only,backoff=0.01,"
            f"cache={tmp / 'llm.sqlite'}")


def test_a_judge_answering_one_rating_gets_a_degenerate_card_and_a_second_costs_nothing(
        tmp_path: Path, small_data: Path) -> None:
    cache = tmp_path / "cache"
    with FakeServer(default=Reply("Rating: 3")) as server:
        spec = judge_spec(server, tmp_path)
        args = ["card", spec, "--data", str(small_data), "--budget", "small", "--workers", "1",
                "--cache-dir", str(cache)]
        first = runner.invoke(app, [*args, "--out", str(tmp_path / "one")])
        assert first.exit_code == 0, first.output
        calls = server.calls
        assert calls > 0
        # another folder, the same caches: every score comes from them, no new call
        second = runner.invoke(app, [*args, "--out", str(tmp_path / "two")])
        assert second.exit_code == 0, second.output
        assert server.calls == calls
    card = json.loads((tmp_path / "one" / "card.json").read_text(encoding="utf-8"))
    gate = card["gate"]
    assert gate["degenerate"] and not gate["trusted"] and gate["verdict"] == "fail"
    # the judge wrote the label "3" to every text: the gate counts the answers it wrote
    spread = gate["spread"][0]
    assert (spread["by"], spread["modal_value"], spread["modal_share"]) == ("answer", "3", 1.0)
    assert spread["low"] == pytest.approx(3.0) and spread["high"] == pytest.approx(3.0)
    assert card["findings"] == []
    assert all(s["trusted"] is False for s in card["methods"].values() if s["status"] == "run")
    head = (tmp_path / "one" / "card.md").read_text(encoding="utf-8").splitlines()[:8]
    assert any("Sanity gate FAILED" in line for line in head)
    assert any("degenerate: aspect overall gave '3'" in line for line in head)
    assert "sanity gate: fail" in one_line(first.output)
    page = (tmp_path / "one" / "card.html").read_text(encoding="utf-8")
    assert "<div class='banner' role='alert'>" in page and "sanity gate failed" in page
    # the methods that ran: bias, position and consistency too
    assert page.count("<section class='method untrusted'") == 6


def test_the_dry_run_prints_the_plan_and_scores_nothing(tmp_path: Path,
                                                        small_data: Path) -> None:
    out = tmp_path / "card"
    with FakeServer(default=Reply("Rating: 3")) as server:
        result = runner.invoke(app, ["card", judge_spec(server, tmp_path), "--data",
                                     str(small_data), "--budget", "small", "--dry-run",
                                     "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
        assert result.exit_code == 0, result.output
        assert server.calls == 0
    said = one_line(result.output)
    for title in ("blind spots", "discernment", "criteria response"):
        assert title in said
    assert "not run: needs --gold" in said and "Nothing was scored" in said
    assert "unknown" in said  # no measured rate for a judge: no invented time
    assert not out.exists()


def test_the_dry_run_estimates_a_lexical_metric_s_time(tmp_path: Path,
                                                        small_data: Path) -> None:
    result = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--budget",
                                 "small", "--dry-run", "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "~" in result.output and " s " in result.output


@pytest.mark.parametrize(("args", "expected"), [
    (["nosuchmetric"], "unknown evaluator 'nosuchmetric'"),
    (["bleu", "--budget", "huge"], "unknown budget 'huge'"),
    (["bleu", "--map", "hypothesis=text"], "applies to a data file"),
    (["bleu", "--gold", "judge:model=x,temperature=hot"], "temperature"),
])
def test_bad_input_is_one_line_before_any_work(tmp_path: Path, args: list[str],
                                               expected: str) -> None:
    out = tmp_path / "card"
    result = runner.invoke(app, ["card", *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert expected in one_line(result.output)
    assert not out.exists()


def test_a_folder_of_other_files_is_refused_without_force(tmp_path: Path,
                                                           small_data: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    result = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--out", str(out)])
    assert result.exit_code == 2 and "notes.txt" in one_line(result.output)
    assert (out / "notes.txt").read_text() == "keep me"


def test_a_judge_that_never_answers_exits_3_after_writing_the_card(tmp_path: Path,
                                                                    small_data: Path) -> None:
    out = tmp_path / "card"
    data = small_data.read_text(encoding="utf-8").splitlines()[0] + "\n"
    small_data.write_text(data, encoding="utf-8")  # one example: every call fails fast
    with FakeServer(default=Reply(status=503, error="overloaded")) as server:
        spec = (f"judge:model=m,base_url={server.base_url},form=score-only,max_attempts=1,"
                f"backoff=0.01,cache={tmp_path / 'llm.sqlite'}")
        result = runner.invoke(app, ["card", spec, "--data", str(small_data), "--budget",
                                     "small", "--workers", "1", "--out", str(out), "--no-cache"])
    assert result.exit_code == 3, result.output
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    assert card["gate"]["missing"]["mostly_missing"] and not card["gate"]["trusted"]
    assert "scores missing" in one_line(result.output)


def test_a_card_never_deletes_the_users_files_or_follows_a_link(tmp_path: Path,
                                                                 small_data: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    cache = ["--cache-dir", str(tmp_path / "cache"), "--budget", "small", "--quiet"]
    forced = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--out", str(out),
                                 "--force", *cache])
    assert forced.exit_code == 0, forced.output
    assert (out / "notes.txt").read_text() == "keep me" and (out / "card.json").exists()
    again = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--out", str(out),
                                *cache])  # the user's file is named, not taken for the card's
    assert again.exit_code == 2 and "notes.txt" in one_line(again.output)
    (out / "notes.txt").unlink()
    again = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--out", str(out),
                                *cache])
    assert again.exit_code == 0, again.output
    link = tmp_path / "link"
    link.symlink_to(out)
    linked = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--out", str(link),
                                 "--force", *cache])
    assert linked.exit_code == 2 and "symbolic link" in one_line(linked.output)
    victim = tmp_path / "victim.conf"
    victim.write_text("settings")
    (tmp_path / ".other.lock").symlink_to(victim)
    locked = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--out",
                                 str(tmp_path / "other"), *cache])
    assert locked.exit_code == 2 and "symbolic link" in one_line(locked.output)
    assert victim.read_text() == "settings"


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def test_a_judge_of_the_openai_api_without_a_key_stops_before_any_method(
        tmp_path: Path, small_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It ran every method (97 s, 412 failed requests) before exit 3."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "EVALSTRESS_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    out, cache = tmp_path / "card", tmp_path / "cache"
    result = runner.invoke(app, ["card", "judge:model=gpt-4o-mini", "--data", str(small_data),
                                 "--out", str(out), "--cache-dir", str(cache)])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [
        "error: judge(gpt-4o-mini): https://api.openai.com/v1 needs an API key: set "
        "$OPENAI_API_KEY (or name the variable that holds it with api_key_env=NAME)"]
    assert not out.exists() and not cache.exists()


def test_a_judge_on_a_closed_port_stops_before_any_method(tmp_path: Path,
                                                         small_data: Path) -> None:
    with FakeServer() as server:
        url = server.base_url  # nothing listens there once the server is closed
    out, cache = tmp_path / "card", tmp_path / "cache"
    spec = f"judge:model=m,base_url={url},form=score-only"
    result = runner.invoke(app, ["card", spec, "--data", str(small_data), "--budget", "small",
                                 "--out", str(out), "--cache-dir", str(cache)])
    assert result.exit_code == 2, result.output
    lines = _lines(result.output)
    assert len(lines) == 1 and lines[0].startswith(
        f"error: judge(m): connection refused by {url} (nothing listens there"), result.output
    assert "could not ask" not in result.output  # no Python warning text
    assert not out.exists() and not cache.exists()


def test_a_gold_judge_that_refuses_the_key_stops_before_any_method(
        tmp_path: Path, small_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOLD_TEST_KEY", "wrong")
    out, cache = tmp_path / "card", tmp_path / "cache"
    with FakeServer(api_key="right") as server:
        gold = f"judge:model=fake,base_url={server.base_url},api_key_env=GOLD_TEST_KEY"
        result = runner.invoke(app, ["card", "bleu", "--gold", gold, "--data", str(small_data),
                                     "--budget", "small", "--out", str(out), "--cache-dir",
                                     str(cache)])
        assert (server.listings, server.calls) == (1, 0)
    assert result.exit_code == 2, result.output
    lines = _lines(result.output)
    assert len(lines) == 1, result.output
    assert lines[0] == (f"error: --gold judge(fake): {server.base_url} refused the API key in "
                        "$GOLD_TEST_KEY (HTTP 401): check the key, or name another variable "
                        "with api_key_env=NAME")
    assert not out.exists() and not cache.exists()


def _rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


TEXT = "The council approved the new budget on Monday after a long debate about schools."


def test_a_reference_metric_over_data_without_references_is_refused_up_front(
        tmp_path: Path) -> None:
    data = _rows(tmp_path / "norefs.jsonl", [  # empty, blank, an empty list, none at all
        {"id": "r0", "hypothesis": TEXT, "references": ""},
        {"id": "r1", "hypothesis": TEXT, "references": "   "},
        {"id": "r2", "hypothesis": TEXT, "references": []}, {"id": "r3", "hypothesis": TEXT}])
    out, cache = tmp_path / "card", tmp_path / "cache"
    result = runner.invoke(app, ["card", "bleu", "--data", str(data), "--out", str(out),
                                 "--cache-dir", str(cache)])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [
        f"error: {data}: bleu needs references, and none of the 4 examples has one: map the "
        "field that holds them (--map references=FIELD), or choose an evaluator that needs "
        "none"]
    assert not out.exists() and not cache.exists()


def test_rows_without_references_are_counted_before_the_card_runs(tmp_path: Path) -> None:
    data = _rows(tmp_path / "some.jsonl",
                 [{"id": f"r{i}", "hypothesis": TEXT, "references": [TEXT] if i else []}
                  for i in range(3)])
    result = runner.invoke(app, ["card", "bleu", "--data", str(data), "--budget", "small",
                                 "--dry-run", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert (f"warning: 1 of 3 examples of {data} has no reference: bleu skips it, and its "
            "scores are missing") in one_line(result.output)


def test_rows_beyond_max_chars_are_counted_on_the_card_and_warned_about(
        tmp_path: Path) -> None:
    """A 50 MB row was skipped with the card saying "4 of 4 examples" and no warning."""
    rows = [{"id": f"r{i}", "hypothesis": f"{TEXT} Row {i}.", "references": [TEXT]}
            for i in range(4)]
    rows.insert(2, {"id": "long", "hypothesis": "word " * 200, "references": [TEXT]})
    data = _rows(tmp_path / "long.jsonl", rows)
    out = tmp_path / "card"
    result = runner.invoke(app, ["card", "bleu", "--data", str(data), "--budget", "small",
                                 "--workers", "1", "--max-chars", "500", "--out", str(out),
                                 "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert (f"warning: 1 of 5 examples of {data} is longer than 500 characters: the card "
            "leaves it out (raise --max-chars to keep it)") in one_line(result.output)
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    assert card_problems(card) == []
    assert (card["data"]["examples"], card["data"]["available"]) == (4, 5)
    assert card["data"]["skipped"] == {"rows": 1, "reason": "longer than 500 characters"}
    line = "4 of 5 examples; 1 skipped: longer than 500 characters"
    assert line in (out / "card.md").read_text(encoding="utf-8")
    assert line in (out / "card.html").read_text(encoding="utf-8")


def test_max_chars_is_checked_as_run_checks_it(tmp_path: Path, small_data: Path) -> None:
    result = runner.invoke(app, ["card", "bleu", "--data", str(small_data), "--max-chars",
                                 "-3", "--out", str(tmp_path / "card")])
    assert result.exit_code == 2, result.output
    assert "max_chars must be a positive whole number of characters" in one_line(result.output)
    assert not (tmp_path / "card").exists()
