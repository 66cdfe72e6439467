"""Counts in sentences a user reads: "1 blind spot", "2 blind spots", "1 test is", "3 tests are".

Every message that puts a number before a noun goes through `plural`, so a run with one
failure, one example or one seed never prints "1 blind spots" or "1 verdicts are".
"""

from __future__ import annotations


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`count` (with thousands separators) and the noun phrase that agrees with it.

    `plural_form` defaults to `singular` + "s"; give it where that is wrong, also to make a verb
    agree: `plural(n, "test is", "tests are")`.
    """
    word = singular if count == 1 else (plural_form if plural_form is not None else singular + "s")
    return f"{count:,} {word}"
