"""What a parameter accepts, for perturbations and evaluators alike, checked when a spec loads.

A value of the wrong shape (`k: many`, `tokenize=foo`, `timeout=-1`, `case_sensitive=maybe`)
used to pass the load and then fail in the middle of a run, or, worse, be used. Perturbations
and evaluators now declare each parameter with a `ParamKind`; a bad value is a one-line error
naming the parameter, the value and what is allowed, before any text is perturbed or scored, and
a good one is normalised (`"7"` from a spec string becomes 7, `"false"` False).

Evaluators declare more than a kind (`Param`: the default, a one-line help, whether the value
enters the score-cache signature, its abbreviation in the printable form); an evaluator whose
options are grouped into settings objects (the LLM judge) declares them as dataclass fields
(`setting`), so the flat spec maps onto the groups through the same declaration.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from evalstress.core.strict import ConfigError, check_names, did_you_mean


class ParamValueError(ConfigError):
    """A parameter value of the wrong kind; the message says what was expected."""


class ParamKind:
    """A parameter's accepted values: `parse(value)` gives the value the code uses, or raises
    ParamValueError saying what is wrong. `expects` says what a user should write ("a whole
    number >= 1"); it may be computed when first read, for choices a library lists."""

    __slots__ = ("_expects", "parse")

    def __init__(self, expects: str | Callable[[], str], parse: Callable[[Any], Any]):
        self._expects = expects
        self.parse = parse

    @property
    def expects(self) -> str:
        return self._expects if isinstance(self._expects, str) else self._expects()

    def __repr__(self) -> str:
        return f"ParamKind({self.expects!r})"


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


def whole_number(minimum: int, maximum: int | None = None) -> ParamKind:
    expects = (f"a whole number >= {minimum}" if maximum is None
               else f"a whole number from {minimum} to {maximum}")

    def parse(value: Any) -> int:
        number = _whole(value)
        if number is None or number < minimum or (maximum is not None and number > maximum):
            raise ParamValueError(f"expected {expects}")
        return number

    return ParamKind(expects, parse)


def _number(value: Any) -> int | float | None:
    """The number a spec value stands for; an int stays an int, so a value written `5` keeps
    the form it had in signatures and cache keys. None for a bool, NaN or a non-number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and not math.isnan(value):
        return value
    return None


def real(minimum: float | None = None, maximum: float | None = None, *,
         above: bool = False, below: bool = False) -> ParamKind:
    """A real number within bounds: `minimum` and `maximum` are closed ends unless `above`
    (strictly greater than `minimum`) or `below` (strictly less than `maximum`)."""
    limits = []
    if minimum is not None:
        limits.append(f"{'>' if above else '>='} {minimum:g}")
    if maximum is not None:
        limits.append(f"{'<' if below else '<='} {maximum:g}")
    expects = "a number" + (" " + " and ".join(limits) if limits else "")

    def parse(value: Any) -> int | float:
        number = _number(value)
        if number is None or math.isinf(number) or (minimum is not None and (
                number <= minimum if above else number < minimum)) or (maximum is not None and (
                number >= maximum if below else number > maximum)):
            raise ParamValueError(f"expected {expects}")
        return number

    return ParamKind(expects, parse)


def duration() -> ParamKind:
    """A positive number of seconds (timeouts, deadlines)."""
    expects = "a number of seconds > 0"
    positive = real(0, above=True)

    def parse(value: Any) -> int | float:
        try:
            return positive.parse(value)
        except ParamValueError:
            raise ParamValueError(f"expected {expects}") from None

    return ParamKind(expects, parse)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else None
    if word in {"true", "false"}:
        return word == "true"
    raise ParamValueError("expected true or false")


BOOLEAN = ParamKind("true or false", _boolean)


def one_of(choices: Sequence[Any] | Callable[[], Sequence[Any]]) -> ParamKind:
    """One of `choices`: written out, or a function that lists them (a library's own list,
    read when first needed). A spec's `5` matches the choice 5 or "5"; a bool matches none."""

    def listed() -> list[Any]:
        return list(choices() if callable(choices) else choices)

    def expects() -> str:
        return "one of " + ", ".join(map(str, listed()))

    def parse(value: Any) -> Any:
        known = listed()
        if not isinstance(value, bool) and isinstance(value, str | int):
            for choice in known:
                if str(choice) == str(value):
                    return choice
        hint = did_you_mean(str(value), [str(c) for c in known])
        raise ParamValueError(f"expected {expects()}.{hint}".rstrip("."))

    return ParamKind(expects, parse)


def text(empty: bool = False) -> ParamKind:
    """A text (a number a spec reader took for one is its text); non-empty unless `empty`."""
    expects = "a text" if empty else "a non-empty text"

    def parse(value: Any) -> str:
        if not isinstance(value, bool) and isinstance(value, int | float):
            value = str(value)
        if isinstance(value, str) and (empty or value.strip()):
            return value
        raise ParamValueError(f"expected {expects}")

    return ParamKind(expects, parse)


TEXT = text()


def path(must_exist: bool = True) -> ParamKind:
    """A file path, given as text; it must name an existing file unless `must_exist` is
    False (a file the code creates). The value stays the text as written."""
    expects = "the path of an existing file" if must_exist else "a file path"

    def parse(value: Any) -> str:
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value.strip():
            raise ParamValueError(f"expected {expects}")
        if must_exist and not Path(value).is_file():
            raise ParamValueError(f"no such file (expected {expects})")
        return value

    return ParamKind(expects, parse)


def optional(kind: ParamKind) -> ParamKind:
    """`kind`, or None (left to the code: its default, or what it works out)."""

    def parse(value: Any) -> Any:
        return None if value is None else kind.parse(value)

    return ParamKind(lambda: f"{kind.expects}, or none", parse)


def either(*kinds: ParamKind) -> ParamKind:
    """A value any of `kinds` accepts, the first that does giving its normalised form."""

    def expects() -> str:
        return " or ".join(k.expects for k in kinds)

    def parse(value: Any) -> Any:
        for kind in kinds:
            try:
                return kind.parse(value)
            except ParamValueError:
                continue
        raise ParamValueError(f"expected {expects()}")

    return ParamKind(expects, parse)


def words(each: ParamKind) -> ParamKind:
    """Space-separated words, each of kind `each` (`"rouge1 rougeL"`, `"2 3 4"`); at least one.
    The value stays the text as written (a lone number a spec reader took for one becomes its
    text), so the code reads it as before."""

    def expects() -> str:
        return f"space-separated words, each {each.expects}"

    def parse(value: Any) -> str:
        if not isinstance(value, bool) and isinstance(value, int):
            value = str(value)
        if not isinstance(value, str) or not value.split():
            raise ParamValueError(f"expected {expects()}")
        for word in value.split():
            try:
                each.parse(word)
            except ParamValueError as exc:
                raise ParamValueError(f"'{word}': {exc}") from None
        return value

    return ParamKind(expects, parse)


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


def value_error(key: str, value: Any, problem: str, where: str = "") -> ParamValueError:
    """The one-line error for a bad value of parameter `key`: where it was given, the
    parameter, the value, and what is wrong with it (usually what was expected)."""
    prefix = f"{where}: " if where else ""
    return ParamValueError(f"{prefix}parameter '{key}' = {value!r}: {problem}")


def parse_params(kinds: Mapping[str, ParamKind | None], params: Mapping[str, Any],
                 where: str) -> dict[str, Any]:
    """`params` with each value parsed by its kind; the first bad one raises, naming `where`
    and the parameter. Names must already be known (see `perturb.base.check_params`)."""
    out = {}
    for key, value in params.items():
        kind = kinds.get(key)
        if kind is None or value is None:  # None: "use the default" (constructors pass it on)
            out[key] = value
            continue
        try:
            out[key] = kind.parse(value)
        except ParamValueError as exc:
            raise value_error(key, value, str(exc), where) from None
    return out


# --- declarations with defaults (evaluators) ------------------------------------------------

class _Required:
    def __repr__(self) -> str:
        return "required"


#: the default of a parameter a spec must give (`python`'s target, `command`'s cmd)
REQUIRED: Any = _Required()

Signed = Literal["always", "given", "never"]


@dataclass(frozen=True)
class Param:
    """One declared parameter of an evaluator.

    `signed` says whether the value enters the score-cache signature: `always` (defaults
    included), `given` (only when a spec sets it; used where the library records its own
    defaults, as sacreBLEU's signature string does) or `never` (batch sizes, devices, timeouts:
    they do not change a score). `short` is its abbreviation in the printable form
    (`bleu|tok:13a|smooth:exp|v2.4.3`); empty keeps it out. `default_note` says what a None
    default stands for when the code works the value out. `group` is the settings object the
    parameter belongs to, for evaluators whose options are grouped (set by `declare_groups`)."""

    kind: ParamKind
    default: Any
    help: str
    signed: Signed = "always"
    short: str = ""
    default_note: str = ""
    group: str = ""

    @property
    def shown_default(self) -> str:
        """The default as a listing shows it."""
        if self.default is REQUIRED:
            return "(required)"
        if self.default_note:
            return self.default_note
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return "none" if self.default is None else repr(self.default)


def declare_params(**params: Param) -> Mapping[str, Param]:
    """An evaluator's `PARAMS`, read-only; each default must be a value of its kind (or None
    where the kind is optional), which is checked here, once, when the class is defined."""
    for name, param in params.items():
        if param.default is not REQUIRED:
            try:
                param.kind.parse(param.default)
            except ParamValueError as exc:
                raise TypeError(f"parameter '{name}': the default {param.default!r} is not "
                                f"of its own kind ({exc})") from None
    return MappingProxyType(params)


def settle(declared: Mapping[str, Param], given: Mapping[str, Any],
           where: str) -> dict[str, Any]:
    """Every declared parameter's value: the given ones checked and normalised, the rest
    their defaults. An unknown name is an error with a did-you-mean, a bad value (None too,
    unless the kind is optional) one naming the parameter, a missing required one says so."""
    check_names("parameter", given, declared, where)
    values: dict[str, Any] = {}
    for key, param in declared.items():
        if key not in given:
            if param.default is REQUIRED:
                raise ParamValueError(f"{where}: parameter '{key}' is required "
                                      f"({param.kind.expects}): {param.help}")
            values[key] = param.default
            continue
        try:
            values[key] = param.kind.parse(given[key])
        except ParamValueError as exc:
            raise value_error(key, given[key], str(exc), where) from None
    return values


# --- settings objects whose fields are declared parameters (the LLM judge) -------------------

def setting(kind: ParamKind, default: Any, help: str, **more: Any) -> Any:
    """A dataclass field that is a declared parameter (`more`: Param's other fields)."""
    return field(default=default,
                 metadata={"param": Param(kind, default, help, **more)})


class DeclaredSettings:
    """A frozen dataclass of `setting` fields: each value is checked and normalised by its
    kind when the object is made, so a settings object built in code is as safe as a spec."""

    def __post_init__(self) -> None:
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            try:
                parsed = item.metadata["param"].kind.parse(value)
            except ParamValueError as exc:
                raise value_error(item.name, value, str(exc)) from None
            object.__setattr__(self, item.name, parsed)


def declare_groups(**groups: type[DeclaredSettings]) -> Mapping[str, Param]:
    """The flat `PARAMS` of an evaluator whose options are settings objects: every field of
    each group, in order, with its group's name."""
    out: dict[str, Param] = {}
    for group, cls in groups.items():
        for item in fields(cls):  # type: ignore[arg-type]
            if item.name in out:
                raise TypeError(f"parameter '{item.name}' is declared in two groups")
            out[item.name] = replace(item.metadata["param"], group=group)
    return declare_params(**out)


def build_groups(declared: Mapping[str, Param], groups: Mapping[str, type[DeclaredSettings]],
                 values: Mapping[str, Any]) -> dict[str, Any]:
    """Flat spec values mapped onto the settings objects their declaration names; a group
    without a value given keeps its defaults."""
    split: dict[str, dict[str, Any]] = {group: {} for group in groups}
    for key, value in values.items():
        split[declared[key].group][key] = value
    return {group: cls(**split[group]) for group, cls in groups.items()}


def flat_values(*groups: DeclaredSettings) -> dict[str, Any]:
    """Every field of the settings objects in one mapping, as a flat spec names them (the
    inverse of `build_groups`)."""
    return {item.name: getattr(group, item.name)
            for group in groups for item in fields(group)}  # type: ignore[arg-type]

