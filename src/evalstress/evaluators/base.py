"""Evaluator protocol and registry: anything that scores texts meets the same interface."""

from __future__ import annotations

import hashlib
import inspect
import json
import typing
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar, Literal

from evalstress.core.params import REQUIRED, Param, settle
from evalstress.core.registry import Registry
from evalstress.core.strict import ConfigError, check_names, coerce_param, split_params


@dataclass(frozen=True)
class ScoreRequest:
    """One text to score with its context. Equal requests share one key and are scored once."""

    text: str
    source: str = ""
    references: tuple[str, ...] = ()
    task: str = "open-ended"

    @cached_property
    def key(self) -> str:
        """sha256 of everything an evaluator may read; computed once per request."""
        payload = json.dumps([self.text, self.source, list(self.references), self.task],
                             ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Score:
    """A value, or a missing value with the reason. Never a silent default."""

    value: float | None
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None

    @classmethod
    def missing(cls, reason: str, **extra: Any) -> Score:
        return cls(None, reason, extra)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value}
        if self.reason:
            out["reason"] = self.reason
        if self.extra:
            out["extra"] = dict(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Score:
        return cls(data.get("value"), data.get("reason"), data.get("extra") or {})


#: Per request, the score of each aspect the evaluator reports.
ScoreRow = dict[str, Score]


class Evaluator(ABC):
    """Scores batches of requests on one or more aspects.

    `level` is "segment" for per-text scores or "corpus" for distribution-level scores (MAUVE),
    which the runner calls once per set of texts. `signature()` names everything that changes the
    numbers; it keys the score cache and goes into every result.

    A built-in evaluator declares its parameters in `PARAMS` (`core.params.Param`: kind,
    default, help, whether it enters the signature, its abbreviation in `short_signature`) and
    its constructor takes them as keywords through `take_params`; the declaration checks a
    spec's values, fills the defaults and builds the signature's parameters. An evaluator
    without `PARAMS` (a plugin written before) takes its constructor's keywords, as it did.
    """

    name: ClassVar[str] = ""
    level: ClassVar[Literal["segment", "corpus"]] = "segment"
    needs_references: ClassVar[bool] = False
    batch_size: ClassVar[int] = 64
    #: requests a part of `score_parts` holds; None: a batch is one part
    part_size: int | None = None
    #: the runner hands texts over by source, then text (those that share a prompt prefix back
    #: to back), not by length (which fills a model batch with little padding)
    order_by_source: ClassVar[bool] = False
    description: ClassVar[str] = ""
    #: Perturbations (or perturbation families) this evaluator is designed to be tested on; None
    #: means all. Reports mark the other tests "not applicable" instead of "blind spot".
    meant_for: ClassVar[tuple[str, ...] | None] = None
    #: the spec parameter whose value names the evaluator in its short label: judge(gpt-4o-mini)
    label_param: ClassVar[str] = "model"
    #: the label in tables when set: the user's `name=`, or the one `distinct_labels` chose to
    #: tell it from another evaluator of the run; never part of the signature or cache key
    display_name: str | None = None
    #: name -> declared parameter; None: the constructor's keywords are the parameters
    PARAMS: ClassVar[Mapping[str, Param] | None] = None
    #: the package whose version ends the printable form (`bleu|tok:13a|v2.4.3`), if any
    library: ClassVar[str] = ""

    def __init__(self, /, **params: Any):
        self.params = params
        self.spec_params: dict[str, Any] = {}  # what the user set; names the evaluator in tables
        self.settings: dict[str, Any] = dict(params)  # every setting, for the printable form

    def take_params(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """For the constructor of a declared evaluator: every declared parameter's value (the
        given ones checked and normalised, the rest their defaults). Sets `params`, the part
        of the signature the declaration decides (`signature_params`), and `settings`, all the
        values; the constructor adds what it works out (a resolved model name, file hashes)."""
        declared = self.PARAMS or {}
        values = settle(declared, given, f"evaluator '{self.name}'")
        Evaluator.__init__(self, **signature_params(declared, values, given))
        self.settings = values
        return values

    @classmethod
    def from_params(cls, values: Mapping[str, Any]) -> Evaluator:
        """The evaluator a spec's checked values describe; one that groups its options into
        settings objects (the LLM judge) maps the flat values onto them here."""
        return cls(**values)

    @property
    @abstractmethod
    def aspects(self) -> tuple[str, ...]:
        """Names of the scores this evaluator reports, e.g. ('rouge1', 'rouge2', 'rougeL')."""

    def higher_is_better(self, aspect: str) -> bool:
        return True

    def score_range(self, aspect: str) -> tuple[float, float] | None:
        """(lowest, highest) score this aspect can take when the evaluator bounds it by
        construction (BLEU 0-100, a probability 0-1, a cosine -1-1), else None (perplexities,
        log-likelihoods, learned regressions). Studies that put evaluators on one scale (the
        attack's 0-100) read it instead of a scale fitted to the data they happen to score;
        a plugin declares its own by overriding this."""
        return None

    def signature(self) -> dict[str, Any]:
        return {"evaluator": self.name, "params": self.params, "versions": self.versions()}

    def versions(self) -> dict[str, str]:
        """Library versions (and model hashes) that change the numbers."""
        return {}

    @property
    def short_signature(self) -> str:
        """A one-line form of the settings that make its numbers, as sacreBLEU prints one beside
        a score: `bleu|tok:13a|smooth:exp|v2.4.3` (each declared parameter with an
        abbreviation, then the scoring library's version)."""
        return printable_form(type(self), self.shown_settings())

    def shown_settings(self) -> Mapping[str, Any]:
        """The values `short_signature` shows; an evaluator that works a value out (sacreBLEU's
        tokenizer for a language) returns the one it uses."""
        return self.settings

    @property
    def cache_namespace(self) -> str:
        canonical = json.dumps(self.signature(), sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]

    @property
    def label(self) -> str:
        """A short display name: the user's `name=`, else `name(model)` (the last part of a
        model path), `name(k=v,...)` for an evaluator with parameters but no model, or the bare
        name. `distinct_labels` adds what differs where two evaluators of a run would share it.
        Display only: results and caches key evaluators by their signature."""
        if self.display_name:
            return self.display_name
        return self.short_label()

    @property
    def spec(self) -> str:
        """The spec that builds this evaluator again, its label included: how a study that
        starts from a run's labels (the adversarial analysis) gets the evaluators back."""
        parts = [f"{k}={_spec_value(v)}" for k, v in sorted(self.spec_params.items())]
        if self.display_name:
            parts.append(f"name={_spec_value(self.display_name)}")
        return f"{self.name}:{','.join(parts)}" if parts else self.name

    def short_label(self, keys: Sequence[str] = (), full: bool = False) -> str:
        """The label from the spec: `name(model)` plus `k=v` for each of `keys` the spec sets;
        without a model, every parameter the spec sets. Values are shortened to a path's last
        part unless `full`."""
        head = self.spec_params.get(self.label_param)
        shown = ([k for k in keys if k != self.label_param] if head not in (None, "")
                 else sorted(self.spec_params))
        parts = [] if head in (None, "") else [_label_value(head, full)]
        parts += [f"{k}={_label_value(self.spec_params[k], full)}" for k in shown
                  if self.spec_params.get(k) is not None]
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        """Score a batch; the default checks references then calls `score_batch`."""
        if not self.needs_references:
            return self.score_batch(requests)
        rows: list[ScoreRow | None] = [None] * len(requests)
        usable = [i for i, r in enumerate(requests) if r.references]
        for i, r in enumerate(requests):
            if not r.references:
                rows[i] = {a: Score.missing("no references for this example") for a in self.aspects}
        if usable:
            for i, row in zip(usable, self.score_batch([requests[i] for i in usable]), strict=True):
                rows[i] = row
        return [row for row in rows if row is not None]

    def score_parts(self, requests: Sequence[ScoreRequest]) -> Iterator[list[ScoreRow]]:
        """Score a batch as consecutive parts, rows in request order, each part as soon as it is
        done: the runner caches every part, and its progress moves by each, so a kill loses at
        most one part. The default is one part, or parts of `part_size` requests where it is set
        (an in-process judge, which answers one prompt at a time); an evaluator that takes large
        batches to fill its model batches well (BERTScore) yields one part per model batch."""
        step = self.part_size or max(1, len(requests))
        for start in range(0, len(requests), step):
            yield self.score(requests[start:start + step])

    @abstractmethod
    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        """Score requests that passed the generic checks; one row per request, in order."""

    def score_sets(self, gold: Sequence[ScoreRequest],
                   candidates: Sequence[ScoreRequest]) -> ScoreRow:
        """Corpus-level evaluators compare a set of texts with a gold set."""
        raise NotImplementedError(f"{self.name} is a segment-level evaluator")

    def check_reachable(self) -> None:  # noqa: B027 - optional hook, most need nothing
        """Raise a ValueError (one line naming what is wrong) when the evaluator cannot answer
        at all: a judge's endpoint that is not there or refuses its key. Asked once before any
        work, so such a run stops at once instead of ending in missing scores."""

    def close(self) -> None:  # noqa: B027 - optional hook, most evaluators hold nothing
        """Free models or connections; the runner calls it at the end of a run."""


def signature_params(declared: Mapping[str, Param], values: Mapping[str, Any],
                     given: Collection[str]) -> dict[str, Any]:
    """The parameters of an evaluator's signature that its declaration decides: each one
    `signed` always, and each `signed` only when `given` that is."""
    return {key: values[key] for key, param in declared.items()
            if param.signed == "always" or (param.signed == "given" and key in given)}


def printable_form(cls: type[Evaluator], values: Mapping[str, Any] | None = None) -> str:
    """`name|abbr:value|...|vX.Y`: the declared parameters that have an abbreviation, with
    their `values` (defaults where absent; none and empty values left out), and the version of
    the class's library where it is installed."""
    shown = dict(values or {})
    parts = [cls.name]
    for key, param in (cls.PARAMS or {}).items():
        value = shown.get(key, param.default)
        if param.short and value not in (None, "", REQUIRED):
            parts.append(f"{param.short}:{_printable_value(value)}")
    if cls.library:
        with suppress(PackageNotFoundError):  # not installed: the evaluator cannot run here
            parts.append(f"v{version(cls.library)}")
    return "|".join(parts)


def _printable_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return " ".join(_label_value(value, full=False).split()).replace("|", "/").replace(" ", "+")


def _spec_value(value: Any) -> str:
    """A value as a spec writes it: true/false, and quoted where it holds a comma or a quote."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if not any(ch in text for ch in ",'\""):
        return text
    return f"'{text}'" if '"' in text else f'"{text}"'


def _label_value(value: Any, full: bool) -> str:
    """A parameter's value in a label: a path or hub name by its last part
    (/models/SmolLM2 -> SmolLM2, Qwen/Qwen2.5-7B -> Qwen2.5-7B)."""
    text = str(getattr(value, "__name__", value))
    if full or "/" not in text or "://" in text or " " in text:  # a URL or a command line
        return text
    return text.rstrip("/").rsplit("/", 1)[-1] or text


def distinct_labels(evaluators: Sequence[Evaluator],
                    hint: str = "give each its own name=") -> None:
    """Make the labels of one run's evaluators unique, the same way every time: where two
    would share a short label, each that has no `name=` gets the parameters that differ within
    its group (values shortened, then in full if still equal). Evaluators that still share a
    label (the same spec twice, or one `name=` twice) are a ValueError ending in `hint`."""
    groups: dict[str, list[Evaluator]] = {}
    for ev in evaluators:
        groups.setdefault(ev.label, []).append(ev)
    for group in groups.values():
        unnamed = [ev for ev in group if not ev.display_name]
        if len(group) < 2 or not unnamed:
            continue
        keys = sorted({k for ev in group for k in ev.spec_params
                       if len({repr(other.spec_params.get(k)) for other in group}) > 1})
        for full in (False, True):
            labels = [ev.short_label(keys, full) for ev in unnamed]
            if len(set(labels)) == len(labels):
                break
        for ev, label in zip(unnamed, labels, strict=True):
            if label != ev.label:
                ev.display_name = label
    labels = [ev.label for ev in evaluators]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(f"two evaluators share the label {', '.join(twice)}: {hint}")


EVALUATORS: Registry[type[Evaluator]] = Registry(
    "evaluator", builtin="evalstress.evaluators.builtin", group="evalstress.evaluators",
    listing="evalstress list evaluators")
#: class decorator that registers an evaluator under a name
evaluator = EVALUATORS.register


def registry() -> dict[str, type[Evaluator]]:
    return EVALUATORS.all()


def parse_spec(spec: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """`"rouge"`, `"bertscore:model=/m,num_layers=6"`, `{"name": ..., **params}` or
    `{"evaluator": ..., "name": LABEL, **params}` (there `name` is the label, as in a string
    spec's `name=`)."""
    params: dict[str, Any]
    if isinstance(spec, Mapping):
        params = {str(k): v for k, v in spec.items()}
        if "evaluator" in params:
            return str(params.pop("evaluator")), params
        if "name" not in params:
            raise ConfigError(f"evaluator spec {dict(spec)!r} names no evaluator: give 'name' "
                              "(or 'evaluator' and a 'name' label)")
        return str(params.pop("name")), params
    if not isinstance(spec, str):
        raise ConfigError(f"an evaluator spec is a string such as 'rouge' or "
                          f"'bertscore:model=PATH', or a mapping; got {spec!r}")
    name, _, rest = spec.partition(":")
    params = {}
    if rest:
        for part in split_params(rest):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"evaluator parameter '{part}' in '{spec}' must look like "
                                  "key=value")
            if key.strip() in params:
                raise ConfigError(f"evaluator parameter '{key.strip()}' is given twice in '{spec}'")
            params[key.strip()] = coerce_param(value.strip())
    if not name.strip():
        raise ConfigError(f"evaluator spec '{spec}' names no evaluator (e.g. 'rouge', "
                          "'bleu:tokenize=13a')")
    return name.strip(), params


def accepted_params(cls: type[Evaluator]) -> tuple[str, ...] | None:
    """The spec keys an evaluator takes: its declared `PARAMS`, else its `accepted_params()`
    hook where it has one, else the keyword arguments of its constructor; None when it takes
    any (`**params`)."""
    if cls.PARAMS is not None:
        return tuple(cls.PARAMS)
    hook = getattr(cls, "accepted_params", None)
    if callable(hook):
        return tuple(hook())
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return tuple(p.name for p in parameters
                 if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))


def check_text_params(cls: type[Evaluator], name: str, params: Mapping[str, Any]) -> None:
    """For an evaluator without `PARAMS`: a parameter the constructor takes as text given as
    true/false or a list fails at the spec, naming it, instead of deep inside scoring."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # annotations a plugin cannot resolve: its own constructor checks
        return
    for key, value in params.items():
        if hints.get(key) is str and isinstance(value, (bool, list, dict)):
            raise ConfigError(f"evaluator '{name}': {key}={json.dumps(value)} must be text, "
                              f"e.g. {key}=\"...\"")


def create_evaluator(spec: str | Mapping[str, Any]) -> Evaluator:
    """Build an evaluator from a spec. `name=LABEL` sets its short label in tables; a missing
    optional dependency fails here, naming the extra to install, before any work."""
    from evalstress.core.extras import check_evaluator
    from evalstress.core.redact import refuse_secrets

    name, params = parse_spec(spec)
    label = params.pop("name", None)
    if label is not None and not str(label).strip():
        raise ConfigError(f"evaluator '{name}': name= needs a label")
    cls = EVALUATORS.get(name)
    where = f"evaluator '{name}'"
    refuse_secrets(params, where)  # a spec is stored with the run
    known = accepted_params(cls)
    if known is not None:
        check_names("parameter", params, (*known, "name"), where)
    if cls.PARAMS is not None:  # every value checked, required ones present, before any work
        values = settle(cls.PARAMS, params, where)
        params = {key: values[key] for key in params}
    else:
        check_text_params(cls, name, params)
    check_evaluator(name, params)
    try:
        instance = cls.from_params(params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for evaluator '{name}': {exc}") from None
    instance.spec_params = params
    if label is not None:
        instance.display_name = str(label).strip()
    return instance
