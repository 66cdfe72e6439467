"""The atlas on real data: which cards it makes on which public set, planned under the papers'
protocols on at least 100 examples; a bad --data-dir is one error line before any work."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalstress.card.realatlas import REAL_ATLAS, SETS, plan_real, real_budget, real_entries
from evalstress.cli import app
from evalstress.core.strict import UnknownNameError
from tests.card.conftest import runner


def test_the_default_cards_leave_the_pending_ones_out_and_only_names_any() -> None:
    default = [e.name for e in real_entries()]
    assert "bleu-summeval" in default and "gpt-ppl-wikitext" not in default
    assert [e.name for e in real_entries(["gpt-ppl-wikitext"])] == ["gpt-ppl-wikitext"]
    with pytest.raises(UnknownNameError, match="Did you mean 'bleu-wmt21'"):
        real_entries(["bleu-wmt"])
    assert all(e.pending for e in REAL_ATLAS if e.name not in default)


def test_the_budget_is_the_paper_protocol_on_100_examples_with_the_set_s_suite() -> None:
    budget = real_budget(SETS["ted"])
    assert (budget.name, budget.protocol, budget.examples) == ("paper", "paper", 100)
    assert budget.suites["blindspot"] == "paper-translation-ted"
    assert budget.seeds is None  # the suites' own: five for paper 002, one for 000 and 003


def test_a_data_dir_without_the_set_is_one_error_line_before_any_work(tmp_path: Path) -> None:
    result = runner.invoke(app, ["atlas", "--data-dir", str(tmp_path), "--only",
                                 "bleu-wmt21", "--work", str(tmp_path / "w"), "--published",
                                 str(tmp_path / "p"), "--page", str(tmp_path / "page.md")])
    assert result.exit_code == 2
    assert "wmt21_de_en.jsonl" in result.output and "--data-dir" in result.output
    assert not (tmp_path / "w").exists() and not (tmp_path / "p").exists()


def test_a_dry_run_needs_the_data_dir() -> None:
    result = runner.invoke(app, ["atlas", "--dry-run"])
    assert result.exit_code == 2 and "--data-dir" in result.output


def test_every_card_plans_100_examples_with_the_papers_fields(shared_data: Path) -> None:
    for entry in REAL_ATLAS:
        if entry.metric.name == "judge-local":
            continue  # builds the in-process judge: its plan is the card's own test
        plan = plan_real(entry, shared_data)
        assert len(plan.examples) == 100, entry.name
        first = plan.examples[0]
        if entry.dataset in ("wmt21", "ted"):
            assert first.hypothesis and len(first.references) == 1  # ref_a against ref_b
        assert plan.method("blindspot").suite == entry.data.suite
        correlation = plan.method("correlation")
        assert correlation.runs == (entry.dataset == "summeval"), entry.name
    wikitext = plan_real(real_entries(["gpt-ppl-wikitext"])[0], shared_data)
    assert {e.id.split("-")[1] for e in wikitext.examples} == {"a"}  # the gold set only


def test_a_published_card_evalstress_did_not_write_is_refused_before_any_card(
        tmp_path: Path, shared_data: Path) -> None:
    published = tmp_path / "published"
    (published / "bleu-wmt21").mkdir(parents=True)
    (published / "bleu-wmt21" / "card.json").write_text("{}", encoding="utf-8")
    result = runner.invoke(app, ["atlas", "--data-dir", str(shared_data), "--only",
                                 "bleu-wmt21", "--work", str(tmp_path / "w"), "--published",
                                 str(published), "--page", str(tmp_path / "page.md")])
    assert result.exit_code == 2 and "--published" in result.output
    assert not (tmp_path / "w").exists() and not (tmp_path / "page.md").exists()
    assert (published / "bleu-wmt21" / "card.json").read_text(encoding="utf-8") == "{}"


def test_the_dry_run_estimates_a_card_from_its_measured_rate_and_makes_nothing(
        tmp_path: Path, shared_data: Path) -> None:
    result = runner.invoke(app, ["atlas", "--data-dir", str(shared_data), "--only",
                                 "ter-wmt21", "--dry-run", "--work", str(tmp_path / "w"),
                                 "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("ter-wmt21:"))
    assert "100 examples" in line and "texts to score" in line
    assert re.search(r"estimated ~[0-9.]+ (s|min|h);", line), line
    assert "measured now on" in line  # the rate's source
    assert "unknown" not in line and "Nothing was made." in result.output
    assert not (tmp_path / "w").exists()
