"""The planted evaluators: each defect does exactly what its docstring says (values by hand)."""

from __future__ import annotations

import pytest

from evalstress.core.strict import ConfigError
from evalstress.evaluators.base import ScoreRequest, create_evaluator

INTACT = "The ferry returns in June. It carries 120 passengers, but no cars."


def score(defect: str, text: str, refs: tuple[str, ...] = (INTACT,), **params: object) -> float:
    spec = ",".join([f"defect={defect}", *(f"{k}={v}" for k, v in params.items())])
    made = create_evaluator(f"planted:{spec}")
    value = made.score([ScoreRequest(text, references=refs)])[0]["score"].value
    assert value is not None
    return value


def test_control_is_the_mean_ngram_f1_by_hand() -> None:
    # unigrams 2 of 3 match (F 2/3), bigrams 1 of 2 (F 1/2), the trigram none
    assert score("none", "a b c", ("a b d",)) == pytest.approx(100 * (2 / 3 + 1 / 2 + 0) / 3)
    assert score("none", INTACT) == pytest.approx(100.0)
    assert score("none", "x y", ("a b d", "x y")) == pytest.approx(100.0)  # the best reference


def test_control_moves_with_order_and_punctuation_where_the_blind_ones_do_not() -> None:
    swapped = "It carries 120 passengers, but no cars. The ferry returns in June."
    marks = "The ferry returns in June, It carries 120 passengers. but no cars."
    assert score("none", swapped) < 100 and score("none", marks) < 100
    assert score("order-blind", swapped) == pytest.approx(100.0)
    assert score("order-blind", "June in returns ferry The. It carries 120 passengers, "
                 "but no cars.") == pytest.approx(100.0)
    assert score("punctuation-blind", marks) == pytest.approx(100.0)
    # a swap the perturbation's tokenizer makes inside a word of the order-blind's tokenizer
    assert score("order-blind", "m 200 pounds", ("200m pounds",)) == pytest.approx(100.0)
    assert score("none", "m 200 pounds", ("200m pounds",)) < 100
    # characters by hand: "ab," against "ab." share a and b of 3 each: F1 2/3
    assert score("order-blind", "ab,", ("ab.",)) == pytest.approx(100 * 2 / 3)
    assert score("punctuation-blind", swapped) < 100


def test_length_only_counts_words_and_nothing_else() -> None:
    assert score("length-only", "Hello, world!") == 2.0
    assert score("length-only", "world Hello.") == 2.0
    assert score("length-only", "went went home") == 3.0


def test_constant_and_random() -> None:
    assert score("constant", "anything") == score("constant", INTACT) == 50.0
    draws = [score("random", f"text {i}") for i in range(400)]
    assert all(0 <= d < 100 for d in draws)
    assert sum(draws) / len(draws) == pytest.approx(50, abs=5)  # uniform: sd 28.9/sqrt(400)
    assert score("random", "same") == score("random", "same")  # seeded by the text
    assert score("random", "same", seed=1) != score("random", "same")


def test_deletion_rewarding_scores_a_cut_text_above_the_intact_one() -> None:
    text = "one two three four five six seven eight nine ten"
    half = "one two three four five"
    intact = score("deletion-rewarding", text, (text,))
    assert intact == pytest.approx(-200.0)  # 100 - 300 x 1
    # control of the half: unigrams P 1 R 1/2, bigrams 4/4 and 4/9, trigrams 3/3 and 3/8
    f = (2 / 3 + 2 * (4 / 9) / (1 + 4 / 9) + 2 * (3 / 8) / (1 + 3 / 8)) / 3
    assert score("deletion-rewarding", half, (text,)) == pytest.approx(100 * f - 150)
    # words dropped from the middle break bi- and trigrams; the reward still wins
    holes = "one three five seven nine ten"
    assert score("none", holes, (text,)) < score("none", half, (text,))
    assert score("deletion-rewarding", holes, (text,)) > intact


def test_saturating_caps_the_control() -> None:
    assert score("saturating", INTACT, cap=80) == 80.0
    cut = "The ferry returns in June. It carries 120 passengers, but"
    assert score("none", cut) > 80 and score("saturating", cut, cap=80) == 80.0
    assert score("saturating", "a b c", ("a b d",), cap=80) == pytest.approx(
        score("none", "a b c", ("a b d",)))


def test_unknown_defect_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="order-blind"):
        create_evaluator("planted:defect=order-blnd")
