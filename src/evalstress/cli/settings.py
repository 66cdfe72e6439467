"""The settings of `evalstress run`, declared once.

`RunSettings` has one field per key of a `--config` YAML file; the same names are the command's
options. A field's declaration says everything about its setting: its type, its default, how a
given value is read (a file name becomes a Path), how it is checked, and whether the suite can
set it. The keys a config file may use are the fields' names: any other key is refused with a
did-you-mean.

Precedence, per setting (`RunSettings.resolve`, then `RunSettings.with_suite`):

    flag > --config file > the suite's own value (generator, verifier, max_reasks, shots,
    max_chars) > default

A flag counts as given unless it is absent or empty (""; no repeated option). A config value
counts when its key is present, even as null, except for the settings declared
`empty_is_unset` (suite, evaluators, generator, verifier), where an empty value ("", [], null)
leaves the choice to the next layer. A file setting (data, out, cache_dir, variants,
perturbation_prompts) given as null is no file: the default's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from evalstress.core.userfile import DataError, read_user_text
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING, check_max_missing

if TYPE_CHECKING:
    from evalstress.suites import Suite

#: evaluators of a run that names none (and of quickstart)
LEXICAL_DEFAULT = ["bleu", "chrf", "rouge"]

#: the run directory of a run without a data file (it runs on the built-in corpus)
BUILTIN_RUN_DIR = Path("runs/builtin-corpus")

#: where a setting's value came from
Source = Literal["flag", "config", "suite", "default"]


class SettingsError(ValueError):
    """A setting that cannot be used; the message is the command's whole error line."""


@dataclass(frozen=True)
class Setting:
    """How one setting of `RunSettings` is taken (the metadata of its field)."""

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


def setting(**how: Any) -> dict[str, Setting]:
    """The metadata of a field of `RunSettings`: how its setting is taken."""
    return {"setting": Setting(**how)}


def _evaluator_extras(specs: Any, where: str) -> Any:
    """Name the extra a spec needs before anything is read (specs are checked fully later)."""
    from evalstress.core.extras import MissingExtra, check_evaluator
    from evalstress.evaluators.base import parse_spec

    for spec in list(specs):
        try:
            name, params = parse_spec(spec)
        except (ValueError, KeyError):
            continue  # building the evaluators reports it
        try:
            check_evaluator(name, params)
        except MissingExtra as exc:
            raise SettingsError(str(exc)) from None
    return specs


def _whole_number_from_one(value: Any, where: str) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise SettingsError(f"{where} must be a whole number >= 1, got {value!r}")
    return value


def _number_from_zero(value: Any, where: str) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not 0 <= value < float("inf")):
        raise SettingsError(f"{where} must be a number >= 0, got {value!r}")
    return value


def _fraction(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(f"max_missing {value!r}: give a fraction between 0 and 1")
    try:
        return check_max_missing(float(value))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _text_length(value: Any, where: str) -> Any:
    from evalstress.core.text import max_chars_option

    if value is not None:
        try:
            max_chars_option({"max_chars": value})
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
    return value


@dataclass(frozen=True)
class RunSettings:
    """Every setting of `evalstress run` that a flag or a `--config` file can give.

    Values are checked in the order of the fields (the evaluators' extras before the data)."""

    evaluators: list[str] = field(
        default_factory=lambda: list(LEXICAL_DEFAULT),
        metadata=setting(empty_is_unset=True, check=_evaluator_extras, flag="--evaluator"))
    #: None: the built-in corpus
    data: Path | None = field(default=None, metadata=setting(convert=Path))
    map: list[str] | None = field(default=None, metadata=setting(flag="--map", of_data=True))
    task: str | None = field(default=None, metadata=setting(of_data=True))
    #: None: blindspot, or under the paper protocol the paper-TASK suite of the data's task
    suite: str | None = field(default=None, metadata=setting(empty_is_unset=True))
    perturbations: list[str] | None = field(default=None,
                                            metadata=setting(flag="--perturbation"))
    #: None: the suite's seeds
    seeds: int | list[int] | None = field(default=None, metadata=setting())
    #: None: runs/<the data file's stem> (`run_dir`)
    out: Path | None = field(default=None, metadata=setting(convert=Path))
    limit: int | None = field(default=None, metadata=setting(check=_whole_number_from_one))
    #: None: the suite's rel_tol option, else its analyses' default
    rel_tol: float | None = field(default=None,
                                  metadata=setting(check=_number_from_zero, checks="config"))
    shard: str | None = field(default=None, metadata=setting())
    cache_dir: Path | None = field(default=None, metadata=setting(convert=Path))
    protocol: str | None = field(default=None, metadata=setting())
    generator: str | dict[str, Any] | None = field(default=None, metadata=setting(
        empty_is_unset=True, from_suite=lambda suite: suite.generator))
    verifier: str | dict[str, Any] | None = field(default=None, metadata=setting(
        empty_is_unset=True, from_suite=lambda suite: suite.generation.get("verifier")))
    #: None: the generation stage's default (2 re-asks)
    max_reasks: int | None = field(default=None, metadata=setting(
        from_suite=lambda suite: suite.generation.get("max_reasks")))
    #: None: every demonstration
    shots: int | None = field(default=None, metadata=setting(
        from_suite=lambda suite: suite.generation.get("shots")))
    perturbation_prompts: Path | None = field(default=None, metadata=setting(convert=Path))
    variants: Path | None = field(default=None, metadata=setting(convert=Path))
    variant_map: list[str] | None = field(default=None, metadata=setting())
    #: None: 100000 characters (0: no limit)
    max_chars: int | None = field(default=None, metadata=setting(
        check=_text_length, from_suite=lambda suite: suite.options.get("max_chars")))
    max_missing: float = field(default=DEFAULT_MAX_MISSING,
                               metadata=setting(check=_fraction, after_suite=True))

    #: the --config file the values were read from, and where each value came from
    config: Path | None = field(default=None, compare=False)
    sources: Mapping[str, Source] = field(default_factory=dict, compare=False)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The settings' names: the keys a config file may use."""
        return tuple(f.name for f in _setting_fields(cls))

    @classmethod
    def resolve(cls, flags: Mapping[str, Any], config: Path | None) -> RunSettings:
        """Each setting from its flag, else the `config` file, else its default; then checked.
        `flags` maps setting names to the command line's values (None: not given). Settings the
        suite can give are taken from the suite and checked by `with_suite`."""
        stray = set(flags) - set(cls.keys())
        if stray:
            raise TypeError(f"not settings of run: {', '.join(sorted(stray))}")
        file_values = read_config(config, cls.keys())
        values: dict[str, Any] = {}
        sources: dict[str, Source] = {}
        for f, how in _settings(cls):
            if _flag_given(flags.get(f.name)):
                value, sources[f.name] = flags[f.name], "flag"
            elif f.name in file_values and not (how.empty_is_unset and not file_values[f.name]):
                value, sources[f.name] = file_values[f.name], "config"
            else:
                value, sources[f.name] = _default(f), "default"
            if how.convert is not None and sources[f.name] != "default" and value is not None:
                value = how.convert(value)
            values[f.name] = value
        settings = cls(**values, config=config, sources=sources)
        for f, how in _settings(cls):
            if how.of_data and values["data"] is None and sources[f.name] != "default":
                raise SettingsError(f"{settings.where(f.name)} applies to a data file: give one "
                                    "(evalstress run DATA.jsonl), or leave it out to run on "
                                    "the built-in corpus")
            if how.check is None or _with_suite(how):
                continue
            if how.checks == "config":
                if f.name in file_values:
                    how.check(file_values[f.name], settings.where(f.name, "config"))
            else:
                values[f.name] = how.check(values[f.name], settings.where(f.name))
        return replace(settings, **values)

    def with_suite(self, suite: Suite) -> RunSettings:
        """The settings a suite can give, taken from `suite` where neither a flag nor the config
        file gave them, then checked."""
        values: dict[str, Any] = {}
        sources = dict(self.sources)
        for f, how in _settings(type(self)):
            if not _with_suite(how):
                continue
            value = getattr(self, f.name)
            if how.from_suite is not None and sources.get(f.name, "default") == "default":
                own = how.from_suite(suite)
                if own is not None:
                    value, sources[f.name] = own, "suite"
            if how.check is not None:
                value = how.check(value, self.where(f.name))
            values[f.name] = value
        return replace(self, **values, sources=sources)

    def given(self, name: str) -> bool:
        """Whether a flag or the config file gave the setting."""
        return self.sources.get(name) in ("flag", "config")

    def where(self, name: str, source: Source | None = None) -> str:
        """Where the setting came from, for an error: '--seeds' or 'FILE: field 'seeds''."""
        if (source or self.sources.get(name)) == "config":
            return f"{self.config}: field '{name}'"
        how = next(h for f, h in _settings(type(self)) if f.name == name)
        return how.flag or "--" + name.replace("_", "-")

    def run_dir(self) -> Path:
        """--out, else runs/<the data file's stem> (runs/builtin-corpus without one)."""
        if self.out is not None:
            return self.out
        if self.data is None:
            return BUILTIN_RUN_DIR
        return Path(f"runs/{self.data.stem}")


def read_config(path: Path | None, known: tuple[str, ...]) -> dict[str, Any]:
    """The mapping of a --config YAML file (empty without one); a key not in `known` is an
    error that suggests the nearest known key."""
    if path is None:
        return {}
    try:
        data = yaml.safe_load(read_user_text(path, "a config")) or {}
    except DataError as exc:  # missing, a folder, not UTF-8 (with its line and byte)
        raise SettingsError(str(exc)) from None
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError(f"{path}: cannot read the config ({exc})") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the config must be a mapping of option names to values")
    from evalstress.core.strict import UnknownNameError, check_names

    try:
        check_names("config field", data, known, str(path))
    except UnknownNameError as exc:
        raise SettingsError(str(exc)) from None
    return data


def _setting_fields(cls: type[RunSettings]) -> Iterator[Field[Any]]:
    return (f for f in fields(cls) if "setting" in f.metadata)


def _settings(cls: type[RunSettings]) -> Iterator[tuple[Field[Any], Setting]]:
    return ((f, f.metadata["setting"]) for f in _setting_fields(cls))


def _with_suite(how: Setting) -> bool:
    """Whether `with_suite` (not `resolve`) takes and checks the setting."""
    return how.from_suite is not None or how.after_suite


def _default(f: Field[Any]) -> Any:
    return f.default_factory() if callable(f.default_factory) else f.default


def _flag_given(value: Any) -> bool:
    """An option left out is None; a repeatable option left out may be an empty list."""
    return value is not None and not (isinstance(value, str | list | tuple) and not value)
