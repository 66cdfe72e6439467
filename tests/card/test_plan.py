"""Budgets, which methods apply to an evaluator and its data, and the card's examples."""

from __future__ import annotations

import hashlib

import pytest

from evalstress.card import plan as card_plan
from evalstress.card.data import examples_sha256, spread_over_tasks
from evalstress.card.plan import (
    BUDGETS,
    CardPlan,
    EvaluatorTraits,
    attack_methods,
    get_budget,
    plan_methods,
)
from evalstress.core.data import Example
from evalstress.core.strict import UnknownNameError


def traits(aspects: dict[str, str | None], level: str = "segment") -> EvaluatorTraits:
    return EvaluatorTraits("m", "m", "m", tuple(aspects), level, "m|v1",
                           {a: True for a in aspects}, aspects)


def examples(tasks: str, human: bool = False) -> list[Example]:
    return [Example(f"{t}{i}", t, "", f"text {i}", (),
                    {"human": {"fluency": 3}} if human else {})
            for i, t in enumerate(tasks)]


METRIC = traits({"bleu": None})
JUDGE = traits({"fluency": "fluency", "coherence": "coherence"})


def by_key(methods: tuple) -> dict:
    return {m.key: m for m in methods}


def test_an_unknown_budget_names_the_known_ones_with_a_suggestion() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'small'") as caught:
        get_budget("smal")
    assert "paper" in str(caught.value) and "standard" in str(caught.value)


def test_the_budgets_follow_their_protocols() -> None:
    small, standard, paper = BUDGETS["small"], BUDGETS["standard"], BUDGETS["paper"]
    assert (small.seeds, small.protocol, small.suites["blindspot"]) == (1, "default",
                                                                         "blindspot")
    assert standard.examples is not None and standard.examples > small.examples
    # paper: every example, the protocol's own seeds (5 for 002, 1 for 000 and 003) and suites
    assert (paper.examples, paper.seeds, paper.protocol) == (None, None, "paper")
    assert paper.suites == {"blindspot": "blindspot-full", "discernment": "dhp",
                            "criteria": "criteria-rules-paper"}
    assert (paper.attack.budget, paper.attack.protocol) == (300, "paper")


def test_a_metric_without_gold_or_human_scores_runs_three_methods() -> None:
    methods = by_key(plan_methods(METRIC, BUDGETS["small"], examples("aab")))
    assert [k for k, m in methods.items() if m.runs] == ["blindspot", "discernment", "criteria"]
    assert methods["adversarial"].reason.startswith("needs --gold")
    assert "human scores" in methods["correlation"].reason
    assert methods["criteria"].mode == "sensitivity"
    assert (methods["blindspot"].suite, methods["blindspot"].seeds) == ("blindspot", 1)
    assert methods["blindspot"].analyses == ("blindspot",)


def test_a_judge_of_several_aspects_gets_the_confusion_table() -> None:
    assert JUDGE.aspect_aware and not METRIC.aspect_aware
    assert not traits({"overall": "overall"}).aspect_aware  # one overall score: a profile
    assert by_key(plan_methods(JUDGE, BUDGETS["standard"], examples("a")))["criteria"].mode \
        == "confusion"


def test_a_set_level_evaluator_gets_no_paired_methods() -> None:
    methods = by_key(plan_methods(traits({"mauve": None}, level="corpus"), BUDGETS["small"],
                                  examples("a"), gold="judge:model=x"))
    assert methods["blindspot"].runs
    for key in ("discernment", "criteria", "adversarial"):
        assert not methods[key].runs and "whole sets" in methods[key].reason


def test_gold_adds_the_attack_and_the_generator_picks_adveval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with_generator = by_key(plan_methods(METRIC, BUDGETS["small"], examples("a"),
                                         gold="judge:model=g", generator="model=x"))["adversarial"]
    assert with_generator.runs and with_generator.attack["methods"] == ["adveval"]
    assert with_generator.attack["budget"] == BUDGETS["small"].attack.budget
    monkeypatch.setattr(card_plan, "missing_modules", lambda names: ["torch"])
    names, note = attack_methods(None)
    assert names == ["rules"] and "torch" in note
    monkeypatch.setattr(card_plan, "missing_modules", lambda names: [])
    assert attack_methods(None) == (["rules", "textfooler"], "")


def test_human_scores_add_the_correlation_to_the_blind_spot_run() -> None:
    methods = by_key(plan_methods(METRIC, BUDGETS["small"], examples("ab", human=True)))
    assert methods["correlation"].runs and methods["correlation"].kind == "part"
    assert methods["blindspot"].analyses == ("blindspot", "correlation")


def test_examples_are_spread_over_the_tasks_in_the_data_order() -> None:
    data = examples("aaabbc")  # ids a0 a1 a2 b3 b4 c5
    # by hand: a0, b3, c5 (the first of each task), then a1 (the second of the first task)
    assert [e.id for e in spread_over_tasks(data, 4)] == ["a0", "a1", "b3", "c5"]
    assert [e.id for e in spread_over_tasks(data, None)] == [e.id for e in data]
    assert [e.id for e in spread_over_tasks(data, 10)] == [e.id for e in data]


def test_the_data_hash_is_the_sha256_of_one_canonical_line_per_example() -> None:
    one = Example("x", "story", "src", "Once.", ("ref",), {"k": 1})
    line = ('{"hypothesis": "Once.", "id": "x", "meta": {"k": 1}, "references": ["ref"], '
            '"source": "src", "task": "story"}\n')
    assert examples_sha256([one]) == hashlib.sha256(line.encode()).hexdigest()
    changed = Example("x", "story", "src", "Once!", ("ref",), {"k": 1})
    assert examples_sha256([changed]) != examples_sha256([one])


def test_a_method_fingerprint_changes_with_what_decides_its_results() -> None:
    data = examples("ab")

    def plan(budget: str, spec: str = "m", sha: str = "0" * 64) -> CardPlan:
        chosen = BUDGETS[budget]
        t = traits({"bleu": None})
        t = EvaluatorTraits(spec, *list(t.__dict__.values())[1:])
        return CardPlan(t, chosen, data, {"sha256": sha}, plan_methods(t, chosen, data))

    base = plan("small").fingerprint("blindspot")
    assert plan("small").fingerprint("blindspot") == base
    assert plan("standard").fingerprint("blindspot") != base
    assert plan("small", spec="chrf").fingerprint("blindspot") != base
    assert plan("small", sha="1" * 64).fingerprint("blindspot") != base


def test_a_method_made_by_other_code_is_not_taken_for_this_codes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix to an analysis must reach a card made again: the code's digest is in the
    fingerprint, so the finished method of the old code is not reused."""
    t = traits({"bleu": None})
    made = CardPlan(t, BUDGETS["small"], examples("ab"), {"sha256": "0" * 64},
                    plan_methods(t, BUDGETS["small"], examples("ab")))
    before = made.fingerprint("blindspot")
    monkeypatch.setattr("evalstress.card.plan.code_digest", lambda: "edited")
    assert made.fingerprint("blindspot") != before


def test_the_paper_budget_runs_paper_002_s_own_suite_for_a_task_it_ran() -> None:
    paper = BUDGETS["paper"]
    one_task = by_key(plan_methods(METRIC, paper, examples("ss")))  # tasks "s": no paper suite
    assert one_task["blindspot"].suite == "blindspot-full"
    summaries = [Example(f"s{i}", "summarization", "", "text", ()) for i in range(2)]
    assert by_key(plan_methods(METRIC, paper, summaries))["blindspot"].suite \
        == "paper-summarization"
    mixed = by_key(plan_methods(METRIC, paper, [*summaries, *examples("q")]))
    assert mixed["blindspot"].suite == "blindspot-full"
    assert by_key(plan_methods(METRIC, BUDGETS["standard"], summaries))["blindspot"].suite \
        == "blindspot"


def test_the_paper_budget_leaves_out_what_needs_resources_that_do_not_ship() -> None:
    # blindspot-full's frequent-ngram needs a separate corpus under the paper rule: left out
    # with what it needs; every other perturbation of the suite stays
    paper = by_key(plan_methods(METRIC, BUDGETS["paper"], examples("ss")))
    left_out = paper["blindspot"].left_out
    assert [name for name, _ in left_out] == ["frequent-ngram"]
    assert "separate corpus" in left_out[0][1]
    assert paper["blindspot"].left_out_lines()[0].startswith("frequent-ngram not run: ")
    # the default rule samples n-grams of the texts themselves: nothing is left out
    standard = by_key(plan_methods(METRIC, BUDGETS["standard"], examples("ss")))
    assert all(not m.left_out for m in standard.values())
