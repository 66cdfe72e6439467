"""The settings of a stress run, declared once for every face (declared and resolved as every
command's settings are: `job.settingsbase`).

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalstress.analyses.registry import known_options
from evalstress.core.extras import MissingExtra, check_evaluator
from evalstress.core.params import (
    BOOLEAN,
    one_of,
    text,
    whole_number,
)
from evalstress.core.strict import check_names
from evalstress.core.text import max_chars_option
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING, check_max_missing
from evalstress.evaluators.base import parse_spec
from evalstress.job.settingsbase import (
    COMMANDS,
    FIELD_MAP,
    OPTIONS,
    PATH,
    SEEDS,
    SPEC,
    Settings,
    SettingsError,
    names_kind,
    of_kind,
    setting,
    settings_of,
    with_suite,
)
from evalstress.suites import PROTOCOLS, Suite

__all__ = ["BACKENDS", "BUILTIN_RUN_DIR", "COMMANDS", "DEFAULT_MAX_UNITS", "LEXICAL_DEFAULT",
           "RunSettings", "SettingsError"]

#: evaluators of a run that names none (and of quickstart)
LEXICAL_DEFAULT = ["bleu", "chrf", "rouge"]

#: the run directory of a run without a data file (it runs on the built-in corpus)
BUILTIN_RUN_DIR = Path("runs/builtin-corpus")
#: the run directory of `evalstress quickstart`
QUICKSTART_RUN_DIR = Path("runs/quickstart")

#: the default bound on the variants one run plans: 50 million is a 100,000-example run of
#: the largest built-in suite with room to spare, and stops a typo (a grid or seed count off
#: by powers of ten) before it fills the disk
DEFAULT_MAX_UNITS = 50_000_000

#: where a run's chunks go: this machine, or a Ray cluster
BACKENDS = ("local", "ray")
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


def fraction(value: Any, where: str) -> float:
    """A share between 0 and 1 (max_missing), checked wherever it was given."""
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


def text_length(value: Any, where: str) -> Any:
    """The longest text a run or a card takes (max_chars), checked as the suite option is."""
    if value is not None:
        try:
            max_chars_option({"max_chars": value})
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
    return value


def check_execution(backend: str, sequential: bool, ray_address: str | None,
                    where: Callable[[str], str] = lambda key: "--" + key.replace("_", "-"),
                    ) -> None:
    """How a run executes, refused where the parts cannot go together: the one check of
    `RunSettings` (where names a flag or a config field) and of a `StressJob` built in
    Python (where names the flag)."""
    if backend not in BACKENDS:
        raise SettingsError(f"{where('backend')} '{backend}': choose {' or '.join(BACKENDS)}")
    if backend == "ray" and sequential:
        raise SettingsError(f"{where('sequential')} decides batch by batch on one machine: "
                            f"use {where('backend')} local")
    if ray_address and backend != "ray":
        raise SettingsError(f"{where('ray_address')} {ray_address}: add {where('backend')} ray")


@dataclass(frozen=True)
class RunSettings(Settings):
    """Every setting of `evalstress run` that a flag or a `--config` file can give.

    Values are checked in the order of the fields (the evaluators' extras before the data)."""

    evaluators: list[str] = field(
        default_factory=lambda: list(LEXICAL_DEFAULT),
        metadata=setting(kind=names_kind("evaluator specs"), empty_is_unset=True,
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
        kind=names_kind("perturbation names"), flag="--perturbation"))
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
        check=text_length, from_suite=lambda suite: suite.options.get("max_chars")))
    max_missing: float = field(default=DEFAULT_MAX_MISSING, metadata=setting(
        check=fraction, after_suite=True))
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

    def check_together(self) -> None:
        """Settings that cannot go together, refused before anything is read."""
        if self.variant_map and self.variants is None:
            given = " ".join(map(str, self.variant_map))
            raise SettingsError(f"{self.where('variant_map')} {given} maps the fields of a "
                                "--variants file: give one, or leave it out")
        check_execution(self.backend, self.sequential, self.ray_address, self.where)

    def with_suite(self, suite: Suite) -> RunSettings:
        """The settings a suite can give, taken from `suite` where neither a flag nor the config
        file gave them, then checked."""
        values: dict[str, Any] = {}
        sources = dict(self.sources)
        for f, how in settings_of(type(self)):
            if not with_suite(how):
                continue
            value = getattr(self, f.name)
            if how.from_suite is not None and sources.get(f.name, "default") == "default":
                own = how.from_suite(suite)
                if own is not None:
                    value, sources[f.name] = own, "suite"
            source = sources.get(f.name, "default")
            if how.kind is not None and value is not None and source != "default":
                value = of_kind(how.kind, value, f.name, source, self.config, self.face,
                                 suite=suite.source)
            if how.check is not None:
                value = how.check(value, self.where(f.name))
            values[f.name] = value
        return replace(self, **values, sources=sources)

    def data_settings(self) -> list[str]:
        """The settings given that read the data (map, task)."""
        return [f.name for f, how in settings_of(type(self))
                if how.of_data and self.sources.get(f.name, "default") != "default"]

    def run_dir(self) -> Path | None:
        """--out, else runs/<the data file's stem> (runs/builtin-corpus without one); from
        Python (`stress()`) without `out`, None: the run stays in a temporary folder."""
        if self.out is not None:
            return self.out
        if self.face not in COMMANDS:
            return None
        if self.face == "quickstart":
            return QUICKSTART_RUN_DIR
        if self.data is None:
            return BUILTIN_RUN_DIR
        return Path(f"runs/{self.data.stem}")


