"""Where a card's methods score: on this machine, or on a Ray cluster (`--backend ray`).

The stress methods (blind spots, discernment, criteria, bias probes, and the consistency
method's reworded blind-spot runs) are jobs: under the Ray backend their shards of examples
are perturbed and scored as Ray tasks, as `evalstress run --backend ray` does. The studies
(the adversarial search, the position test, the consistency method's repeats, the systems'
correlation) score on this machine (the driver), as do the LLM judges of every method.

A card with the Ray backend joins the cluster (or starts a Ray here) once for all its
methods, and an atlas once for all its cards. card.json records, per method, where its run
scored (`run_backend`), and its cost counts the texts the shards scored (`shard_cost`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from evalstress.card.plan import CardPlan
from evalstress.card.run import CardError
from evalstress.engine.ray import RayError, ray_session


def needs_cluster(plans: Sequence[CardPlan], backend: str) -> bool:
    """Whether the cards would send any work to Ray: the Ray backend, and a stress method of
    an evaluator the tasks score (a judge's card scores on the driver and starts no Ray)."""
    return backend == "ray" and any(
        plan.evaluator.on_cluster and any(m.runs and m.kind == "job" for m in plan.methods)
        for plan in plans)


def open_cluster(plans: Sequence[CardPlan], backend: str, address: str | None) -> ExitStack:
    """One Ray session for the cards' methods when they need one (`needs_cluster`), to be
    closed by the caller after the last method; the cluster not joined, or the extra missing,
    is a CardError before any method runs."""
    stack = ExitStack()
    if needs_cluster(plans, backend):
        try:
            stack.enter_context(ray_session(address))
        except RayError as exc:
            raise CardError(f"--backend ray: {exc}") from None
    return stack


def run_backend(results: Mapping[str, Any]) -> dict[str, Any]:
    """Where a stress method's run scored, from its results.json: {"name": "local"}, or the
    Ray backend's shards and the nodes they ran on."""
    block = results.get("backend")
    if not isinstance(block, Mapping) or block.get("name") != "ray":
        return {"name": "local"}
    placement = block.get("placement") or []
    return {"name": "ray", "shards": int(block.get("shards") or 0),
            "nodes": len({p.get("node") for p in placement if p.get("node")}),
            "reused_shards": sum(1 for p in placement if p.get("reused"))}


def shard_cost(cost: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """A stress method's cost (`sections.job_cost`) with the texts its Ray shards scored
    counted as scored: the driver's pass found them in the cache the shards filled, and
    counted them as cached. Unchanged for a local run."""
    shards = ((results.get("backend") or {}).get("shard_stats") or {})
    stats: Mapping[str, Any] = next(iter(shards.values()), {}) if shards else {}
    if not stats:
        return dict(cost)
    scored = int(stats.get("scored") or 0)
    out = dict(cost)
    out["scored"] = int(cost.get("scored") or 0) + scored
    out["cached"] = max(0, int(cost.get("cached") or 0) - scored)
    out["calls"] = int(cost.get("calls") or 0) + int(stats.get("calls") or 0)
    return out
