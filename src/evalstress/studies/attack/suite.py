"""The `adversarial` analysis a suite may name: it attacks the run's examples (paper 004) with
the settings of the suite's `options: {attack: {...}}` and returns the attack success rates.

It is a study, not a pure analysis: it scores texts itself, through the same caches as the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalstress.analyses.adversarial import AdversarialResult
from evalstress.analyses.registry import StudyContext, register_analysis
from evalstress.engine.result import RunResult
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.protocol import resolve
from evalstress.studies.attack.setup import build_attacker, close, parse_scale_references

ATTACK_KEYS = ("victims", "gold", "generator", "methods", "direction", "criteria", "reference",
               "ranges", "protocol", "scale_references", "scale_percentiles")


@register_analysis("adversarial", ("attack",), study=True)
def adversarial_analysis(run: RunResult, options: Mapping[str, Any],
                         study: StudyContext) -> AdversarialResult:
    """The `adversarial` analysis of a suite: attack the run's examples.

    Settings come from the suite's `options: {attack: {...}}`: `gold` (required), `generator`
    (for adveval), `methods` (default adveval), `victims` (default: every evaluator aspect of the
    run), `direction`, `criteria`, `reference`, `ranges`, `scale_references` (a list of
    [NAME=]FILE), `scale_percentiles`, `protocol` (default or paper, as `evalstress attack
    --protocol`), and the parameters of `AttackParams` (budget, tau_plus, stop_rule, ...).
    It scores through the job's caches (`study`); attacks.jsonl goes to the run directory."""
    settings = dict(options.get("attack") or {})
    if not settings.get("gold"):
        raise ValueError("the adversarial analysis needs a gold judge: add options: {attack: "
                         "{gold: 'judge:model=NAME,base_url=URL', generator: ...}} to the suite")
    picked = {k: settings.pop(k) for k in ATTACK_KEYS if k in settings}
    chosen = resolve(picked.get("protocol"), stop_rule=settings.pop("stop_rule", None),
                     reference=picked.get("reference"), patience=settings.pop("patience", None),
                     generator=picked.get("generator"),
                     rescore_final=settings.pop("rescore_final", None))
    params = AttackParams.from_options({**settings, "stop_rule": chosen.stop_rule,
                                        "patience": chosen.patience,
                                        "protocol": chosen.protocol,
                                        "rescore_final": chosen.rescore_final})
    victims = picked.get("victims")
    if not victims:
        pairs = run.table[["evaluator", "aspect"]].drop_duplicates().itertuples(index=False)
        by_label: dict[str, list[str]] = {}
        for label, aspect in pairs:
            by_label.setdefault(label, []).append(aspect)
        specs = run.specs  # labels are for display: the evaluators are built again by spec
        victims = [specs.get(label, label) if len(aspects) == 1
                   else f"{specs.get(label, label)}@{aspect}"
                   for label, aspects in by_label.items() for aspect in aspects]

    def as_list(value: Any) -> list[str]:
        return [value] if isinstance(value, str) else list(value or [])

    references = parse_scale_references(
        as_list(picked.get("scale_references")),
        percentiles=str(picked.get("scale_percentiles", "5:95")))
    attacker = build_attacker(
        run.plan.examples, victims=as_list(victims), gold=as_list(picked["gold"]),
        generator=chosen.generator, methods=as_list(picked.get("methods") or "adveval"),
        direction=str(picked.get("direction", "both")), params=params,
        criteria=picked.get("criteria"), reference=chosen.reference,
        ranges=as_list(picked.get("ranges")), scale_references=references,
        cache=study.cache, cache_dir=study.cache_dir,
        no_cache=study.no_cache)
    try:
        records = attacker.run(study.folder / "attacks.jsonl")
    finally:
        close(attacker)
    return attacker.result(records)
