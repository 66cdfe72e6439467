"""What each perturbation parameter accepts, checked when a suite or `-p` spec is loaded.

A value of the wrong shape (`k: many`, `span: -3`, `keep_last: "no"`) used to pass the load
and then fail in the middle of a run or, worse, be ignored. Each perturbation now declares its
parameters with a `ParamKind`; a bad value is an error naming the field before any text is
perturbed, and a good one is normalised (`"7"` from a spec string becomes 7, `"false"` False).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from evalstress.core.strict import ConfigError, did_you_mean


class ParamValueError(ConfigError):
    """A parameter value of the wrong kind; the message says what was expected."""


@dataclass(frozen=True)
class ParamKind:
    """A parameter's accepted values: `parse(value)` gives the value the code uses, or raises
    ParamValueError saying what is wrong."""

    expects: str  # what a user should write, e.g. "a whole number >= 1"
    parse: Callable[[Any], Any]


def declare(**kinds: ParamKind) -> Mapping[str, ParamKind]:
    """A perturbation's `PARAMS`: parameter names with their kinds, read-only."""
    return MappingProxyType(kinds)


def _whole(value: Any) -> int | None:
    """The int a YAML or spec value stands for (7, "7"), or None (never a bool, 2.5 or "x")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def whole_number(minimum: int) -> ParamKind:
    expects = f"a whole number >= {minimum}"

    def parse(value: Any) -> int:
        number = _whole(value)
        if number is None or number < minimum:
            raise ParamValueError(f"expected {expects}")
        return number

    return ParamKind(expects, parse)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in {"true", "false"}:
        return word == "true"
    raise ParamValueError("expected true or false")


BOOLEAN = ParamKind("true or false", _boolean)


def one_of(choices: Sequence[str]) -> ParamKind:
    expects = "one of " + ", ".join(choices)

    def parse(value: Any) -> str:
        if isinstance(value, str) and value in choices:
            return value
        raise ParamValueError(f"expected {expects}.{did_you_mean(str(value), choices)}"
                              .rstrip("."))

    return ParamKind(expects, parse)


def _text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise ParamValueError("expected a non-empty text")


TEXT = ParamKind("a non-empty text", _text)


def level_counts(levels: Sequence[str]) -> ParamKind:
    """A mapping from severity level names (minor, major) to a whole number >= 1 each."""
    example = ", ".join(f"{level}: {5 * 4 ** i}" for i, level in enumerate(levels))
    expects = f"a mapping of {' and/or '.join(levels)} to a whole number >= 1, e.g. {{{example}}}"

    def parse(value: Any) -> dict[str, int]:
        if not isinstance(value, Mapping) or not value:
            raise ParamValueError(f"expected {expects}")
        out = {}
        for key, count in value.items():
            if key not in levels:
                raise ParamValueError(f"unknown level '{key}' (expected {' or '.join(levels)})"
                                      f"{did_you_mean(str(key), levels)}")
            number = _whole(count)
            if number is None or number < 1:
                raise ParamValueError(f"level '{key}': {count!r} is not a whole number >= 1")
            out[str(key)] = number
        return out

    return ParamKind(expects, parse)


def parse_params(kinds: Mapping[str, ParamKind | None], params: Mapping[str, Any],
                 where: str) -> dict[str, Any]:
    """`params` with each value parsed by its kind; the first bad one raises, naming `where`
    and the parameter. Names must already be known (see `base.check_params`)."""
    out = {}
    for key, value in params.items():
        kind = kinds.get(key)
        if kind is None or value is None:  # None: "use the default" (constructors pass it on)
            out[key] = value
            continue
        try:
            out[key] = kind.parse(value)
        except ParamValueError as exc:
            raise ParamValueError(f"{where}: parameter '{key}' = {value!r}: {exc}") from None
    return out
