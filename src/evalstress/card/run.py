"""Running a card: each method as a job through `evalstress.job` (or the attack study through
`evalstress.job.attack`), into `<out>/runs/<method>/`, then the card written from their run
directories.

- `<out>` itself is checked (`engine.outdir.check_out_dir`: a new folder, an empty one, a card
  folder whose every file evalstress wrote, or any with `force`, whose files evalstress did
  not write are then kept) and locked (`OutLock`) before any work; each method's run
  directory is checked and locked by its job. The card's own files (card.json, card.md,
  card.html, figures, runs/timings.json) are recorded in its marker as they are written.
- Every method scores through the same caches (one `cache_dir`): a second card of the same
  evaluator makes no new model call.
- A killed card resumes: a method whose run directory is complete (`report.rundir.read_run`)
  and records the fingerprint of the same settings (`CardPlan.fingerprint`, in its
  results.json's `config.card`) is not run again; a method killed halfway resumes from its
  job's staging folder and the caches.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalstress.card.data import spread_over_tasks
from evalstress.card.plan import CardPlan, MethodPlan
from evalstress.core.cache import default_cache_dir
from evalstress.core.data import DataError
from evalstress.core.records import Progress
from evalstress.core.strict import ConfigError
from evalstress.core.userfile import read_json
from evalstress.core.wording import plural
from evalstress.engine.outdir import (
    OutDirError,
    OutLock,
    check_out_dir,
    marker_kind,
    record_files,
    remove_owned,
    write_owned_text,
)
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING, MissingShare
from evalstress.engine.scoring import open_run_cache
from evalstress.job import JobError, RunSettings, SettingsError, StressJob, build_job, run_job
from evalstress.job.attack import run_attack_study
from evalstress.job.build import resolve_suite
from evalstress.perturb.base import get_perturbation
from evalstress.report.rundir import RunDirError, read_run
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.protocol import resolve
from evalstress.studies.attack.setup import build_attacker
from evalstress.suites import PerturbationPlan, Suite

#: where the methods' run directories go inside a card's folder
RUNS = "runs"
#: seconds each method's run took, kept beside the run directories (a reused method shows them)
TIMINGS = "timings.json"
#: what a method's failure may be: reported in its section, the other methods go on
METHOD_ERRORS = (JobError, SettingsError, ConfigError, DataError, RunDirError, ValueError,
                 ImportError)


#: a card of at most this many examples runs each method in one process: starting a pool of
#: workers (each loads spaCy) costs more than it saves at that size, about three times over
#: (bench/README.md, "Figures behind the code")
ONE_PROCESS_UP_TO = 100


def card_workers(examples: int, given: int | None) -> int:
    """The processes of a card's jobs: as given, else one up to ONE_PROCESS_UP_TO examples and
    every core (0) above."""
    if given is not None:
        return given
    return 1 if examples <= ONE_PROCESS_UP_TO else 0


class CardError(ValueError):
    """The card cannot run as asked (its folder is refused or locked); nothing was run."""


@dataclass
class CardOptions:
    """How a card runs, not what it measures: the same results whatever these say."""

    out: Path
    cache_dir: Path | None = None
    no_cache: bool = False
    workers: int = 0
    force: bool = False
    max_missing: float = DEFAULT_MAX_MISSING
    progress: Progress | None = None
    #: one progress line per method ("blind spots: done in N s")
    say: Callable[[str], None] = field(default=lambda line: None)
    #: where the stress methods' jobs score: this machine, or a Ray cluster (`run`'s
    #: --backend and --ray-address; the studies run here either way)
    backend: str = "local"
    ray_address: str | None = None


@dataclass
class MethodOutcome:
    """What happened to one method in this card."""

    key: str
    status: str  # run | reused | failed | not run
    seconds: float = 0.0
    first_seconds: float | None = None
    error: str = ""
    results: dict[str, Any] | None = None
    untrusted: list[MissingShare] = field(default_factory=list)


def run_dir_of(out: Path, key: str) -> Path:
    return out / RUNS / key


def claim_out(out: Path, *, force: bool, inputs: list[tuple[str, Path]]) -> OutLock:
    """Check `out` and lock it, before any work: a new or empty folder, or a card folder whose
    files evalstress wrote; another folder only with `force` (then the files evalstress wrote
    there go, the user's stay). The caller releases the returned lock."""
    try:
        check_out_dir(out, force=force, inputs=inputs, kind="card")
    except OutDirError as exc:
        raise CardError(str(exc)) from None
    lock = OutLock(out)
    try:
        lock.acquire()
    except OutDirError as exc:
        raise CardError(str(exc)) from None
    if out.is_dir() and marker_kind(out) not in (None, "card"):
        remove_owned(out)  # --force over a run directory: its files go, the user's stay
    (out / RUNS).mkdir(parents=True, exist_ok=True)
    record_files(out, [], "card", "card")
    return lock


#: what makes two cards of one evaluator different cards, as card.json records it
SETTINGS = ("evaluator", "signature", "budget", "data sha256")


def card_settings(plan: CardPlan) -> dict[str, str | None]:
    """The settings that make a card this card and no other: the evaluator's spec and short
    signature, the budget's name, the sha256 of the examples."""
    data = plan.data.get("sha256")
    return {"evaluator": plan.evaluator.spec, "signature": plan.evaluator.short_signature,
            "budget": plan.budget.name, "data sha256": str(data) if data else None}


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int | float) and value != "" else None


def earlier_settings(out: Path) -> dict[str, str | None] | None:
    """The settings of the card already in `out`: from its card.json, else from the first of
    its runs that records them (a card killed before it wrote card.json); None when `out`
    holds no card evalstress wrote."""
    if marker_kind(out) != "card":
        return None
    try:
        card = read_json(out / "card.json")
    except (OSError, ValueError):
        card = None
    if isinstance(card, dict):
        evaluator = card.get("evaluator") or {}
        return {"evaluator": _text(evaluator.get("spec")),
                "signature": _text(evaluator.get("short_signature")),
                "budget": _text((card.get("budget") or {}).get("name")),
                "data sha256": _text((card.get("data") or {}).get("sha256"))}
    runs = out / RUNS
    for results in sorted(runs.glob("*/results.json")) if runs.is_dir() else []:
        try:
            record = ((read_json(results).get("config") or {}).get("card") or {})
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(record, dict) and record.get("evaluator"):
            return {"evaluator": _text(record.get("evaluator")), "signature": None,
                    "budget": _text(record.get("budget")),
                    "data sha256": _text(record.get("data_sha256"))}
    return None


def _shown(name: str, value: str | None) -> str:
    if value is None:
        return "unknown"
    return value[:12] if name == "data sha256" else value


def check_same_card(out: Path, plan: CardPlan, *, force: bool, what: str = "--out") -> None:
    """Refuse (CardError), before any work, to write a card over a card of other settings in
    `out` (another budget, other data, another evaluator): one line naming what differs and
    the two ways out. A card of the same settings resumes; `force` replaces the other card.
    A setting the earlier card does not record is not held against it. `what`: the option
    that names the folder (the atlas's --work)."""
    if force:
        return
    earlier = earlier_settings(Path(out))
    if earlier is None:
        return
    asked = card_settings(plan)
    differ = [f"{name} {_shown(name, earlier[name])} there, {_shown(name, asked[name])} now"
              for name in SETTINGS
              if earlier[name] is not None and asked[name] is not None
              and earlier[name] != asked[name]]
    if differ:
        raise CardError(f"{what} {out}: holds a card of other settings "
                        f"({'; '.join(differ)}), which this card would replace; name another "
                        f"folder with {what}, or add --force to replace it")


def finished_results(run_dir: Path, fingerprint: str) -> dict[str, Any] | None:
    """The results.json of a complete run directory made with these settings, else None."""
    try:
        results = read_run(run_dir)
    except RunDirError:
        return None
    card = (results.get("config") or {}).get("card") or {}
    return results if card.get("fingerprint") == fingerprint else None


def read_timings(out: Path) -> dict[str, Any]:
    path = out / RUNS / TIMINGS
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_timing(out: Path, key: str, fingerprint: str, started: float,
                 seconds: float | None = None) -> None:
    """Record when a method started (epoch seconds) and, once it is done, how long it took."""
    timings = read_timings(out)
    timings[key] = {"fingerprint": fingerprint, "started": started,
                    "seconds": round(seconds, 2) if seconds is not None else None}
    write_owned_text(out, f"{RUNS}/{TIMINGS}", json.dumps(timings, indent=2), "card", "card")


def card_record(plan: CardPlan, key: str) -> dict[str, Any]:
    """What a method's results.json records of the card that ran it (`config.card`)."""
    return {"method": key, "fingerprint": plan.fingerprint(key),
            "evaluator": plan.evaluator.spec, "budget": plan.budget.name,
            "data_sha256": plan.data.get("sha256")}


def stress_settings(plan: CardPlan, method: MethodPlan, options: CardOptions,
                    run_dir: Path | None = None) -> RunSettings:
    """The job's settings, as `evalstress run` would take them from its flags; `run_dir`:
    where it runs, when not the method's own folder (the consistency method's wordings)."""
    data = plan.data
    return RunSettings.resolve(
        {"evaluators": [plan.evaluator.spec], "data": plan.data_path,
         "map": data.get("map"), "task": data.get("task"), "suite": method.suite,
         "seeds": method.seeds, "protocol": method.protocol,
         "out": run_dir or run_dir_of(options.out, method.key), "cache_dir": options.cache_dir,
         "no_cache": options.no_cache, "workers": options.workers, "force": options.force,
         "quiet": True, "max_missing": options.max_missing, "max_chars": plan.max_chars,
         "backend": options.backend, "ray_address": options.ray_address},
        face="card")


def method_suite(plan: CardPlan, method: MethodPlan, settings: RunSettings) -> Suite | None:
    """The method's suite less the perturbations the plan left out (`MethodPlan.left_out`:
    what they need does not ship), or None when it leaves none out (the job reads the suite
    by name then)."""
    if method.key == "bias" and method.mode:
        return with_self_preference(resolve_suite(settings, plan.examples), method)
    if not method.left_out:
        return None
    suite = resolve_suite(settings, plan.examples)
    gone = {name for name, _ in method.left_out}
    suite.perturbations = [p for p in suite.perturbations if p.name not in gone]
    return suite


def with_self_preference(suite: Suite, method: MethodPlan) -> Suite:
    """The bias suite with the self-preference probe given the judge's model family (the
    bias method's `mode`: 'self-preference family NAME')."""
    family = str(method.mode).rpartition(" ")[2]
    probe = get_perturbation("self-preference", family=family)
    suite.perturbations = [p for p in suite.perturbations if p.name != probe.name]
    suite.perturbations.append(PerturbationPlan(probe, type(probe).grid))
    return suite


def stress_job_of(plan: CardPlan, method: MethodPlan, options: CardOptions,
                  run_dir: Path | None = None) -> StressJob:
    """The job of a stress method, as its run and its dry run build it (in `run_dir` when
    given, see `stress_settings`)."""
    settings = stress_settings(plan, method, options, run_dir)
    job = build_job(settings, rows=list(plan.examples),
                    suite=method_suite(plan, method, settings), analyses=method.analyses,
                    command="card", progress=options.progress,
                    record={"data": plan.data.get("source"),
                            "card": card_record(plan, method.key)})
    if method.design and run_dir is None:  # the method's own run, not a study's sub-run
        job.verdict_design = dict(method.design)
    return job


def run_stress_method(plan: CardPlan, method: MethodPlan, options: CardOptions
                      ) -> list[MissingShare]:
    """One stress method as a job: the card's examples, the method's suite and analyses."""
    return run_job(stress_job_of(plan, method, options)).untrusted


def attack_victims(plan: CardPlan) -> list[str]:
    """The victim specs: the evaluator, one per aspect when it has several (spec@aspect)."""
    spec, aspects = plan.evaluator.spec, plan.evaluator.aspects
    return [spec] if len(aspects) == 1 else [f"{spec}@{aspect}" for aspect in aspects]


def run_attack_method(plan: CardPlan, method: MethodPlan, options: CardOptions
                      ) -> list[MissingShare]:
    """The adversarial search as `evalstress attack` runs it (`job.attack.run_attack_study`),
    on the budget's share of the card's examples."""
    run_dir = run_dir_of(options.out, method.key)
    settings = dict(method.attack)
    chosen = resolve(method.protocol, generator=plan.generator)
    params = AttackParams(budget=settings["budget"], candidates=settings["candidates"],
                          trajectory=settings["trajectory"],
                          max_iterations=settings["max_iterations"],
                          gold_samples=settings["gold_samples"], stop_rule=chosen.stop_rule,
                          patience=chosen.patience, protocol=chosen.protocol,
                          rescore_final=chosen.rescore_final)
    examples = spread_over_tasks(plan.examples, settings.get("examples"))
    cache_folder = options.cache_dir or default_cache_dir()
    inputs = [("cache folder", cache_folder)]  # even with --no-cache
    try:
        check_out_dir(run_dir, force=options.force, inputs=inputs)
    except OutDirError as exc:
        raise JobError(str(exc)) from None
    lock = OutLock(run_dir)
    try:
        lock.acquire()
    except OutDirError as exc:
        raise JobError(str(exc)) from None
    cache = open_run_cache(options.cache_dir, options.no_cache)
    try:
        attacker = build_attacker(
            examples, victims=attack_victims(plan), gold=[str(plan.gold)],
            generator=chosen.generator, methods=list(settings["methods"]), direction="both",
            params=params, reference=chosen.reference, cache=cache,
            cache_dir=options.cache_dir, no_cache=options.no_cache, progress=options.progress)
        config = {"command": "card", "data": plan.data.get("source"),
                  "victims": attack_victims(plan), "gold": [plan.gold],
                  "generator": plan.generator, "methods": list(settings["methods"]),
                  "direction": "both", "reference": chosen.reference,
                  "protocol": chosen.protocol, "examples": [e.id for e in examples],
                  "card": card_record(plan, method.key)}
        study = run_attack_study(attacker, run_dir, config=config, force=options.force)
    finally:
        if cache is not None:
            cache.close()
        lock.release()
    return study.missing


def finished_study(path: Path, fingerprint: str) -> dict[str, Any] | None:
    """The record of a study method's file ({fingerprint, seconds, results}) made with these
    settings, else None."""
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("fingerprint") != fingerprint:
        return None
    return record if isinstance(record.get("results"), dict) else None


def run_study(plan: CardPlan, method: MethodPlan, options: CardOptions, filename: str,
              doing: str, work: Callable[[], dict[str, Any]],
              errors: tuple[type[Exception], ...] = (ValueError, ImportError)) -> MethodOutcome:
    """A method whose results are one JSON file in its folder, not a run directory (the
    systems' correlation, the position test, consistency): reused when the file records the
    same fingerprint, else `work()` is run (said as 'running (`doing`)'), written and recorded
    in the card's marker; one of `errors` is the method's failure, and the card goes on."""
    folder = run_dir_of(options.out, method.key)
    path = folder / filename
    fingerprint = plan.fingerprint(method.key)
    earlier = finished_study(path, fingerprint)
    if earlier is not None:
        options.say(f"{method.title}: reused {path} (finished earlier with these settings)")
        return MethodOutcome(method.key, "reused", 0.0, earlier.get("seconds"),
                             results=dict(earlier["results"]))
    options.say(f"{method.title}: running ({doing})")
    started = time.perf_counter()
    try:
        results = work()
    except errors as exc:
        return failed_outcome(method, options, started, exc)
    seconds = time.perf_counter() - started
    folder.mkdir(parents=True, exist_ok=True)
    write_owned_text(options.out, path.relative_to(options.out).as_posix(),
                     json.dumps({"fingerprint": fingerprint, "seconds": round(seconds, 2),
                                 "results": results}, indent=1) + "\n", "card", "card")
    options.say(f"{method.title}: done in {seconds:.0f} s")
    return MethodOutcome(method.key, "run", seconds, seconds, results=results)


def failed_outcome(method: MethodPlan, options: CardOptions, started: float,
                   exc: Exception) -> MethodOutcome:
    """A method that failed: said, and kept in the card with its reason (the card goes on)."""
    message = str(exc.args[0] if exc.args else exc)
    options.say(f"{method.title}: failed: {message}")
    return MethodOutcome(method.key, "failed", time.perf_counter() - started, error=message)


def earlier_seconds(out: Path, key: str, fingerprint: str, run_dir: Path) -> float | None:
    """How long a reused method's run took: as recorded, or, for a card killed before it
    could record it, from its start to its results.json."""
    timing = read_timings(out).get(key) or {}
    if timing.get("fingerprint") != fingerprint:
        return None
    if timing.get("seconds") is not None:
        return float(timing["seconds"])
    started = timing.get("started")
    if started is None or not (run_dir / "results.json").exists():
        return None
    return max(0.0, (run_dir / "results.json").stat().st_mtime - float(started))


def run_method(plan: CardPlan, method: MethodPlan, options: CardOptions) -> MethodOutcome:
    """One method: reused when its run directory is done with the same settings, else run
    (a failure is reported in the outcome; the card goes on with the next method)."""
    if not method.runs:
        return MethodOutcome(method.key, "not run")
    run_dir = run_dir_of(options.out, method.key)
    fingerprint = plan.fingerprint(method.key)
    results = finished_results(run_dir, fingerprint)
    if results is not None:
        options.say(f"{method.title}: reused {run_dir} (finished earlier with these settings)")
        return MethodOutcome(method.key, "reused", 0.0,
                             earlier_seconds(options.out, method.key, fingerprint, run_dir),
                             results=results)
    options.say(f"{method.title}: running ({describe_method(plan, method)})")
    write_timing(options.out, method.key, fingerprint, time.time())
    started = time.perf_counter()
    try:
        runner = run_attack_method if method.key == "adversarial" else run_stress_method
        untrusted = runner(plan, method, options)
        results = read_run(run_dir)
    except METHOD_ERRORS as exc:
        return failed_outcome(method, options, started, exc)
    seconds = time.perf_counter() - started
    write_timing(options.out, method.key, fingerprint, time.time() - seconds, seconds)
    options.say(f"{method.title}: done in {seconds:.0f} s")
    return MethodOutcome(method.key, "run", seconds, seconds, results=results,
                         untrusted=untrusted)


def describe_method(plan: CardPlan, method: MethodPlan) -> str:
    """'suite blindspot, 8 examples, 1 seed' or the attack's sizes, for a progress line."""
    if method.kind == "study":
        attack = method.attack
        examples = len(spread_over_tasks(plan.examples, attack.get("examples")))
        return (f"{', '.join(attack['methods'])}, {plural(examples, 'example')}, both directions, up to "
                f"{attack['budget']} queries per search")
    seeds = "the suite's seeds" if method.seeds is None else plural(method.seeds, "seed")
    protocol = f", protocol {method.protocol}" if method.protocol != "default" else ""
    return f"suite {method.suite}, {plural(len(plan.examples), 'example')}, {seeds}{protocol}"
