"""The attack's gold judge with the user's own prompt template and output contract: paper 004's
sampling stays (n samples at temperature 0.5), the template's wording and scale replace the
built-in score-only prompt on 0-100."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalstress.engine.scoring import open_cache
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.methods import AdvEvalMethod
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim, gold_evaluator

from .conftest import ORIGINAL, TableVictim, example, generator_spec, judge_spec

# the fixture's scripted judge reads the text between these two markers
TEMPLATE = ("Text to evaluate:\n{text}\n\nCriterion: is this a faithful summary of\n{source}\n"
            "Answer with a number from {scale_min} to {scale_max} and nothing else.")


def test_gold_judge_keeps_the_template_and_its_scale(scripted: Callable[..., Any],
                                                     tmp_path: Path) -> None:
    server, script = scripted(lambda seed: "", lambda text: 8 if text == ORIGINAL else 2)
    prompt = tmp_path / "gold.txt"
    prompt.write_text(TEMPLATE, "utf-8")
    evaluator = gold_evaluator(judge_spec(server, prompt=prompt, output="number", scale="0-10"),
                               samples=3)
    params = evaluator.params
    assert (params["n"], params["temperature"], params["form"]) == (3, 0.5, "template")
    assert params["scale"] == [0, 10]
    gold = Gold([evaluator], cache=open_cache())
    gold.calibrate([example()])
    scores = gold.score(example(), [ORIGINAL, "Bridge money gone."])
    assert [m.value for m in scores] == [80.0, 20.0]  # 8 and 2 of 0-10, on 0-100
    # the request about the original (a declared 0-10 scale needs no calibration request, and
    # requests go out sorted by text)
    sent = next(b["messages"] for b in script.bodies
                if b["messages"][0]["content"].startswith(f"Text to evaluate:\n{ORIGINAL}"))
    assert sent == [{"role": "user", "content": TEMPLATE.format(
        text=ORIGINAL, source=example().source, scale_min=0, scale_max=10)}]
    assert {b["temperature"] for b in script.bodies} == {0.5}


def test_adveval_attack_with_a_template_gold(scripted: Callable[..., Any],
                                             tmp_path: Path) -> None:
    # gold: the original 8/10, every rewrite 7.5/10; sample 13 fools the victim (20 of 100)
    server, _ = scripted(lambda seed: f"<text>The bridge will be rebuilt, version {seed}.</text>",
                         lambda text: 8 if text == ORIGINAL else 7.5)
    prompt = tmp_path / "gold.txt"
    prompt.write_text(TEMPLATE, "utf-8")
    cache = open_cache()
    gold = Gold([gold_evaluator(judge_spec(server, prompt=prompt, output="number", scale="0-10"),
                                1)], cache=cache)
    victim = TableVictim({ORIGINAL: 60.0, "The bridge will be rebuilt, version 13.": 20.0})
    run = Attacker([example()], [Victim(victim, cache=cache)], gold,
                   [AdvEvalMethod(TextGenerator.from_spec(generator_spec(server)))], ["good"],
                   AttackParams(gold_samples=1))  # type: ignore[list-item]
    [record] = run.run()
    assert record.success and record.text == "The bridge will be rebuilt, version 13."
    # gold 75 of 100 (7.5 of 10) minus the victim's 20
    assert (record.gold, record.victim_score, record.feedback) == (75.0, 20.0, 55.0)
