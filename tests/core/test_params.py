"""Parameter kinds shared by perturbations and evaluators: each accepts what it says, refuses
the rest with what it expected, and normalises the way spec values are read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalstress.core.params import (
    BOOLEAN,
    REQUIRED,
    DeclaredSettings,
    Param,
    ParamValueError,
    build_groups,
    declare_groups,
    declare_params,
    duration,
    either,
    flat_values,
    one_of,
    optional,
    path,
    real,
    setting,
    settle,
    text,
    whole_number,
    words,
)
from evalstress.core.strict import UnknownNameError


def _refused(kind: Any, value: Any) -> str:
    with pytest.raises(ParamValueError) as caught:
        kind.parse(value)
    return str(caught.value)


def test_a_real_number_keeps_its_form_and_honours_open_and_closed_ends() -> None:
    unit = real(0, 1)
    assert [unit.parse(v) for v in (0, 1, 0.5, "0.25", "1")] == [0, 1, 0.5, 0.25, 1]
    assert isinstance(unit.parse(1), int) and isinstance(unit.parse("1"), int)
    assert _refused(unit, 1.5) == "expected a number >= 0 and <= 1"
    open_ends = real(0, 1, above=True, below=True)
    assert open_ends.expects == "a number > 0 and < 1"
    for value in (0, 1, True, "x", float("nan"), float("inf"), None):
        _refused(open_ends, value)
    assert real().parse(-3.5) == -3.5


def test_a_duration_is_a_positive_number_of_seconds() -> None:
    assert duration().parse("2.5") == 2.5
    for value in (0, -1, "soon"):
        assert _refused(duration(), value) == "expected a number of seconds > 0"


def test_booleans_are_true_or_false_only() -> None:
    assert [BOOLEAN.parse(v) for v in (True, "false", " TRUE ")] == [True, False, True]
    for value in (1, 0, "yes", "maybe", None):
        assert _refused(BOOLEAN, value) == "expected true or false"


def test_choices_listed_by_a_function_are_read_when_a_value_is_checked() -> None:
    known = ["a", "b"]
    kind = one_of(lambda: known)
    known.append("c")
    assert kind.parse("c") == "c" and kind.expects == "one of a, b, c"
    assert _refused(kind, "cc") == "expected one of a, b, c. Did you mean 'c'?"
    numbers = one_of((5, 1))
    assert numbers.parse("1") == 1 and numbers.parse(5) == 5
    _refused(numbers, True)


def test_optional_either_and_words() -> None:
    maybe = optional(whole_number(1))
    assert maybe.parse(None) is None and maybe.parse("3") == 3
    assert maybe.expects == "a whole number >= 1, or none"
    mixed = either(one_of(("auto",)), whole_number(1))
    assert mixed.parse("auto") == "auto" and mixed.parse(7) == 7
    assert _refused(mixed, 0) == "expected one of auto or a whole number >= 1"
    orders = words(whole_number(1))
    assert orders.parse("2  3") == "2  3" and orders.parse(4) == "4"
    assert _refused(orders, "2 x") == "'x': expected a whole number >= 1"
    _refused(orders, " ")


def test_texts_and_paths(tmp_path: Path) -> None:
    assert text().parse(7) == "7" and text(empty=True).parse("") == ""
    _refused(text(), "")
    _refused(text(), False)
    there = tmp_path / "f.txt"
    there.write_text("x", encoding="utf-8")
    assert path().parse(there) == str(there)
    assert _refused(path(), str(tmp_path / "no.txt")) == ("no such file (expected the path of "
                                                          "an existing file)")
    assert path(must_exist=False).parse("new.sqlite") == "new.sqlite"


DECLARED = declare_params(
    cmd=Param(text(), REQUIRED, "the command"),
    n=Param(whole_number(1), 2, "how many"),
    tag=Param(optional(text()), None, "a tag"))


def test_settle_fills_defaults_and_names_what_is_wrong() -> None:
    assert settle(DECLARED, {"cmd": "x", "n": "3"}, "evaluator 'e'") == {
        "cmd": "x", "n": 3, "tag": None}
    with pytest.raises(ParamValueError, match=r"^evaluator 'e': parameter 'cmd' is required"):
        settle(DECLARED, {}, "evaluator 'e'")
    with pytest.raises(ParamValueError, match=r"^evaluator 'e': parameter 'n' = None: expected"):
        settle(DECLARED, {"cmd": "x", "n": None}, "evaluator 'e'")
    with pytest.raises(UnknownNameError, match="Did you mean 'tag'"):
        settle(DECLARED, {"cmd": "x", "tags": "y"}, "evaluator 'e'")


def test_a_default_outside_its_own_kind_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="parameter 'n': the default 0"):
        declare_params(n=Param(whole_number(1), 0, "how many"))


@dataclass(frozen=True)
class Timing(DeclaredSettings):
    timeout: float = setting(duration(), 60.0, "seconds")


@dataclass(frozen=True)
class Size(DeclaredSettings):
    n: int = setting(whole_number(1), 1, "samples")
    loud: bool = setting(BOOLEAN, False, "say more")


def test_settings_objects_check_their_fields_and_round_trip_a_flat_spec() -> None:
    assert Size(n="4").n == 4  # type: ignore[arg-type]
    with pytest.raises(ParamValueError, match=r"parameter 'n' = 0: expected a whole number"):
        Size(n=0)
    declared = declare_groups(timing=Timing, size=Size)
    assert {k: p.group for k, p in declared.items()} == {"timeout": "timing", "n": "size",
                                                          "loud": "size"}
    groups = build_groups(declared, {"timing": Timing, "size": Size}, {"n": 3, "timeout": 5})
    assert groups == {"timing": Timing(timeout=5), "size": Size(n=3)}
    assert flat_values(*groups.values()) == {"timeout": 5, "n": 3, "loud": False}
