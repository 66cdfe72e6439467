"""How a command's settings are declared and resolved, whatever the command: each setting is a
field of a frozen dataclass (a subclass of `Settings`) whose metadata (`setting(...)`) says its
kind, how a given value is read and checked, and where it may come from.

Precedence, per setting (`Settings.resolve`):

    flag > --config file > default

(`RunSettings` adds the suite's own value between the config file and the default.) A field
named with a trailing underscore (`lambda_`) has the key without it (`lambda`): the key is the
flag's name, the config file's field and the keyword of `evalstress.stress()`. A config key that
is no setting is refused with a did-you-mean.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml

from evalstress.core.params import (
    ParamKind,
    ParamValueError,
    either,
    text,
    whole_number,
)
from evalstress.core.strict import UnknownNameError, check_names
from evalstress.core.userfile import DataError, parse_user_yaml, read_user_text
from evalstress.suites import Suite

#: where a setting's value came from
Source = Literal["flag", "config", "suite", "default"]

#: a file or folder named in a setting (a flag gives a Path, a config file a text)
PATH = ParamKind("a file or folder path", lambda v: _path(v))

#: the faces whose settings are command-line flags (errors name --FLAG, not name=)
COMMANDS = ("run", "quickstart", "criteria-levels", "card", "attack", "self-bias",
            "correlate")


class SettingsError(ValueError):
    """A setting that cannot be used; the message is the command's whole error line."""


@dataclass(frozen=True)
class Setting:
    """How one setting of `RunSettings` is taken (the metadata of its field)."""

    #: the kind of value a flag, keyword or config value must be (checked before `convert`;
    #: null stays null): a wrong type is an error naming the setting, never a crash later
    kind: ParamKind | None = None
    #: applied to a value that is given (not to the default, not to null): e.g. Path
    convert: Callable[[Any], Any] | None = None
    #: (value, where) -> the value to use, or SettingsError; `where` names the flag or the file
    #: and field the value came from
    check: Callable[[Any, str], Any] | None = None
    #: what `check` looks at: the value the run uses ("used"), or the config file's value even
    #: when a flag overrides it ("config"; the flag's own option checks the flag)
    checks: Literal["used", "config"] = "used"
    #: an empty config value ("", [], null) leaves the choice to the suite or the default
    empty_is_unset: bool = False
    #: the suite's own value, between the config file and the default; such a setting is
    #: checked once the suite is known (`with_suite`)
    from_suite: Callable[[Suite], Any] | None = None
    #: checked once the suite is known although the suite cannot give it: its error comes
    #: after those of the data file and the suite
    after_suite: bool = False
    #: the setting reads the data file (field mappings, a default task): refused in a run
    #: without one, which uses the built-in corpus
    of_data: bool = False
    #: the option's name where it is not --NAME (in error messages)
    flag: str | None = None


def names_kind(what: str) -> ParamKind:
    """A list of names or specs (one alone is a one-item list); a spec may be a mapping."""
    expects = f"a list of {what}, e.g. [a, b] (one alone may be written bare)"

    def parse(value: Any) -> list[Any]:
        items = [value] if isinstance(value, str | Mapping) else value
        if not isinstance(items, list | tuple) or not all(
                (isinstance(i, str) and i.strip()) or isinstance(i, Mapping) for i in items):
            raise ParamValueError(f"expected {expects}")
        return list(items)

    return ParamKind(expects, parse)


def _field_map(value: Any) -> Any:
    """A field mapping: FIELD=NAME texts, or a mapping of fields to a field name (or names)."""
    if isinstance(value, str):
        value = [value]
    pairs_ok = isinstance(value, list | tuple) and all(isinstance(p, str) for p in value)
    mapping_ok = isinstance(value, Mapping) and all(
        isinstance(k, str) and (isinstance(v, str) or (isinstance(v, list | tuple) and all(
            isinstance(x, str) for x in v))) for k, v in value.items())
    if not (pairs_ok or mapping_ok or type(value).__name__ == "FieldMap"):
        raise ParamValueError("expected field mappings such as [hypothesis=highlight] or "
                              "{hypothesis: highlight}")
    if isinstance(value, Mapping):  # {references: [a, b]} is references=a,b
        return {k: v if isinstance(v, str) else ",".join(v) for k, v in value.items()}
    return list(value) if isinstance(value, tuple) else value


FIELD_MAP = ParamKind("field mappings such as [hypothesis=highlight]", _field_map)
SPEC = either(text(), ParamKind("a mapping of parameters",
                                lambda v: dict(v) if isinstance(v, Mapping)
                                else _raise("expected a mapping of parameters")))
SEEDS = either(whole_number(1), ParamKind("a list of whole numbers >= 0",
                                          lambda v: list(v) if isinstance(v, list | tuple)
                                          and v and all(isinstance(x, int)
                                                        and not isinstance(x, bool)
                                                        for x in v)
                                          else _raise("expected a list of seeds")))
OPTIONS = ParamKind("a mapping of analysis options",
                    lambda v: dict(v) if isinstance(v, Mapping)
                    else _raise("expected a mapping of analysis options"))


def _path(value: Any) -> Any:
    """A path as given (text, or a Path from a flag); no part longer than a file system
    allows (255 bytes), which would fail later as an OSError rather than an input error."""
    if not (isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip())):
        raise ParamValueError("expected a file or folder path")
    if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in Path(value).parts):
        raise ParamValueError("expected a file or folder path (a part of it is longer than "
                              "the 255 bytes a file system allows)")
    return value


def _raise(message: str) -> Any:
    raise ParamValueError(message)


def setting(**how: Any) -> dict[str, Setting]:
    """The metadata of a field of `RunSettings`: how its setting is taken."""
    return {"setting": Setting(**how)}


@dataclass(frozen=True)
class Settings:
    """The settings of one command: subclasses declare one field per setting (`setting(...)`
    metadata); these three fields record where the values came from."""

    #: the --config file the values were read from, where each value came from (by key), and
    #: the face that gave the flags (a command's name, or a function such as "stress")
    config: Path | None = field(default=None, compare=False)
    sources: Mapping[str, Source] = field(default_factory=dict, compare=False)
    face: str = field(default="run", compare=False)

    #: the face whose flags `resolve` takes unless told another
    FACE: ClassVar[str] = "run"

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The settings' names: the keys a config file may use."""
        return tuple(key for key, _, _ in _settings(cls))

    @classmethod
    def resolve(cls, flags: Mapping[str, Any], config: Path | None = None, *,
                face: str | None = None) -> Any:
        """Each setting from its flag, else the `config` file, else its default; then checked.
        `flags` maps setting keys to the face's values (None: not given); `face` names the
        command or function they came from. Settings the suite can give are taken from the
        suite and checked by `RunSettings.with_suite`."""
        stray = set(flags) - set(cls.keys())
        if stray:
            raise TypeError(f"not settings of {cls.FACE}: {', '.join(sorted(stray))}")
        face = face or cls.FACE
        file_values = read_config(config, cls.keys())
        values: dict[str, Any] = {}
        sources: dict[str, Source] = {}
        for key, f, how in _settings(cls):
            if _flag_given(flags.get(key), _default(f)):
                value, sources[key] = flags[key], "flag"
            elif key in file_values and not (how.empty_is_unset and _empty(file_values[key])):
                value, sources[key] = file_values[key], "config"
            else:
                value, sources[key] = _default(f), "default"
            if sources[key] != "default" and value is not None:
                if how.kind is not None and not with_suite(how):  # else: with the suite
                    value = of_kind(how.kind, value, key, sources[key], config, face)
                if how.convert is not None:
                    value = how.convert(value)
            values[f.name] = value
        settings = cls(**values, config=config, sources=sources, face=face)
        for key, f, how in _settings(cls):
            if how.of_data and face in COMMANDS and values.get("data") is None \
                    and sources[key] != "default":
                settings.refuse_without_data(key)
            if how.check is None or with_suite(how):
                continue
            if how.checks == "config":
                if key in file_values:
                    how.check(file_values[key], settings.where(key, "config"))
            else:
                values[f.name] = how.check(values[f.name], settings.where(key))
        settings = replace(settings, **values)
        settings.check_together()
        return settings

    def check_together(self) -> None:
        """Settings that cannot go together, refused before anything is read (none here)."""

    def refuse_without_data(self, key: str) -> None:
        """A setting that reads the data (a field mapping, a default task) given to a run on
        the built-in corpus: an error, not a setting silently ignored."""
        raise SettingsError(f"{self.where(key)} applies to a data file: give one "
                            f"({'evalstress run DATA.jsonl' if self.face in COMMANDS else 'data='}"
                            "), or leave it out to run on the built-in corpus")

    def given(self, key: str) -> bool:
        """Whether a flag or the config file gave the setting."""
        return self.sources.get(key) in ("flag", "config")

    def where(self, key: str, source: Source | None = None) -> str:
        """Where the setting came from, for an error: '--seeds', 'FILE: field 'seeds'' or
        'stress(seeds=...)'."""
        if (source or self.sources.get(key)) == "config":
            return f"{self.config}: field '{key}'"
        if self.face not in COMMANDS:
            return f"{self.face}({key}=...)"
        how = next(h for k, _, h in _settings(type(self)) if k == key)
        return how.flag or "--" + key.replace("_", "-")


def read_config(path: Path | None, known: tuple[str, ...]) -> dict[str, Any]:
    """The mapping of a --config YAML file (empty without one); a key not in `known` is an
    error that suggests the nearest known key."""
    if path is None:
        return {}
    try:
        data = parse_user_yaml(read_user_text(path, "a config")) or {}
    except DataError as exc:  # missing, a folder, not UTF-8 (with its line and byte)
        raise SettingsError(str(exc)) from None
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError(f"{path}: cannot read the config ({exc})") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the config must be a mapping of option names to values")

    try:
        check_names("config field", data, known, str(path))
    except UnknownNameError as exc:
        raise SettingsError(str(exc)) from None
    return data


def of_kind(kind: ParamKind, value: Any, name: str, source: Source, config: Path | None,
             face: str, suite: str = "suite") -> Any:
    """`value` as its setting's kind takes it, or a SettingsError naming the setting where it
    was given."""
    try:
        return kind.parse(value)
    except ParamValueError as exc:
        if source == "suite":
            where = f"{suite}: {name}"
        elif source == "config":
            where = f"{config}: field '{name}'"
        elif face in COMMANDS:
            where = "--" + name.replace("_", "-")
        else:
            where = f"{face}({name}=...)"
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise SettingsError(f"{where}: {exc} (got {shown})") from None


def settings_of(cls: type[Settings]) -> Iterator[tuple[Field[Any], Setting]]:
    """Each field of `cls` that is a setting, with how it is taken."""
    return ((f, f.metadata["setting"]) for f in fields(cls) if "setting" in f.metadata)


def _settings(cls: type[Settings]) -> Iterator[tuple[str, Field[Any], Setting]]:
    """(key, field, how) of each setting: the key is the field's name without a trailing _."""
    return ((f.name.rstrip("_"), f, how) for f, how in settings_of(cls))


def with_suite(how: Setting) -> bool:
    """Whether `with_suite` (not `resolve`) takes and checks the setting."""
    return how.from_suite is not None or how.after_suite


def _default(f: Field[Any]) -> Any:
    return f.default_factory() if callable(f.default_factory) else f.default


def _empty(value: Any) -> bool:
    """A config value that leaves the choice to the next layer: null, "", [] or {} (never a
    0 or a false, which say something: `max_units: 0` is an error, not the default)."""
    return value is None or (isinstance(value, str | list | tuple | dict) and not value)


def _flag_given(value: Any, default: Any) -> bool:
    """An option left out is None; a repeatable option left out may be an empty list, and a
    switch left off is False (so a config file's `quiet: true` holds). A false given to a
    setting whose default is None (`--no-rescore-final`) is a choice, not a switch left off."""
    if value is False:
        return default is None
    return value is not None and not (isinstance(value, str | list | tuple) and not value)
