"""Perturbation protocol, registry and the provenance each variant carries."""

from __future__ import annotations

import hashlib
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from evalstress.core.data import Example
from evalstress.core.params import ParamKind, declare, parse_params
from evalstress.core.registry import Registry
from evalstress.core.strict import UnknownNameError, did_you_mean, unknown_name_error
from evalstress.core.text import ParsedText, TextParser, noise_ratio

Severity = float | int | str
Level = Literal["char", "word", "sentence"]
Method = Literal["rule", "llm", "model"]


@dataclass(frozen=True)
class Skip:
    """A perturbation that cannot apply to this text says why, instead of returning it unchanged."""

    reason: str


@dataclass(frozen=True)
class Variant:
    """A perturbed text with everything needed to reproduce and explain it."""

    example_id: str
    perturbation: str
    severity: Severity
    seed: int
    text: str
    noise_ratio: float
    #: how the text was made when not by a rule: {"method": "llm", "model": ..., "sample": ...}
    #: or {"method": "imported", "file": ..., "line": ...}; written to variants.parquet
    provenance: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def id(self) -> str:
        return f"{self.example_id}|{self.perturbation}|{self.severity}|{self.seed}"

    def diff(self, original: str) -> str:
        """A compact word diff against the original, for reports (bounded on long texts)."""
        from evalstress.core.worddiff import word_diff

        return word_diff(original, self.text)


@dataclass
class PerturbContext:
    """What a perturbation may look at: the example, its parse, and dataset-wide resources.

    The parse comes from a shared TextParser, so a text is parsed once whatever the number of
    perturbations, severities and seeds. `pool` holds the other examples of the dataset (for
    replacement-type perturbations); `resources` holds named shared data (e.g. n-gram tables).
    """

    example: Example
    parser: TextParser
    pool: Sequence[Example] = ()
    resources: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.example.hypothesis

    @property
    def parsed(self) -> ParsedText:
        return self.parser.parse(self.example.hypothesis)


class Perturbation(ABC):
    """A named, seeded transformation of the hypothesis.

    Subclasses declare metadata as class attributes and implement `transform`. `apply` wraps the
    result: an unchanged text becomes a Skip, and a Variant gets its noise ratio.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""  # e.g. fluency, consistency, probe, character
    level: ClassVar[Level] = "word"
    method: ClassVar[Method] = "rule"
    damages: ClassVar[tuple[str, ...]] = ()  # aspects (see criteria) it is expected to hurt
    preserves: ClassVar[tuple[str, ...]] = ()  # aspects it should leave alone
    severity_param: ClassVar[str] = "ratio"
    grid: ClassVar[tuple[Severity, ...]] = (0.1, 0.2, 0.3, 0.4, 0.5)
    description: ClassVar[str] = ""
    swap_type: ClassVar[bool] = False  # halves the noise ratio (paper 002, footnote 7)
    source_papers: ClassVar[tuple[str, ...]] = ()
    #: the published attack this perturbation implements ("000:negation"), which picks its row of
    #: the expectation matrix; empty when it implements none (a bare name never picks a row)
    attack: ClassVar[str] = ""
    #: parameters a suite or spec may set (besides grid and tasks), each with the kind of value
    #: it takes; each class names its own and inherits its bases' (e.g. `rule` from PaperRule);
    #: any other name is an error, and so is a value of the wrong kind
    PARAMS: ClassVar[Mapping[str, ParamKind]] = declare()
    #: names a numerically graded perturbation also takes as a severity (e.g. "paper")
    SEVERITY_NAMES: ClassVar[tuple[str, ...]] = ()
    #: the grid under its paper rule where that rule counts instead of taking a share (a
    #: grid may then go past 1); the paper protocol puts it in place of a grid the suite did
    #: not write
    paper_grid: ClassVar[tuple[Severity, ...]] = ()
    #: its first use builds a dataset-wide resource whose parse a pooled run shares with its
    #: helpers (sentence-replacement's sentence pool): a run's warm-up takes it after the
    #: others, by when the helpers have started
    dataset_wide: ClassVar[bool] = False

    def __init__(self, /, **params: Any):
        self.params = check_params(type(self), params)

    def unmet(self) -> str | None:
        """What this perturbation still needs before it can run (a model path, say), in one
        sentence, or None; a job refuses to start while any of its perturbations says so."""
        return None

    def noise_units(self, ctx: PerturbContext) -> str:
        """How this variant's noise ratio counts units (`evalstress.core.text.UNITS`)."""
        return "words"

    @abstractmethod
    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        """Return the perturbed text, or a Skip saying why the text does not admit this damage."""

    def apply(self, ctx: PerturbContext, severity: Severity, seed: int) -> Variant | Skip:
        rng = random.Random(derive_seed(seed, ctx.example.id, self.name, severity))
        try:
            result = self.transform(ctx, severity, rng)
        except Skipped as skip:
            return Skip(str(skip))
        if isinstance(result, Skip):
            return result
        if result == ctx.text or (not result.strip() and not ctx.text.strip()):
            return Skip("the perturbation left the text unchanged")
        ratio = noise_ratio(ctx.text, result, swap=self.swap_type, units=self.noise_units(ctx))
        return Variant(ctx.example.id, self.name, severity, seed, result, ratio)

    @classmethod
    def info(cls) -> dict[str, Any]:
        return {
            "name": cls.name,
            "family": cls.family,
            "level": cls.level,
            "method": cls.method,
            "damages": list(cls.damages),
            "preserves": list(cls.preserves),
            "severity_param": cls.severity_param,
            "grid": list(cls.grid),
            "description": cls.description,
            "papers": list(cls.source_papers),
            "attack": cls.attack or None,
        }


class Skipped(Exception):
    """Raised inside a transform as a shortcut for returning a Skip."""


def param_kinds(cls: type) -> dict[str, ParamKind | None]:
    """The parameters a perturbation class takes, with their kinds: its own `PARAMS` and those
    of its bases (a class's own declaration wins). A plugin's plain tuple of names declares
    parameters of no kind: any value passes."""
    kinds: dict[str, ParamKind | None] = {}
    for klass in cls.__mro__:
        declared = vars(klass).get("PARAMS", {})
        pairs = declared.items() if isinstance(declared, Mapping) else ((n, None) for n in declared)
        for name, kind in pairs:
            kinds.setdefault(str(name), kind)
    return kinds


def known_params(cls: type) -> tuple[str, ...]:
    """The names of the parameters a perturbation class takes."""
    return tuple(param_kinds(cls))


def check_params(cls: type[Perturbation], params: Mapping[str, Any],
                 where: str = "") -> dict[str, Any]:
    """The parameters with their values parsed (`"7"` -> 7). An unknown name is an error with a
    did-you-mean, a value of the wrong kind an error saying what was expected. The severity
    parameter (e.g. `ratio`) is no parameter but the grid's values: the error says so, and a
    near miss of it (`ratoi`) is suggested as such."""
    kinds = param_kinds(cls)
    known = tuple(kinds)
    severity = cls.severity_param
    grid_hint = f"list the values under grid, e.g. grid: {list(cls.grid[:2])}"
    where = where or f"perturbation '{cls.name}'"
    prefix = f"{where}: "
    for key in params:
        if key in known:
            continue
        if key == severity:
            raise UnknownNameError(f"{prefix}'{severity}' is the severity of {cls.name}, not a "
                                   f"parameter: {grid_hint}")
        if did_you_mean(key, known) or not did_you_mean(key, [severity]):
            raise unknown_name_error("parameter", key, known, where)
        raise UnknownNameError(f"{prefix}unknown parameter '{key}'. Did you mean "
                               f"'{severity}'? It is the severity: {grid_hint}")
    return parse_params(kinds, params, where)


def derive_seed(seed: int, *parts: object) -> int:
    """A stable 64-bit seed from the run seed and the unit of work (never Python's hash())."""
    digest = hashlib.sha256(repr((seed, *parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def sample_count(n: int, ratio: float, rng: random.Random, *, minimum: int = 1) -> int:
    """How many of n units a ratio asks for: round half by the rng, at least `minimum` if n>0."""
    if n <= 0:
        return 0
    exact = n * float(ratio)
    count = int(exact)
    if rng.random() < exact - count:
        count += 1
    return max(minimum, min(n, count))


PERTURBATIONS: Registry[type[Perturbation]] = Registry(
    "perturbation", builtin="evalstress.perturb.builtin", group="evalstress.perturbations",
    listing="evalstress list perturbations")
#: class decorator that registers a perturbation under a name
perturbation = PERTURBATIONS.register


def registry() -> dict[str, type[Perturbation]]:
    return PERTURBATIONS.all()


def get_perturbation_class(name: str) -> type[Perturbation]:
    """The registered class of `name`; an unknown name is an error with a did-you-mean."""
    return PERTURBATIONS.get(name)


def get_perturbation(name: str, **params: Any) -> Perturbation:
    return get_perturbation_class(name)(**params)
