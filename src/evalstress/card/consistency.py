"""The card's consistency method: how far an LLM judge agrees with itself (docs/judges.md,
"Consistency"), and the judge's identity, recorded once it has answered.

On a seeded subset of the card's originals (`plan.CONSISTENCY`: 8, 30 or 60 by budget):

1. Repeats. Each original is asked k times (3 on the small budget, 5 otherwise) at the
   judge's configured temperature (answers compared as written, read back from the response
   cache; their ratings' spread beside): the judge with `n=k` and no re-asks, so sample i is keyed
   by its index (and sent with seed + i) exactly as `n=` samples are, and a rerun reads the
   same k answers from the response cache. Sample 0 is the request the other methods sent.
2. Rewording. The originals are rated as written and under each rewording of the criteria
   (`criterion_variant=1`, `=2`: criteria/paraphrases.yaml): the paired shift per aspect.
3. Verdicts between wordings. The blind-spot suite (one seed) runs on the same items under each
   wording, into `runs/consistency/wording-<v>/`; the card counts the (aspect, perturbation)
   verdicts that differ from the run as written. Its cost is bounded: 1 + rewordings small
   blind-spot runs on at most 60 items; the response cache shares what the wordings have in
   common.

Statistics: `analyses.consistency`. Results: `runs/consistency/consistency.json`, reused by a
card made again with the same settings.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalstress.analyses.consistency import repeat_row, shift_rows, verdict_changes
from evalstress.card.plan import (
    CONSISTENCY_FILE,
    CONSISTENCY_SUITE,
    CardPlan,
    MethodPlan,
    unmet_perturbations,
)
from evalstress.card.run import (
    METHOD_ERRORS,
    CardOptions,
    MethodOutcome,
    finished_results,
    run_dir_of,
    run_study,
    stress_job_of,
)
from evalstress.core.data import Example
from evalstress.core.wording import plural
from evalstress.engine.scoring import configure_caches, request_for
from evalstress.evaluators.base import Score, create_evaluator, parse_spec
from evalstress.evaluators.judge import JudgeEvaluator
from evalstress.evaluators.judge_identity import judge_identity, prompt_messages
from evalstress.job import run_job
from evalstress.report.rundir import read_run

#: the subset's seed
SEED = 0
#: where each wording's blind-spot run goes, under the method's folder
WORDING_DIR = "wording-{}"
DETERMINISM = ("at temperature 0 the repeats test the endpoint's determinism (does it answer "
               "one request the same way each time), not the judge's sampling")


def subset(examples: Sequence[Example], items: int) -> list[Example]:
    """`items` of the examples drawn with a fixed seed, kept in the card's order."""
    if items >= len(examples):
        return list(examples)
    chosen = sorted(random.Random(SEED).sample(range(len(examples)), items))
    return [examples[i] for i in chosen]


def spec_with(spec: str, key: str, value: Any) -> str:
    """The evaluator spec with one more setting."""
    return f"{spec}{',' if ':' in spec else ':'}{key}={value}"


def built_judge(spec: str | Mapping[str, Any], options: CardOptions) -> JudgeEvaluator:
    judge = create_evaluator(spec)
    if not isinstance(judge, JudgeEvaluator):
        judge.close()
        raise ValueError("the consistency method asks an LLM judge (judge:...)")
    configure_caches([judge], options.cache_dir, options.no_cache)
    return judge


def ratings(judge: JudgeEvaluator, examples: Sequence[Example], k: int,
            texts: dict[str, list[list[str | None]]] | None = None
            ) -> dict[str, list[list[float | None]]]:
    """Each aspect's ratings of each original: the k samples' ratings (None where an answer
    had none), or the one combined score when k is 1. `texts`, when given, receives each
    item's k answers as written (`answer_texts`)."""
    rows = judge.score_batch([request_for(e, e.hypothesis) for e in examples])
    out: dict[str, list[list[float | None]]] = {a: [] for a in judge.aspects}
    for row in rows:
        for aspect in judge.aspects:
            score = row[aspect]
            if texts is not None:
                texts.setdefault(aspect, []).append(answer_texts(judge, score, k))
            if k == 1:
                out[aspect].append([score.value])
                continue
            samples = [float(v) for v in (score.extra or {}).get("samples") or []]
            out[aspect].append([*samples, *[None] * (k - len(samples))][:k] if score.ok
                               else [None] * k)
    return out


def answer_texts(judge: JudgeEvaluator, score: Score, k: int) -> list[str | None]:
    """The k answers behind a score as the model wrote them, read back from the response
    cache by their keys (None where not stored: the cache is off, or an answer failed)."""
    keys = [str(key) for key in (score.extra or {}).get("response_keys") or []][:k]
    found = judge.client.cached(keys) if keys else {}
    written = [found[key].text.strip() if key in found else None for key in keys]
    return [*written, *[None] * (k - len(written))]


def usage_of(judge: JudgeEvaluator) -> dict[str, int]:
    usage = judge.usage
    return {"calls": usage.calls, "cached": usage.cache_hits,
            "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}


def add_usage(total: dict[str, int], more: Mapping[str, Any]) -> None:
    for key in ("calls", "cached", "prompt_tokens", "completion_tokens"):
        total[key] = total.get(key, 0) + int(more.get(key) or 0)


def wording_outcomes(plan: CardPlan, spec: str, items: Sequence[Example], run_dir: Path,
                     options: CardOptions) -> tuple[dict[tuple[str, str], str], dict[str, Any]]:
    """The blind-spot suite on the items with this spec: each (aspect, perturbation)'s
    outcome, and the job's cost (reused when finished with the same settings)."""
    method = MethodPlan("blindspot", True, suite=CONSISTENCY_SUITE, seeds=1,
                        analyses=("blindspot",),
                        left_out=unmet_perturbations(CONSISTENCY_SUITE, "default"))
    worded = replace(plan, evaluator=replace(plan.evaluator, spec=spec), examples=tuple(items),
                     methods=(method,))
    results = finished_results(run_dir, worded.fingerprint("blindspot"))
    if results is None:
        run_job(stress_job_of(worded, method, options, run_dir))
        results = read_run(run_dir)
    rows = ((results.get("analyses") or {}).get("blindspot") or {}).get("rows") or []
    outcomes = {(str(r.get("aspect")), str(r.get("perturbation"))): str(r.get("outcome"))
                for r in rows if r.get("outcome")}
    entry: Mapping[str, Any] = next(iter((results.get("evaluators") or {}).values()), {})
    usage = entry.get("usage") or {}
    return outcomes, {"calls": usage.get("calls"), "cached": usage.get("cache_hits"),
                      "prompt_tokens": usage.get("prompt_tokens"),
                      "completion_tokens": usage.get("completion_tokens")}


def measure(plan: CardPlan, method: MethodPlan, options: CardOptions) -> dict[str, Any]:
    """The method's results: repeats, rewording shifts, verdict changes, identity, cost."""
    items = subset(plan.examples, int(method.settings["items"]))
    k, variants = int(method.settings["repeats"]), int(method.settings["rewordings"])
    spec = plan.evaluator.spec
    name, params = parse_spec(spec)
    cost: dict[str, int] = {}
    notes: list[str] = []
    base = built_judge(spec, options)
    try:
        written = ratings(base, items, 1)
        add_usage(cost, usage_of(base))
        identity = judge_identity(base)
        temperature, shown, samples = base.temperature, prompt_messages(base), base.n
    finally:
        base.close()
    repeat = built_judge({"evaluator": name, **params, "n": k, "temperature": temperature,
                          "max_reasks": 0}, options)
    try:
        texts: dict[str, list[list[str | None]]] = {}
        repeated = ratings(repeat, items, k, texts)
        add_usage(cost, usage_of(repeat))
    finally:
        repeat.close()
    if temperature == 0:
        notes.append(DETERMINISM)
    if samples > 1:
        notes.append(f"the judge averages {samples} samples into each score; the repeats are "
                     "single answers, so its scores vary less than they do")
    reworded: dict[int, dict[str, list[float | None]]] = {}
    for variant in range(1, variants + 1):
        judge = built_judge(spec_with(spec, "criterion_variant", variant), options)
        try:
            if prompt_messages(judge) == shown:
                notes.append("its criteria read the same in every wording (a level or a "
                             "template that does not show the definition): nothing reworded")
                break
            reworded[variant] = {a: [r[0] for r in v]
                                 for a, v in ratings(judge, items, 1).items()}
            add_usage(cost, usage_of(judge))
        finally:
            judge.close()
    shifts, alpha_eff = shift_rows({a: [r[0] for r in v] for a, v in written.items()},
                                   reworded)
    verdicts = compare_wordings(plan, spec, items, sorted(reworded), options, cost)
    rows = [repeat_row(a, v, k, texts.get(a)) for a, v in repeated.items()]
    return {"results": {"items": len(items), "item_ids": [e.id for e in items], "repeats": k,
                        "temperature": temperature, "repeat_rows": rows,
                        "shift_rows": shifts, "alpha_eff": alpha_eff,
                        "correction": "bh", "verdicts": verdicts, "notes": notes},
            "summary": summary(rows, shifts, verdicts, len(items), k),
            "cost": cost, "identity": identity}


def compare_wordings(plan: CardPlan, spec: str, items: Sequence[Example],
                     variants: Sequence[int], options: CardOptions,
                     cost: dict[str, int]) -> dict[str, Any]:
    """The blind-spot verdicts of each rewording against those as written."""
    if not variants:
        return {"compared": 0, "changed": [], "runs": {}}
    folder = run_dir_of(options.out, "consistency")
    runs: dict[str, str] = {}
    outcomes: dict[int, dict[tuple[str, str], str]] = {}
    for variant in [0, *variants]:
        run_dir = folder / WORDING_DIR.format(variant)
        worded = spec if variant == 0 else spec_with(spec, "criterion_variant", variant)
        outcomes[variant], used = wording_outcomes(plan, worded, items, run_dir, options)
        add_usage(cost, used)
        runs[str(variant)] = run_dir.relative_to(options.out).as_posix()
    changed = [{**change, "variant": v} for v in variants
               for change in verdict_changes(outcomes[0], outcomes[v])]
    compared = sum(1 for v in variants for key in outcomes[0] if key in outcomes[v])
    return {"compared": compared, "changed": changed, "runs": runs,
            "suite": CONSISTENCY_SUITE, "seeds": 1}


def summary(rows: Sequence[Mapping[str, Any]], shifts: Sequence[Mapping[str, Any]],
            verdicts: Mapping[str, Any], items: int, k: int) -> str:
    identical = sum(int(r["identical"]) for r in rows)
    complete = sum(int(r["items"]) for r in rows)
    moved = sum(1 for s in shifts if s["outcome"] in ("moves up", "moves down"))
    return (f"{identical} of {complete} items gave {k} identical answers; {moved} of "
            f"{plural(len(shifts), 'rewording test')} moved the score; "
            f"{len(verdicts['changed'])} of {verdicts['compared']} blind-spot verdicts changed "
            f"between wordings ({plural(items, 'item')})")


def run_consistency(plan: CardPlan, method: MethodPlan, options: CardOptions) -> MethodOutcome:
    """The method in the card's folder: reused when its file records the same fingerprint,
    else measured and written."""
    if not method.runs:
        return MethodOutcome(method.key, "not run")
    settings = method.settings
    doing = (f"{plural(int(settings['items']), 'item')}, {settings['repeats']} repeats, "
             f"{settings['rewordings']} rewordings, the {CONSISTENCY_SUITE} suite per wording")
    return run_study(plan, method, options, CONSISTENCY_FILE, doing,
                     lambda: measure(plan, method, options), (*METHOD_ERRORS, KeyError))
