"""Paper 002's appendix-J attack on a lexical metric, with a tiny masked LM built from a config."""

from __future__ import annotations

import pytest

from evalstress.core.text import noise_ratio
from evalstress.evaluators.base import create_evaluator
from evalstress.studies.attack.base import AttackSetup
from evalstress.studies.attack.greedy import AppendixJ
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.scoring import Gold, Victim

from .conftest import TableVictim, example

TEXT = "the council will rebuild the old harbour bridge in may"


def setup(budget: int = 300, gold: float = 20.0) -> AttackSetup:
    ex = example(0, TEXT)
    victim = Victim(create_evaluator("rouge:types=rougeL"), reference_mode="original")
    victim.calibrate([ex])
    judge = Gold([TableVictim(default=gold)])
    judge.calibrate([ex])
    return AttackSetup(ex, victim, judge, "bad", AttackParams(budget=budget))


@pytest.mark.slow
def test_each_step_applies_the_trial_the_victim_scores_highest(tiny_masked_lm: str) -> None:
    attack = AppendixJ(model=tiny_masked_lm, noise=0.25)
    state = setup(budget=1000)  # about 17 trials per word and step: 3 steps of 10 words
    record = attack.run(state)
    path = record.extra["path"]
    assert record.stop == "noise" and record.extra["noise_ratio"] >= 0.25
    assert [p["step"] for p in path] == list(range(len(path)))
    ratios = [p["noise_ratio"] for p in path]
    assert ratios == sorted(ratios) and ratios[-1] == record.extra["noise_ratio"]
    # step 1 by hand: every trial from the start text, scored by ROUGE-L against the original
    words = TEXT.split()
    trials = attack.trials(words, list(range(len(words))))
    ops = {t[3] for t in trials if t[1] == 0}
    assert "" in ops and len(ops) > 1  # a deletion and some substitutions at position 0
    rouge = Victim(create_evaluator("rouge:types=rougeL"), reference_mode="original")
    rouge.calibrate([state.example])
    scores = [m.value for m in rouge.score(state.example, [t[0] for t in trials])]
    assert path[1]["victim"] == pytest.approx(max(s for s in scores if s is not None))
    final = record.extra["final_text"]
    assert noise_ratio(TEXT, final) == pytest.approx(record.extra["noise_ratio"])
    # gold 20 and a victim still high after the noise: a bad-but-overrated success
    assert record.text == final and record.success == (record.victim_score >= 60)
    assert record.queries == state.budget.used <= 1000


@pytest.mark.slow
def test_budget_ends_an_unfinished_step(tiny_masked_lm: str) -> None:
    record = AppendixJ(model=tiny_masked_lm, noise=0.9).run(setup(budget=20))
    assert record.stop == "budget" and record.queries == 20
    assert record.extra["path"][-1]["complete"] is False


def test_a_sentence_encoder_is_not_a_masked_lm(tiny_masked_lm: str) -> None:
    with pytest.raises(ValueError, match="no trained masked-LM head"):
        AppendixJ(model="minilm")._loaded()
    neighbours_only = AppendixJ(model="minilm", mlm_top=0)
    trials = neighbours_only.trials(["the", "harbour", "bridge"], [2])
    assert {t[3] for t in trials} - {""}  # embedding neighbours of "bridge"
    with pytest.raises(ValueError, match="needs a masked LM"):
        AppendixJ(model="")
    assert not AppendixJ(model=tiny_masked_lm).applies("good")


def test_marked_vocabularies_give_whole_words(marked_masked_lm: tuple[str, str]) -> None:
    """The rigged model's head ranks the continuation piece `car` first, then the word starts of
    `bus`, `.`, `van`; its embeddings put `lorry` then `wagon` nearest to `truck` after the
    continuation piece `truck` and `.` (tests/wordpiece_models.py). So at `truck` the trials are
    the deletion and the four whole words, written as words: no `Ġbus`, no `car`."""
    family, path = marked_masked_lm
    attack = AppendixJ(model=path, mlm_top=2, neighbours=2)
    trials = attack.trials(["the", "truck", "stopped"], [1])
    assert sorted(t[0] for t in trials) == ["the bus stopped", "the lorry stopped",
                                            "the stopped", "the van stopped",
                                            "the wagon stopped"], family
    _, _, table = attack._loaded()
    assert [w for w, _ in table.neighbours("truck", 2)] == ["lorry", "wagon"]
    assert [round(c, 3) for _, c in table.neighbours("truck", 2)] == [0.894, 0.707]
