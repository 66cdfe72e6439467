"""The settings of the commands that run work beside `evalstress run`: attack, self-bias,
correlate and card. Each is a `Settings` model (`job.settingsbase`): its fields are the
command's options, the keys of its `--config` file, and checked the same way whether a flag or
the file gave them (an error names the flag, or the file and field)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from evalstress.core.params import BOOLEAN, one_of, real, text, whole_number
from evalstress.criteria import LEVELS
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING
from evalstress.job.settings import (
    BACKENDS,
    LEXICAL_DEFAULT,
    check_execution,
    fraction,
    text_length,
)
from evalstress.job.settingsbase import (
    FIELD_MAP,
    PATH,
    Settings,
    SettingsError,
    names_kind,
    setting,
)


def _required(value: Any, where: str) -> Any:
    """A setting the command cannot run without (a data file, a victim, a gold)."""
    if value is None or value == []:
        raise SettingsError(f"{where} is required: give it on the command line or in the "
                            "--config file")
    return value


def _path(**more: Any) -> Any:
    return setting(kind=PATH, convert=Path, **more)


def _flag() -> Any:
    return setting(kind=BOOLEAN, empty_is_unset=True)


@dataclass(frozen=True)
class StudySettings(Settings):
    """What every study command shares: where it writes and how it runs."""

    out: Path | None = field(default=None, metadata=_path())
    cache_dir: Path | None = field(default=None, metadata=_path())
    no_cache: bool = field(default=False, metadata=_flag())
    quiet: bool = field(default=False, metadata=_flag())
    force: bool = field(default=False, metadata=_flag())


@dataclass(frozen=True)
class ExamplesSettings(StudySettings):
    """A study of a file of examples: the file, its field mapping, default task and limit."""

    data: Path | None = field(default=None, metadata=_path(check=_required, flag="DATA"))
    map: list[str] | None = field(default=None, metadata=setting(kind=FIELD_MAP,
                                                                 flag="--map"))
    task: str | None = field(default=None, metadata=setting(kind=text()))
    limit: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
    max_missing: float = field(default=DEFAULT_MAX_MISSING, metadata=setting(check=fraction))


@dataclass(frozen=True)
class AttackSettings(ExamplesSettings):
    """`evalstress attack`: the adversarial search of paper 004 and its baselines."""

    FACE: ClassVar[str] = "attack"

    victim: list[str] = field(default_factory=list, metadata=setting(
        kind=names_kind("evaluator specs"), check=_required))
    gold: list[str] = field(default_factory=list, metadata=setting(
        kind=names_kind("evaluator specs"), check=_required))
    generator: str | None = field(default=None, metadata=setting(kind=text()))
    method: list[str] | None = field(default=None, metadata=setting(
        kind=names_kind("attack methods")))
    #: good, bad or both: checked where the attack is built, as from Python
    direction: str = field(default="both", metadata=setting(kind=text()))
    budget: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
    candidates: int = field(default=8, metadata=setting(kind=whole_number(1)))
    trajectory: int = field(default=10, metadata=setting(kind=whole_number(1)))
    max_iterations: int = field(default=30, metadata=setting(kind=whole_number(1)))
    gold_samples: int = field(default=8, metadata=setting(kind=whole_number(1)))
    tau_plus: float = field(default=70.0, metadata=setting(kind=real()))
    tau_minus: float = field(default=30.0, metadata=setting(kind=real()))
    delta: float = field(default=40.0, metadata=setting(kind=real()))
    lambda_: float = field(default=1.0, metadata=setting(kind=real()))
    stop_threshold: float | None = field(default=80.0, metadata=setting(kind=real()))
    patience: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
    rescore_final: bool | None = field(default=None, metadata=setting(kind=BOOLEAN))
    seed: int = field(default=0, metadata=setting(kind=whole_number(0)))
    protocol: str | None = field(default=None, metadata=setting(kind=text()))
    stop_rule: str | None = field(default=None, metadata=setting(kind=text()))
    criteria: str | None = field(default=None, metadata=setting(kind=text()))
    reference: str | None = field(default=None, metadata=setting(kind=text()))
    range_: list[str] | None = field(default=None, metadata=setting(
        kind=names_kind("NAME=LO:HI ranges")))
    scale_reference: list[str] | None = field(default=None, metadata=setting(
        kind=names_kind("[NAME=]FILE references")))
    scale_percentiles: str = field(default="5:95", metadata=setting(kind=text()))


@dataclass(frozen=True)
class SelfBiasSettings(ExamplesSettings):
    """`evalstress self-bias`: do evaluators favour their own backbone (paper 002, 5.4)?"""

    FACE: ClassVar[str] = "self-bias"

    model: list[str] = field(default_factory=list, metadata=setting(
        kind=names_kind("backbones NAME=PATH"), check=_required))
    #: lm or seq2seq: checked by the study, as from Python
    kind: str = field(default="lm", metadata=setting(kind=text()))
    evaluator_model: list[str] | None = field(default=None, metadata=setting(
        kind=names_kind("NAME=PATH pairs")))
    referee: list[str] | None = field(default=None, metadata=setting(
        kind=names_kind("evaluator specs")))
    systems_field: str | None = field(default=None, metadata=setting(kind=text()))
    prompt_words: int = field(default=32, metadata=setting(kind=whole_number(1)))
    max_new_tokens: int = field(default=60, metadata=setting(kind=whole_number(1)))
    seed: int = field(default=0, metadata=setting(kind=whole_number(0)))


@dataclass(frozen=True)
class CorrelateSettings(StudySettings):
    """`evalstress correlate`: evaluators against human scores of several systems' outputs."""

    FACE: ClassVar[str] = "correlate"

    #: required unless --preferences is given (checked by the command)
    data: Path | None = field(default=None, metadata=_path(flag="DATA"))
    preferences: Path | None = field(default=None, metadata=_path())
    evaluators: list[str] = field(
        default_factory=lambda: list(LEXICAL_DEFAULT),
        metadata=setting(kind=names_kind("evaluator specs"), empty_is_unset=True,
                         flag="--evaluator"))
    systems_field: str = field(default="systems", metadata=setting(kind=text()))
    text_field: str = field(default="summary", metadata=setting(kind=text()))
    system_id_field: str = field(default="system", metadata=setting(kind=text()))
    id_field: str = field(default="id", metadata=setting(kind=text()))
    human: str = field(default="coherence,consistency,fluency,relevance",
                       metadata=setting(kind=text()))
    map: list[str] | None = field(default=None, metadata=setting(kind=FIELD_MAP,
                                                                 flag="--map"))
    task: str = field(default="summarization", metadata=setting(kind=text()))
    n_boot: int = field(default=1000, metadata=setting(kind=whole_number(1)))
    seed: int = field(default=0, metadata=setting(kind=whole_number(0)))
    limit: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
    max_missing: float = field(default=DEFAULT_MAX_MISSING, metadata=setting(check=fraction))


@dataclass(frozen=True)
class CardSettings(StudySettings):
    """`evalstress card`: every method that applies to an evaluator, in one folder."""

    FACE: ClassVar[str] = "card"

    specs: list[str] = field(default_factory=list, metadata=setting(
        kind=names_kind("evaluator specs"), check=_required, flag="SPEC"))
    data: Path | None = field(default=None, metadata=_path())
    map: list[str] | None = field(default=None, metadata=setting(kind=FIELD_MAP,
                                                                 flag="--map"))
    task: str | None = field(default=None, metadata=setting(kind=text()))
    #: small, standard or paper: checked with the plan (`card.plan.BUDGETS`)
    budget: str = field(default="standard", metadata=setting(kind=text()))
    gold: str | None = field(default=None, metadata=setting(kind=text()))
    generator: str | None = field(default=None, metadata=setting(kind=text()))
    #: None: one process up to 100 examples, else every core (`card.run.card_workers`)
    workers: int | None = field(default=None, metadata=setting(kind=whole_number(0)))
    dry_run: bool = field(default=False, metadata=setting(kind=BOOLEAN, flag="--dry-run",
                                                          empty_is_unset=True))
    max_chars: int | None = field(default=None, metadata=setting(check=text_length))
    #: the dry run times the card from the shipped rates instead of measuring one here
    no_measure: bool = field(default=False, metadata=setting(kind=BOOLEAN, flag="--no-measure",
                                                             empty_is_unset=True))
    exhaustive: bool = field(default=False, metadata=setting(kind=BOOLEAN, flag="--exhaustive",
                                                             empty_is_unset=True))
    preferences: Path | None = field(default=None, metadata=_path())
    # -- how its methods execute: the same card whatever these say -----------------------
    backend: str = field(default="local", metadata=setting(kind=one_of(BACKENDS),
                                                           empty_is_unset=True))
    ray_address: str | None = field(default=None, metadata=setting(kind=text()))
    #: refused (`check_card_execution`): declared so that the error says why
    shard: str | None = field(default=None, metadata=setting(kind=text()))

    def check_together(self) -> None:
        """A Ray address without the Ray backend, or a shard, refused before any work; so is
        --no-measure without --dry-run (it says how a dry run times the card)."""
        check_card_execution(self.backend, self.ray_address, self.shard, self.where)
        if self.no_measure and not self.dry_run:
            raise SettingsError(f"{self.where('no_measure')}: applies to "
                                f"{self.where('dry_run')}")


def check_card_execution(backend: str, ray_address: str | None, shard: str | None,
                         where: Callable[[str], str] = lambda key: "--" + key.replace("_", "-"),
                         ) -> None:
    """How a card (or the atlas's cards) may execute: `run`'s rules for the backend, and no
    shard. A shard of a card would be a card of part of the examples, whose intervals are
    not the card's, and its studies (adversarial search, position, consistency, the systems'
    correlation) score whole; the Ray backend spreads each method's scoring instead."""
    check_execution(backend, False, ray_address, where)
    if shard:
        raise SettingsError(
            f"{where('shard')} {shard}: a card is not made in shards: its verdicts resample "
            "every example of the card in one place and its studies run whole; spread a card "
            f"over machines with {where('backend')} ray instead (docs/scale.md)")


@dataclass(frozen=True)
class LevelsSettings(StudySettings):
    """`evalstress criteria-levels`: one judge at each level of detail of its criteria. Its
    run takes these settings into `RunSettings` (the judge once per level as evaluators)."""

    FACE: ClassVar[str] = "criteria-levels"

    data: Path | None = field(default=None, metadata=_path(check=_required, flag="DATA"))
    judge: str | None = field(default=None, metadata=setting(kind=text(), check=_required))
    levels: str = field(default=",".join(LEVELS), metadata=setting(kind=text()))
    suite: str = field(default="criteria-rules", metadata=setting(kind=PATH, convert=str))
    map: list[str] | None = field(default=None, metadata=setting(kind=FIELD_MAP,
                                                                 flag="--map"))
    task: str | None = field(default=None, metadata=setting(kind=text()))
    protocol: str | None = field(default=None, metadata=setting(kind=text()))
    seeds: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
    limit: int | None = field(default=None, metadata=setting(kind=whole_number(1)))
