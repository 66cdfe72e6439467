"""A count and its noun agree: one thing is singular, zero and many are plural."""

from evalstress.core.wording import plural


def test_one_is_singular_and_zero_and_many_are_plural() -> None:
    assert plural(1, "blind spot") == "1 blind spot"
    assert plural(0, "blind spot") == "0 blind spots"
    assert plural(2, "blind spot") == "2 blind spots"


def test_an_irregular_plural_and_a_verb_agree() -> None:
    assert plural(1, "test is", "tests are") == "1 test is"
    assert plural(3, "test is", "tests are") == "3 tests are"
    assert plural(1, "analysis", "analyses") == "1 analysis"


def test_large_counts_read_with_thousands_separators() -> None:
    assert plural(10075, "variant") == "10,075 variants"
