"""The card's dry run, timed on the machine it runs on: how long the card would take here, now.

The shipped rates (`estimate.SECONDS_PER_TEXT`, the real atlas's `RealEntry.rate`) were
measured once on another machine at another load; on a machine twice as busy or twice as fast
they miss by that much. So the dry run measures what it can where the card will run:

- planning: a stress method's dry run already plans it (perturbs every example, the same loop
  its run takes), so the seconds that took are the planning's share of the run
  (`MethodEstimate.plan_seconds`);
- scoring: the evaluator is built once and scores a few of the texts the card would score (a
  first text alone, whose time is the model's load, counted once for the card (its methods
  share a loaded model);
  then at least `MEASURE_TEXTS`, more up to `MEASURE_SECONDS` of scoring, at most
  `MEASURE_MOST`), taken in runs of `PER_EXAMPLE` texts of one example, the examples in a
  seeded order (what an evaluator prepares once for an example's references is shared as in
  the run's chunks, and the sample spans many examples); for an evaluator slower than
  `SPREAD_ABOVE` a text, one text an example after the first step. They go into the score cache as the run's
  scores would, so nothing is scored twice. An evaluator that asks a server is not measured
  (a dry run calls no server): its time stays unknown unless a rate shipped;
- what neither covers (building a job, its analyses and files; the systems' correlation's
  intervals; the process's start and the card's pages) is `SECONDS_PER_JOB` a method,
  `SECONDS_PER_CORRELATION` and `SECONDS_PER_CARD`, measured on the project's machine.

A text counts once for the card: a method's texts are net of the score cache and of the
methods before it (the originals every method scores are scored by the first). A method under
the sequential design counts its exhaustive plan, the most it can ask, and the card says the
least it can: every test settled at the first look, on the first `first_look` examples (and,
for the blind-spot tests, every example's original, which the design scores before its first
look).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from evalstress.analyses.verdicts import MIN_N
from evalstress.card.estimate import (
    SECONDS_PER_JOB,
    SECONDS_PER_TEXT,
    MethodEstimate,
    estimate_card,
    rate_key,
)
from evalstress.card.plan import CardPlan
from evalstress.card.run import CardOptions
from evalstress.engine.scoring import Scorer, configure_caches, open_run_cache
from evalstress.evaluators.base import ScoreRequest, create_evaluator

#: texts the rate is measured on at least (after the first, which loads the model)
MEASURE_TEXTS = 8
#: seconds of scoring the measurement aims at when the first texts were quicker
MEASURE_SECONDS = 8.0
#: texts the rate is measured on at most
MEASURE_MOST = 512
#: texts of one example taken together before the next example's (`example_order`)
PER_EXAMPLE = 32
#: seconds a text from which the measurement takes one text an example after its first step
SPREAD_ABOVE = 0.3
#: seconds a card takes beyond its methods: the process's start, the plan, card.json,
#: card.md, card.html and the figures, an atlas card's publication (bench/README.md,
#: "The dry run's estimate")
SECONDS_PER_CARD = 5.0
#: seconds the systems' human correlation takes beyond its scoring (its tau-b and alpha
#: intervals, bootstrapped over the examples)
SECONDS_PER_CORRELATION = 4.0
#: the in-process judge: a judge that asks no server
LOCAL_JUDGE = "judge:model=local"


@dataclass(frozen=True)
class Rate:
    """Seconds a text for the card's evaluator, and where that figure came from."""

    seconds: float | None
    #: seconds once per card that scores (the model's load and first call: a loaded model
    #: is shared by the card's methods), measured only
    load: float = 0.0
    #: texts scored here to measure it (now in the score cache)
    texts: int = 0
    source: str = ""
    #: the keys of those texts (the run finds them cached)
    scored: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def line(self) -> str:
        """The rate in words, with its source."""
        if self.seconds is None:
            return f"no rate: {self.source}"
        per = (f"{self.seconds * 1000:.2g} ms" if self.seconds < 0.1
               else f"{self.seconds:.3g} s")
        load = f", {self.load:.1f} s to load once" if self.load >= 0.05 else ""
        return f"{per} a text{load} ({self.source})"


@dataclass
class CardTime:
    """The card's dry run with its time: the methods' rows (texts net of the methods above),
    the rate, and the card's seconds (None: some method has no rate), with the least the
    sequential design can ask where a method runs under it."""

    rows: list[MethodEstimate]
    rate: Rate
    texts: int
    seconds: float | None
    #: sequential methods: the texts and seconds if every test settled at the first look
    least_texts: int | None = None
    least_seconds: float | None = None
    first_look: dict[str, int] = field(default_factory=dict)


def unmeasurable(plan: CardPlan) -> str | None:
    """Why the dry run may not score with the card's evaluator here, None when it may: one
    that asks a server (the in-process judge does not) or scores whole sets."""
    if plan.evaluator.asks_endpoint and rate_key(plan.evaluator.spec) != LOCAL_JUDGE:
        return "a dry run asks no server"
    if plan.evaluator.level == "corpus":
        return "a corpus-level evaluator scores whole sets, not texts"
    return None


def example_order(requests: Sequence[ScoreRequest], seed: int = 0,
                  group: int = PER_EXAMPLE) -> list[ScoreRequest]:
    """The requests in runs of up to `group` texts of one example (an example: its source and
    references), one run from each example in turn, the examples and each one's texts in a
    seeded order. Consecutive texts share their example, as in the run's chunks (an evaluator
    that prepares an example's references once spends here about what it spends there), and
    a sample of some hundred texts still spans many examples (their lengths differ)."""
    groups: dict[tuple[str, tuple[str, ...]], list[ScoreRequest]] = {}
    for request in sorted(requests, key=lambda r: r.key):
        groups.setdefault((request.source or "", tuple(request.references or ())),
                          []).append(request)
    chosen = random.Random(seed)
    keys = sorted(groups)
    chosen.shuffle(keys)
    for key in keys:
        chosen.shuffle(groups[key])
    out: list[ScoreRequest] = []
    for start in range(0, max((len(texts) for texts in groups.values()), default=0), group):
        for key in keys:
            out += groups[key][start:start + group]
    return out


def spread(done: Sequence[ScoreRequest], requests: Sequence[ScoreRequest], size: int
           ) -> list[ScoreRequest]:
    """`done`, then the other requests one text of each example in turn, `size` in all."""
    kept = {r.key for r in done}
    rest = [r for r in example_order(requests, group=1) if r.key not in kept]
    return [*done, *rest][:size]


def measure_rate(spec: str, requests: Sequence[ScoreRequest], options: CardOptions, *,
                 least: int = MEASURE_TEXTS, aim: float = MEASURE_SECONDS,
                 most: int = MEASURE_MOST) -> Rate:
    """Build the evaluator once and score some of `requests` through the score cache (see the
    module docstring): the first alone (the load), then `least`, then more up to `aim`
    seconds of scoring or `most` texts."""
    pool = example_order(requests)[:most + 1]
    if len(pool) < 2:
        return Rate(None, source="too few texts to score to measure a rate")
    evaluator = create_evaluator(spec)
    configure_caches([evaluator], options.cache_dir, options.no_cache)
    cache = open_run_cache(options.cache_dir, options.no_cache)
    try:
        scorer = Scorer(evaluator, cache)
        started = time.perf_counter()
        scorer.score(pool[:1])
        first = time.perf_counter() - started
        taken, took = 1, 0.0
        step = min(least, len(pool) - 1)
        while step > 0:
            started = time.perf_counter()
            scorer.score(pool[taken:taken + step])
            took += time.perf_counter() - started
            taken += step
            if took >= aim or taken >= len(pool):
                break
            if (took / (taken - 1) >= SPREAD_ABOVE and taken <= least + 1
                    and not evaluator.order_by_source):
                # a slow text: what an example shares is little beside it, and its cost
                # varies from example to example: the rest one text an example (not for an
                # evaluator that reuses an example's prompt, as a judge does)
                pool = spread(pool[:taken], requests, most + 1)
            wanted = math.ceil((taken - 1) * aim / max(took, 1e-6)) - (taken - 1)
            step = min(max(wanted, least), len(pool) - taken)
    finally:
        evaluator.close()
        if cache is not None:
            cache.close()
    rate = took / (taken - 1)
    kept = "kept in the score cache" if not options.no_cache else "not kept: --no-cache"
    return Rate(rate, max(0.0, first - rate), taken,
                f"measured now on {taken} of the texts to score, {kept}",
                tuple(r.key for r in pool[:taken]))


def shipped_rate(spec: str, rate: float | None = None) -> Rate:
    """The rate shipped with evalstress for the evaluator (or `rate`, the real atlas's entry),
    measured once on the project's 2-core machine; None where none shipped."""
    seconds = SECONDS_PER_TEXT.get(rate_key(spec), rate)
    if seconds is None:
        return Rate(None, source="none shipped for this evaluator, and none measured")
    return Rate(seconds, source="shipped: measured once on the project's 2-core machine, "
                                "not here")


def first_look(plan: CardPlan, design: dict[str, object]) -> int:
    """Examples of a sequential method's first look (`VerdictDesign.chunk_size`)."""
    n = len(plan.examples)
    looks = int(str(design.get("looks", 1)))
    return min(n, max(1, MIN_N, math.ceil(n / max(1, looks))))


def time_card(plan: CardPlan, options: CardOptions, *, measure: bool = True,
              shipped: float | None = None) -> CardTime:
    """The card's dry run (`estimate.estimate_card`) timed here: texts net of the methods
    above, the rate measured now (`measure`; else the shipped one, or `shipped` seconds a
    text where none ships), each method's seconds and the card's."""
    todo: dict[str, list[ScoreRequest]] = {}
    rows = estimate_card(plan, options, todo_out=todo)
    union: dict[str, ScoreRequest] = {}
    for requests in todo.values():
        for request in requests:
            union.setdefault(request.key, request)
    rate = shipped_rate(plan.evaluator.spec, shipped)
    measured: set[str] = set()
    why = unmeasurable(plan)
    if measure and why is None and union:
        try:
            rate = measure_rate(plan.evaluator.spec, list(union.values()), options)
        except (ValueError, ImportError, RuntimeError, OSError) as exc:  # said, not raised:
            # the card's own run says it in full
            reason = str(exc.args[0] if exc.args else exc).splitlines()[0]
            rate = replace(rate, source=f"not measured ({reason}); {rate.source}")
        if not options.no_cache:
            measured = set(rate.scored)
    elif measure:
        rate = replace(rate, source=f"not measured: {why or 'nothing left to score'}; "
                       + rate.source)
    seen = set(measured)
    methods = {m.key: m for m in plan.methods}
    total: float | None = SECONDS_PER_CARD
    least: float | None = SECONDS_PER_CARD
    texts = least_texts = 0
    loaded = False  # the model loads once a card: its methods share it
    looks: dict[str, int] = {}
    for row in rows:
        if not row.runs:
            continue
        if row.key in todo:
            mine = [r.key for r in todo[row.key] if r.key not in seen]
            seen.update(mine)
            row.texts = len(mine)
        count = int(row.texts or 0)
        texts += count
        method = methods.get(row.key)
        seconds = 0.0 if method is not None and method.kind == "part" else method_seconds(
            row, rate, load=not loaded)
        loaded = loaded or bool(count and seconds is not None)
        row.seconds = seconds
        share, first = 1.0, 0
        if method is not None and method.design:
            looks[row.key] = first_look(plan, dict(method.design))
            share = looks[row.key] / max(1, len(plan.examples))
            if method.design.get("kind") == "blindspot":  # every original before any look
                first = min(count, len(plan.examples))
        least_texts += first + round((count - first) * share)
        total = None if total is None or seconds is None else total + seconds
        least = (None if least is None or seconds is None
                 else least + at_first_look(seconds, row, rate, share, first))
    return CardTime(rows, rate, texts, total, least_texts if looks else None,
                    least if looks else None, looks)


def at_first_look(seconds: float, row: MethodEstimate, rate: Rate, share: float,
                  first: int = 0) -> float:
    """A method's least seconds when its run stops after the first look, which holds `share`
    of the examples: its planning and scoring in that share, its fixed costs whole, and the
    `first` texts it scores whatever the looks decide (a blind-spot design's originals)."""
    planning = row.plan_seconds or 0.0
    scoring = (int(row.texts or 0) - first) * (rate.seconds or 0.0)
    return seconds - (planning + scoring) * (1 - share)


def method_seconds(row: MethodEstimate, rate: Rate, load: bool = True) -> float | None:
    """A method's seconds: its planning as measured, a job's fixed share (the systems'
    correlation: its own), the model's load when `load` and it scores anything, its texts at
    the rate (None: no rate, or a method whose time this dry run cannot tell: an attack, the
    position test, consistency)."""
    if row.texts is None or row.key in ("adversarial", "position", "consistency"):
        return None
    if row.texts and rate.seconds is None:
        return None
    scoring = row.texts * (rate.seconds or 0.0) + (rate.load if load and row.texts else 0.0)
    fixed = SECONDS_PER_CORRELATION if row.key == "correlation" else SECONDS_PER_JOB
    return (row.plan_seconds or 0.0) + fixed + scoring


def duration_text(seconds: float) -> str:
    """Seconds in words: whole seconds up to 90, then minutes, then hours (one decimal)."""
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"~{seconds / 60:.1f} min"
    return f"~{seconds / 3600:.1f} h"


def time_lines(timed: CardTime) -> list[str]:
    """The dry run's last lines: the card's time (with the sequential design's least), where
    the rate came from, and what was scored to measure it."""
    if timed.seconds is None:
        untimed = [r.title for r in timed.rows if r.runs and r.seconds is None]
        known = SECONDS_PER_CARD + sum(r.seconds or 0.0 for r in timed.rows if r.runs)
        said = (f"Estimated time of the card: unknown: no time for {', '.join(untimed)}; the "
                f"rest {duration_text(known)}.")
    elif timed.least_seconds is not None:
        looks = ", ".join(f"{key} {n}" for key, n in timed.first_look.items())
        said = (f"Estimated time of the card: at most {duration_text(timed.seconds)} "
                f"({timed.texts:,} texts: every test on every example); at least "
                f"{duration_text(timed.least_seconds)} ({timed.least_texts:,} texts) if the "
                f"sequential design settles every test at its first look (examples: {looks}).")
    else:
        said = (f"Estimated time of the card: {duration_text(timed.seconds)} "
                f"({timed.texts:,} texts to score).")
    lines = [said, f"Rate: {timed.rate.line()}."]
    if timed.rate.texts:
        lines.append(f"Scored {timed.rate.texts} texts to time the evaluator (kept in the "
                     "score cache); nothing else was scored.")
    else:
        lines.append("Nothing was scored.")
    return lines
