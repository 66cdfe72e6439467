"""The settings of a stress run, declared once for every face.

`RunSettings` has one field per key of a `--config` YAML file; the same names are `evalstress
run`'s options and the keyword arguments of `evalstress.stress()`. `quickstart`,
`criteria-levels` and the pytest plugin fill the same model. A field's declaration says
everything about its setting: its type, its default, how a given value is read (a file name
becomes a Path), how it is checked, and whether the suite can set it. The keys a config file
may use are the fields' names: any other key is refused with a did-you-mean.

Precedence, per setting (`RunSettings.resolve`, then `RunSettings.with_suite`):

    flag > --config file > the suite's own value (generator, verifier, max_reasks, shots,
    max_chars) > default

A flag (or keyword argument) counts as given unless it is absent or empty ("", no repeated
option, or a switch left off). A config value
counts when its key is present, even as null, except for the settings declared
`empty_is_unset` (suite, evaluators, generator, verifier), where an empty value ("", [], null)
leaves the choice to the next layer. A file setting (data, out, cache_dir, variants,
perturbation_prompts) given as null is no file: the default's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from evalstress.analyses.registry import known_options
from evalstress.core.extras import MissingExtra, check_evaluator
from evalstress.core.params import (
    BOOLEAN,
    ParamKind,
    ParamValueError,
    either,
    one_of,
    text,
    whole_number,
)
from evalstress.core.strict import UnknownNameError, check_names
from evalstress.core.text import max_chars_option
from evalstress.core.userfile import DataError, parse_user_yaml, read_user_text
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING, check_max_missing
from evalstress.evaluators.base import parse_spec
from evalstress.suites import PROTOCOLS, Suite

#: evaluators of a run that names none (and of quickstart)
LEXICAL_DEFAULT = ["bleu", "chrf", "rouge"]

#: the run directory of a run without a data file (it runs on the built-in corpus)
BUILTIN_RUN_DIR = Path("runs/builtin-corpus")

#: where a setting's value came from
Source = Literal["flag", "config", "suite", "default"]

#: the default bound on the variants one run plans: 50 million is a 100,000-example run of
#: the largest built-in suite with room to spare, and stops a typo (a grid or seed count off
#: by powers of ten) before it fills the disk
DEFAULT_MAX_UNITS = 50_000_000

#: a file or folder named in a setting (a flag gives a Path, a config file a text)
PATH = ParamKind("a file or folder path", lambda v: _path(v))

#: where a run's chunks go: this machine, or a Ray cluster
BACKENDS = ("local", "ray")
#: the faces whose settings are command-line flags (errors name --FLAG, not name=)
COMMANDS = ("run", "quickstart", "criteria-levels")


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


def _names(what: str) -> ParamKind:
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


def _evaluator_extras(specs: Any, where: str) -> Any:
    """Name the extra a spec needs before anything is read (specs are checked fully later)."""

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


def _number_from_zero(value: Any, where: str) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not 0 <= value < float("inf")):
        raise SettingsError(f"{where} must be a number >= 0, got {value!r}")
    return value


def _fraction(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(f"{where} {value!r}: give a fraction between 0 and 1")
    try:
        return check_max_missing(float(value), where)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _analysis_options(value: Any, where: str) -> Any:

    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SettingsError(f"{where} must be a mapping of analysis options, e.g. "
                            f"{{rel_tol: 0.02}}, got {value!r}")
    check_names("option", value, known_options(), where)  # UnknownNameError: a did-you-mean
    return dict(value)


def _text_length(value: Any, where: str) -> Any:

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
        metadata=setting(kind=_names("evaluator specs"), empty_is_unset=True,
                         check=_evaluator_extras, flag="--evaluator"))
    #: None: the built-in corpus
    data: Path | None = field(default=None, metadata=setting(kind=PATH, convert=Path))
    map: list[str] | None = field(default=None, metadata=setting(kind=FIELD_MAP, flag="--map",
                                                                 of_data=True))
    task: str | None = field(default=None, metadata=setting(kind=text(), of_data=True))
    #: None: blindspot, or under the paper protocol the paper-TASK suite of the data's task
    suite: str | None = field(default=None, metadata=setting(kind=PATH, convert=str,
                                                             empty_is_unset=True))
    perturbations: list[str] | None = field(default=None, metadata=setting(
        kind=_names("perturbation names"), flag="--perturbation"))
    #: None: the suite's seeds
    seeds: int | list[int] | None = field(default=None, metadata=setting(kind=SEEDS))
    #: None: runs/<the data file's stem> (`run_dir`)
    out: Path | None = field(default=None, metadata=setting(kind=PATH, convert=Path))
    limit: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
    #: None: the suite's rel_tol option, else its analyses' default
    rel_tol: float | None = field(default=None,
                                  metadata=setting(check=_number_from_zero, checks="config"))
    shard: str | None = field(default=None, metadata=setting(kind=text()))
    cache_dir: Path | None = field(default=None, metadata=setting(kind=PATH, convert=Path))
    protocol: str | None = field(default=None, metadata=setting(kind=one_of(PROTOCOLS)))
    generator: str | dict[str, Any] | None = field(default=None, metadata=setting(
        kind=SPEC, empty_is_unset=True, from_suite=lambda suite: suite.generator))
    verifier: str | dict[str, Any] | None = field(default=None, metadata=setting(
        kind=SPEC, empty_is_unset=True, from_suite=lambda suite: suite.generation.get("verifier")))
    #: keep the LLM-written variants nothing verified (their attack's checks measured below
    #: the precision floor, no verifier) in the discernment and criteria-confusion verdicts
    include_unverified: bool = field(default=False, metadata=setting(kind=BOOLEAN,
                                                                     empty_is_unset=True))
    #: None: the generation stage's default (2 re-asks)
    max_reasks: int | None = field(default=None, metadata=setting(
        kind=whole_number(0), from_suite=lambda suite: suite.generation.get("max_reasks")))
    #: None: every demonstration
    shots: int | None = field(default=None, metadata=setting(
        kind=whole_number(0), from_suite=lambda suite: suite.generation.get("shots")))
    perturbation_prompts: Path | None = field(default=None, metadata=setting(kind=PATH,
                                                                             convert=Path))
    variants: Path | None = field(default=None, metadata=setting(kind=PATH, convert=Path))
    variant_map: list[str] | None = field(default=None, metadata=setting(kind=FIELD_MAP))
    #: None: 100000 characters (0: no limit)
    max_chars: int | None = field(default=None, metadata=setting(
        check=_text_length, from_suite=lambda suite: suite.options.get("max_chars")))
    max_missing: float = field(default=DEFAULT_MAX_MISSING, metadata=setting(
        check=_fraction, after_suite=True))
    #: the most variants a run may plan (examples x perturbation severities x seeds); a
    #: bigger run is refused before any work until this is raised
    max_units: int = field(default=DEFAULT_MAX_UNITS, metadata=setting(
        kind=whole_number(1), empty_is_unset=True))
    #: analysis options on top of the suite's (e.g. {aspect_map: {...}}); rel_tol wins over
    #: an options rel_tol
    options: dict[str, Any] | None = field(default=None, metadata=setting(
        kind=OPTIONS, check=_analysis_options))
    # -- how the run executes: the same scores whatever they say --------------------------
    #: processes for rule perturbations and CPU-bound metrics; 0: every core
    workers: int = field(default=0, metadata=setting(kind=whole_number(0), empty_is_unset=True))
    backend: str = field(default="local", metadata=setting(kind=one_of(BACKENDS),
                                                           empty_is_unset=True))
    ray_address: str | None = field(default=None, metadata=setting(kind=text()))
    #: None: fitted to the data and the workers (`engine.pipeline.default_chunk_size`)
    chunk_size: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
    sequential: bool = field(default=False, metadata=setting(kind=BOOLEAN,
                                                         empty_is_unset=True))
    no_cache: bool = field(default=False, metadata=setting(kind=BOOLEAN,
                                                         empty_is_unset=True))
    quiet: bool = field(default=False, metadata=setting(kind=BOOLEAN,
                                                         empty_is_unset=True))
    dry_run: bool = field(default=False, metadata=setting(
        kind=BOOLEAN, flag="--dry-run", empty_is_unset=True))
    force: bool = field(default=False, metadata=setting(kind=BOOLEAN,
                                                         empty_is_unset=True))

    #: the --config file the values were read from, where each value came from, and the face
    #: that gave the flags (a command's name, or a function such as "stress")
    config: Path | None = field(default=None, compare=False)
    sources: Mapping[str, Source] = field(default_factory=dict, compare=False)
    face: str = field(default="run", compare=False)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The settings' names: the keys a config file may use."""
        return tuple(f.name for f in _setting_fields(cls))

    @classmethod
    def resolve(cls, flags: Mapping[str, Any], config: Path | None = None, *,
                face: str = "run") -> RunSettings:
        """Each setting from its flag, else the `config` file, else its default; then checked.
        `flags` maps setting names to the face's values (None: not given); `face` names the
        command or function they came from. Settings the suite can give are taken from the
        suite and checked by `with_suite`."""
        stray = set(flags) - set(cls.keys())
        if stray:
            raise TypeError(f"not settings of a run: {', '.join(sorted(stray))}")
        file_values = read_config(config, cls.keys())
        values: dict[str, Any] = {}
        sources: dict[str, Source] = {}
        for f, how in _settings(cls):
            if _flag_given(flags.get(f.name)):
                value, sources[f.name] = flags[f.name], "flag"
            elif f.name in file_values and not (how.empty_is_unset
                                                and _empty(file_values[f.name])):
                value, sources[f.name] = file_values[f.name], "config"
            else:
                value, sources[f.name] = _default(f), "default"
            if sources[f.name] != "default" and value is not None:
                if how.kind is not None and not _with_suite(how):  # else: with the suite
                    value = _of_kind(how.kind, value, f.name, sources[f.name], config, face)
                if how.convert is not None:
                    value = how.convert(value)
            values[f.name] = value
        settings = cls(**values, config=config, sources=sources, face=face)
        for f, how in _settings(cls):
            if how.of_data and face in COMMANDS and values["data"] is None \
                    and sources[f.name] != "default":
                settings.refuse_without_data(f.name)
            if how.check is None or _with_suite(how):
                continue
            if how.checks == "config":
                if f.name in file_values:
                    how.check(file_values[f.name], settings.where(f.name, "config"))
            else:
                values[f.name] = how.check(values[f.name], settings.where(f.name))
        settings = replace(settings, **values)
        settings.check_together()
        return settings

    def check_together(self) -> None:
        """Settings that cannot go together, refused before anything is read."""
        if self.backend == "ray" and self.sequential:
            raise SettingsError(f"{self.where('sequential')} decides batch by batch on one "
                                f"machine: use {self.where('backend')} local")
        if self.variant_map and self.variants is None:
            given = " ".join(map(str, self.variant_map))
            raise SettingsError(f"{self.where('variant_map')} {given} maps the fields of a "
                                "--variants file: give one, or leave it out")
        if self.ray_address and self.backend != "ray":
            raise SettingsError(f"{self.where('ray_address')} {self.ray_address}: add "
                                f"{self.where('backend')} ray")

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
            source = sources.get(f.name, "default")
            if how.kind is not None and value is not None and source != "default":
                value = _of_kind(how.kind, value, f.name, source, self.config, self.face,
                                 suite=suite.source)
            if how.check is not None:
                value = how.check(value, self.where(f.name))
            values[f.name] = value
        return replace(self, **values, sources=sources)

    def refuse_without_data(self, name: str) -> None:
        """A setting that reads the data (a field mapping, a default task) given to a run on
        the built-in corpus: an error, not a setting silently ignored."""
        raise SettingsError(f"{self.where(name)} applies to a data file: give one "
                            f"({'evalstress run DATA.jsonl' if self.face in COMMANDS else 'data='}"
                            "), or leave it out to run on the built-in corpus")

    def data_settings(self) -> list[str]:
        """The settings given that read the data (map, task)."""
        return [f.name for f, how in _settings(type(self))
                if how.of_data and self.sources.get(f.name, "default") != "default"]

    def given(self, name: str) -> bool:
        """Whether a flag or the config file gave the setting."""
        return self.sources.get(name) in ("flag", "config")

    def where(self, name: str, source: Source | None = None) -> str:
        """Where the setting came from, for an error: '--seeds', 'FILE: field 'seeds'' or
        'stress(seeds=...)'."""
        if (source or self.sources.get(name)) == "config":
            return f"{self.config}: field '{name}'"
        if self.face not in COMMANDS:
            return f"{self.face}({name}=...)"
        how = next(h for f, h in _settings(type(self)) if f.name == name)
        return how.flag or "--" + name.replace("_", "-")

    def run_dir(self) -> Path | None:
        """--out, else runs/<the data file's stem> (runs/builtin-corpus without one); from
        Python (`stress()`) without `out`, None: the run stays in a temporary folder."""
        if self.out is not None:
            return self.out
        if self.face not in COMMANDS:
            return None
        if self.data is None:
            return BUILTIN_RUN_DIR
        return Path(f"runs/{self.data.stem}")


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


def _of_kind(kind: ParamKind, value: Any, name: str, source: Source, config: Path | None,
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


def _setting_fields(cls: type[RunSettings]) -> Iterator[Field[Any]]:
    return (f for f in fields(cls) if "setting" in f.metadata)


def _settings(cls: type[RunSettings]) -> Iterator[tuple[Field[Any], Setting]]:
    return ((f, f.metadata["setting"]) for f in _setting_fields(cls))


def _with_suite(how: Setting) -> bool:
    """Whether `with_suite` (not `resolve`) takes and checks the setting."""
    return how.from_suite is not None or how.after_suite


def _default(f: Field[Any]) -> Any:
    return f.default_factory() if callable(f.default_factory) else f.default


def _empty(value: Any) -> bool:
    """A config value that leaves the choice to the next layer: null, "", [] or {} (never a
    0 or a false, which say something: `max_units: 0` is an error, not the default)."""
    return value is None or (isinstance(value, str | list | tuple | dict) and not value)


def _flag_given(value: Any) -> bool:
    """An option left out is None; a repeatable option left out may be an empty list, and a
    switch left off is False (so a config file's `quiet: true` holds)."""
    return value is not None and value is not False and not (
        isinstance(value, str | list | tuple) and not value)
