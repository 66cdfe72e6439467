"""Strict configuration: a name the code does not know is an error with a did-you-mean.

Every place that looks a name up (suite keys, perturbation parameters, evaluator spec keys,
analysis names and options, generator spec keys) raises through `unknown_name_error`, so the
message reads the same everywhere: where it was written, what is unknown, the closest known
names, and the full list. The `key=value,...` specs of evaluators and generators are split and
their values read here too (`split_params`, `coerce_param`), so both read a spec alike."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


class ConfigError(ValueError):
    """A setting the code does not know, or a value it cannot use; the message says where."""


class UnknownNameError(ConfigError, KeyError):
    """An unknown name. A KeyError too, so callers that caught lookups by KeyError still do;
    `str()` is the plain message (a bare KeyError would print it quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' Did you mean X?' naming up to three close known names, or '' when none is close."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=3, cutoff=0.6)
    if not close:
        return ""
    return " Did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def unknown_name_error(kind: str, name: object, known: Iterable[str],
                       where: str = "") -> UnknownNameError:
    """The error for an unknown `kind` (e.g. "suite key", "parameter of truncation") named `name`,
    written at `where` (a file and field, or an option); the caller raises it."""
    names = sorted({str(k) for k in known})
    prefix = f"{where}: " if where else ""
    listing = f" Known: {', '.join(names)}." if names else f" No {kind} is known here."
    return UnknownNameError(f"{prefix}unknown {kind} '{name}'.{did_you_mean(str(name), names)}"
                            f"{listing}")


def check_names(kind: str, given: Iterable[object], known: Iterable[str],
                where: str = "") -> None:
    """Raise for the first name of `given` that is not in `known`."""
    allowed = {str(k) for k in known}
    for name in given:
        if str(name) not in allowed:
            raise unknown_name_error(kind, name, allowed, where)


def split_params(text: str) -> list[str]:
    """A spec's key=value parts, split on commas outside quotes; evaluator and generator specs."""
    parts, current, quote = [], "", ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current += ch
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            parts.append(current)
            current = ""
        else:
            current += ch
    if quote:  # the rest of the spec would silently become one value, the quote dropped
        raise ValueError(f"spec '{text}': a {quote} opens a quoted value that is never closed")
    if current:
        parts.append(current)
    return [p for p in parts if p.strip()]


def coerce_param(value: str) -> Any:
    """A spec value as bool, int, float or text, as evaluator and generator specs read it."""
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value
