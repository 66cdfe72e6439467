"""The TextFooler-style baseline: importance by deletion, WordNet and MiniLM candidates, the
similarity floor, the victim target, random starts towards bad."""

from __future__ import annotations

from typing import Any

import pytest

from evalstress.core.data import Example
from evalstress.core.wordnet import synonyms
from evalstress.evaluators.base import create_evaluator
from evalstress.studies.attack.base import AttackSetup
from evalstress.studies.attack.embeddings import SentenceSimilarity
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.scoring import Gold, Victim
from evalstress.studies.attack.textfooler import TextFooler

from .conftest import SOURCE, TableVictim

TEXT = "The council will quickly rebuild the old harbour bridge and open a small ferry."
OTHER = "Shops near the bridge fear a long closure during the works."


def examples() -> list[Example]:
    refs = (TEXT,)
    return [Example("a", "summarization", SOURCE, TEXT, refs),
            Example("b", "summarization", SOURCE, OTHER, refs)]


def setup(direction: str, budget: int = 300) -> AttackSetup:
    pool = examples()
    victim = Victim(create_evaluator("rouge:types=rougeL"))
    victim.calibrate(pool)
    gold = Gold([TableVictim(default=80.0)])
    gold.calibrate(pool)
    return AttackSetup(pool[0], victim, gold, direction,  # type: ignore[arg-type]
                       AttackParams(budget=budget), pool)


@pytest.mark.slow
def test_good_direction_lowers_the_victim_within_the_similarity_floor() -> None:
    fooler = TextFooler(sim=0.8)
    state = setup("good")
    record = fooler.run(state)
    path = record.extra["path"]
    assert path, "no substitution was made"
    values = [record.victim_original] + [p["victim"] for p in path]
    assert values == sorted(values, reverse=True) and len(set(values)) == len(values)
    similarity = SentenceSimilarity()
    assert similarity(TEXT, [record.text])[0] >= 0.8
    for step in path:
        assert step["similarity"] >= 0.8
        assert step["new"].lower() in fooler.candidates(step["old"], *_pos(step["old"]))
    content = 9  # council quickly rebuild old harbour bridge open small ferry
    assert record.queries >= 1 + content and record.queries == state.budget.used
    assert record.stop in ("target", "words", "budget")
    assert record.success == (record.victim_score is not None and record.victim_score <= 40)


def _pos(word: str) -> tuple[str, str]:
    from evalstress.core.text import TextParser

    token = next(t for t in TextParser().parse(TEXT).tokens if t.text == word)
    return token.pos, token.tag


def test_candidates_come_from_wordnet_and_the_embedding_table() -> None:
    fooler = TextFooler()
    options = fooler.candidates("bridges", "NOUN", "NNS")
    assert "bridges" not in options
    assert {s + "s" for s in synonyms("bridge", "n") if s.isalpha()} & set(options)
    assert fooler.candidates("quickly", "ADV", "RB")
    assert fooler.candidates("the", "DET", "DT") == []


@pytest.mark.slow
def test_bad_direction_starts_from_another_example_and_budget_holds() -> None:
    record = TextFooler().run(setup("bad", budget=12))
    assert record.start == "random:b" and record.original == OTHER
    assert record.queries <= 12


def test_a_word_vector_file_is_the_neighbour_source(tmp_path: Any) -> None:
    # cosines to "bridge" (1, 0, 0) by hand, all vectors of length 1: span (0.8, 0.6, 0) 0.8,
    # viaduct (0.6, 0.8, 0) 0.6, banana (0, 1, 0) 0, harbour (0, 0, 1) 0
    path = tmp_path / "vectors.txt"
    path.write_text("5 3\nbridge 1 0 0\nspan 0.8 0.6 0\nviaduct 0.6 0.8 0\nbanana 0 1 0\n"
                    "harbour 0 0 1\n")
    fooler = TextFooler(vectors=str(path))
    table = fooler.neighbour_table()
    assert table.neighbours("bridge", 50, 0.5) == (("span", pytest.approx(0.8)),
                                                   ("viaduct", pytest.approx(0.6)))
    assert [w for w, _ in table.neighbours("bridge", 1, 0.0)] == ["span"]
    # TextFooler's own recipe: the vectors only, no WordNet synonyms unless asked for
    assert fooler.candidates("bridge", "NOUN", "NN") == ["span", "viaduct"]
    with_wordnet = TextFooler(vectors=str(path), wordnet=True).candidates("bridge", "NOUN", "NN")
    assert set(with_wordnet) == {s.lower() for s in synonyms("bridge", "n")} | {"viaduct"}
    bad = tmp_path / "bad.txt"
    bad.write_text("bridge 1 0 0\nspan 0.8 0.6\n")
    with pytest.raises(ValueError, match="line 2: 2 numbers where the first vector has 3"):
        TextFooler(vectors=str(bad)).neighbour_table()
    with pytest.raises(ValueError, match="no such file"):
        TextFooler(vectors=str(tmp_path / "none.txt"))
