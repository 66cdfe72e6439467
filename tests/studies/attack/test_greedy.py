"""Paper 002's appendix-J attack on a lexical metric, with a tiny masked LM built from a config."""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Callable
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.text import noise_ratio
from evalstress.evaluators.base import create_evaluator
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.studies.attack.base import AttackSetup
from evalstress.studies.attack.greedy import AppendixJ
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.scoring import Gold, Victim
from tests.test_reproductions_doc import PAGE, page_commands

from .conftest import TableVictim, example, judge_spec

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


def word_similarity(original: str) -> Callable[[str], float]:
    """A cheap, deterministic victim that compares with the original: difflib's ratio over
    words, 2M / T (M matched words, T words in both texts), on 0-100."""
    return lambda text: 100 * SequenceMatcher(None, original.split(), text.split()).ratio()


def similarity_setup(text: str, params: AttackParams) -> AttackSetup:
    ex = example(0, text)
    victim = Victim(TableVictim(word_similarity(text)), reference_mode="original")
    victim.calibrate([ex])
    judge = Gold([TableVictim(default=20.0)])
    judge.calibrate([ex])
    return AttackSetup(ex, victim, judge, "bad", params)


@pytest.fixture(scope="module")
def sentencepiece_lm(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The rigged SentencePiece-style masked LM of tests/wordpiece_models.py."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from tests.wordpiece_models import build_masked_lm

    return build_masked_lm(tmp_path_factory.mktemp("sentencepiece"), "sentencepiece")


def test_a_search_never_goes_back_to_where_it_was(sentencepiece_lm: str) -> None:
    """Against the original, word similarity rates "the stopped on the road" (truck replaced
    by "the": 2 * 5 / 11 = 90.9) as high as the first step's "truck stopped on the road", so a
    search free to take any edit swapped truck and the back and forth at noise 1/6 until its
    300 queries were gone. Only trials that add noise may be taken. By hand: step 1, every
    deletion scores 2 * 5 / 11 = 90.9 and every replacement at most 2 * 5 / 12 = 83.3, and the
    first deletion (of "the") is taken; step 2 (noise must pass 1/6), a deletion scores
    2 * 4 / 10 = 80 and a replacement of one of the five words at most 2 * 4 / 11 = 72.7, and
    the first deletion (of "truck") ends on "stopped on the road" at noise 2/6."""
    text = "the truck stopped on the road"
    record = AppendixJ(model=sentencepiece_lm, noise=0.3).run(
        similarity_setup(text, AttackParams(budget=300)))
    path = record.extra["path"]
    assert record.stop == "noise" and record.extra["final_text"] == "stopped on the road"
    assert [p.get("text") for p in path] == [None, "truck stopped on the road",
                                             "stopped on the road"]
    assert [round(p["victim"], 1) for p in path] == [100.0, 90.9, 80.0]
    assert [p["noise_ratio"] for p in path] == pytest.approx([0, 1 / 6, 2 / 6])
    assert record.queries < 300


def test_a_30_word_sentence_reaches_noise_0_3_under_the_default_budget(
        tiny_masked_lm: str) -> None:
    """Paper 002 sets the search no budget; with none given the search gets what it needs: the
    start, then ceil(0.3 * 30) = 9 steps of at most 30 * (1 + 8 + 8) trials: 4591 queries.
    One step alone takes over 300, the budget of paper 004's methods."""
    text = ("the city council voted on monday to rebuild the old harbour bridge and the work "
            "will start in may and cost twelve million euros while small ferries cross the bay")
    assert len(text.split()) == 30
    state = similarity_setup(text, AttackParams())
    record = AppendixJ(model=tiny_masked_lm, noise=0.3).run(state)
    assert record.stop == "noise" and record.extra["noise_ratio"] >= 0.3
    assert noise_ratio(text, record.extra["final_text"]) >= 0.3
    assert record.extra["query_budget"] == 1 + 9 * 30 * 17 == state.budget.total
    assert 300 < record.queries <= 4591
    ratios = [p["noise_ratio"] for p in record.extra["path"]]
    assert all(a < b for a, b in itertools.pairwise(ratios))


def test_a_given_budget_caps_the_search(tiny_masked_lm: str) -> None:
    text = "the council will rebuild the old harbour bridge in may"
    record = AppendixJ(model=tiny_masked_lm, noise=0.3).run(
        similarity_setup(text, AttackParams(budget=50)))
    assert record.stop == "budget" and record.queries == 50 == record.extra["query_budget"]


@pytest.mark.slow
def test_the_documented_paper_command_runs_with_the_appendix_j_settings(
        tmp_path: Path, tiny_masked_lm: str) -> None:
    """docs/reproductions.md's appendix-J command, as written but for its inputs: one segment
    of our own, the tiny masked LM for PATH and a scripted gold judge. Under --protocol paper
    BERTScore compares with the original (its score of the start is 1, not its score against
    ref_b), every word gets 1 + 8 + 8 trials, and the budget is the search's own: 10 words at
    noise 0.2 take at most 1 + 2 * 10 * 17 = 341 queries."""
    [line] = [c for c in page_commands(PAGE.read_text(encoding="utf-8")) if "appendix-j" in c]
    segment = {"id": "seg-0", "source": "Der Rat baut die alte Hafenbrücke im Mai neu.",
               "ref_a": "the council will rebuild the old harbour bridge in may",
               "ref_b": "in May the council rebuilds the old bridge at the harbour"}
    data = tmp_path / "wmt.jsonl"
    data.write_text(json.dumps(segment) + "\n")
    args = shlex.split(line)[1:]
    given = {"--limit": "1", "--out": str(tmp_path / "run"), "--cache-dir": str(tmp_path / "c")}
    with FakeServer(responder=lambda body: Reply("10")) as server:
        given["-g"] = judge_spec(server)
        for i, arg in enumerate(args[:-1]):
            if arg in given:
                args[i + 1] = given[arg]
            elif arg == "--method":
                args[i + 1] = args[i + 1].replace("model=PATH", f"model={tiny_masked_lm}")
        args[1] = str(data)
        result = CliRunner().invoke(app, [*args, "--quiet"])
        assert result.exit_code == 0, result.output
    block = json.loads((tmp_path / "run" / "results.json").read_text())["analyses"][
        "adversarial"]
    [victim] = block["victims"]
    assert block["protocol"] == "paper" and victim["reference_mode"] == "original"
    [record] = [json.loads(r) for r in (tmp_path / "run" / "attacks.jsonl").read_text()
                .splitlines()]
    extra = record["extra"]
    assert record["method"] == "appendix-j" and record["victim_raw"] is not None
    assert extra["path"][0]["victim_raw"] == pytest.approx(1.0, abs=1e-5)
    assert (extra["mlm_top"], extra["neighbours"], extra["positions"]) == (8, 8, 0)
    assert extra["query_budget"] == 1 + 2 * 10 * 17 and record["queries"] <= 341
    assert record["stop"] == "noise" and extra["noise_ratio"] >= 0.2
