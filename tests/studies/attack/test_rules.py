"""Paper 004's rule baselines: what each rule promises to change and to keep, and the rule
search on the victim budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.core.wordnet import synonyms
from evalstress.engine.scoring import open_cache
from evalstress.perturb.base import PerturbContext, Skip, Variant
from evalstress.studies.attack.methods import RULE_PATIENCE, RuleMethod, make_methods
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.rules import RULES, get_rule
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim, gold_evaluator

from .conftest import TableVictim, example, judge_spec

PARSER = TextParser()


def apply(rule: str, text: str, *, task: str = "summarization", source: str = "",
          severity: float | None = None, seed: int = 0) -> Variant | Skip:
    ex = Example("x", task, source, text)
    perturbation = get_rule(rule)
    return perturbation.apply(PerturbContext(ex, PARSER, [ex]), severity or 1.0, seed)


def text(result: Variant | Skip) -> str:
    assert isinstance(result, Variant), result
    return result.text


def test_wordnet_is_read_offline() -> None:
    assert {"glad", "felicitous"} <= set(synonyms("happy", "a"))
    assert "automobile" in synonyms("car", "n") and "car" not in synonyms("car", "n")


def test_synonym_replaces_only_adjectives_by_wordnet_synonyms() -> None:
    original = "The happy child ate a large red apple near the quiet river."
    changed = text(apply("synonym", original))
    before, after = original.split(), changed.split()
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        if old != new:
            core = old.strip(".").lower()
            assert core in ("happy", "large", "red", "quiet")
            assert new.strip(".").lower() in synonyms(core, "a")
    assert isinstance(apply("synonym", "The dog ran home."), Skip)


def test_expansion_and_contraction_are_exact() -> None:
    assert text(apply("expansion", "It's late and they don't know. We'll see; I'm here.")) == \
        "It is late and they do not know. We will see; I am here."
    assert text(apply("expansion", "She can't stay and won't go.")) == \
        "She cannot stay and will not go."
    assert text(apply("contraction", "It is late and they do not know. We will see.")) == \
        "It's late and they don't know. We'll see."
    assert isinstance(apply("expansion", "Nothing to expand here."), Skip)
    assert isinstance(apply("contraction", "Birds sing."), Skip)


def test_change_name_renames_every_mention_of_a_person_alike() -> None:
    original = "Paul Merson criticised Andros Townsend. Merson later apologised."
    changed = text(apply("change-name", original))
    assert "Merson" not in changed and "Andros Townsend" not in changed
    first, second = changed.split(". ")
    new_surname = first.split()[1]
    assert second.startswith(new_surname + " later apologised")
    assert isinstance(apply("change-name", "The river rose overnight."), Skip)


def test_negate_previous_needs_a_dialogue() -> None:
    dialogue = "A: Shall we take the train?\nB: The train leaves at noon."
    assert text(apply("negate-previous", "Fine.", task="dialogue", source=dialogue)) == \
        "The train does not leave at noon."
    assert isinstance(apply("negate-previous", "Fine.", source=dialogue), Skip)


@pytest.mark.parametrize(("question", "statement"), [
    ("Is it good?", "It is good."),
    ("Who won the cup?", "Someone won the cup."),
    ("Did the cat sit on the mat?", "The cat sat on the mat."),
    ("Where did he go?", "He went somewhere."),
])
def test_question_to_assertion(question: str, statement: str) -> None:
    assert text(apply("question-to-assertion", question, task="qa")) == statement


def test_question_word_change_swaps_the_question_word_only() -> None:
    changed = text(apply("question-word-change", "What dynasty came after the Song?", task="qa"))
    first, rest = changed.split(" ", 1)
    assert first.lower() in ("who", "where", "when", "why", "how", "which", "whose", "whom")
    assert rest == "dynasty came after the Song?"
    assert isinstance(apply("question-word-change", "The Song came first.", task="qa"), Skip)


def test_rule_directions_and_unknown_names() -> None:
    assert {r for r, (d, _) in RULES.items() if d == "good"} == {"synonym", "expansion",
                                                                 "contraction"}
    assert len(make_methods(["rules"])) == len(RULES)
    with pytest.raises(ValueError, match="did you mean 'synonym'"):
        make_methods(["rule:synonyms"])
    with pytest.raises(ValueError, match="did you mean 'textfooler'"):
        make_methods(["textfoler"])
    with pytest.raises(ValueError, match="needs a generator"):
        make_methods(["adveval"])


def test_rule_search_spends_one_query_per_new_variant(scripted: Callable[..., Any]) -> None:
    server, _ = scripted(lambda seed: "", lambda t: 60)
    cache = open_cache()
    victim = TableVictim(default=50.0)
    source = example(0).source
    ex = Example("ex-0", "summarization", source,
                 "Anna Berg met Tom Lind in Oslo. Berg thanked Lind for the quiet evening.",
                 ("Anna Berg met Tom Lind.",))
    attack = Attacker([ex], [Victim(victim, cache=cache)],
                      Gold([gold_evaluator(judge_spec(server), 1)], cache=cache),
                      [RuleMethod("change-name", PARSER), RuleMethod("expansion", PARSER)],
                      ["good", "bad"], AttackParams(budget=6, gold_samples=1))
    records = {r.method: r for r in attack.run()}
    rename = records["rule:change-name"]
    assert rename.direction == "bad" and rename.stop == "budget" and rename.queries == 6
    assert len({c["text"] for c in rename.trajectory}) == 6
    expansion = records["rule:expansion"]
    assert expansion.direction == "good" and expansion.stop == "not-applicable"
    assert expansion.queries == 0 and expansion.extra["skips"] == {
        "no contraction to expand": RULE_PATIENCE * 2}
