"""AdvEval (paper 004): an LLM rewrites the text, guided by the gold-vs-victim disagreement.

Each iteration the generator sees the task, the optional criteria, the source and the top
candidates so far with their feedback S (ascending), and proposes `candidates` new texts. Usable
ones are scored by the gold judge and then by the victim; the search stops on success (eq. 3),
when S passes the stop threshold, after `max_iterations`, when the victim budget is spent, or
after `patience` iterations in a row without a usable candidate. The answer is the successful
candidate with the highest S, else the highest S found.

Every generation and every score is cached (the sample index of candidate c in iteration i is
i * candidates + c), so rerunning a killed attack replays it from the caches without a call.
"""

from __future__ import annotations

from typing import Any

from evalstress.llm.generate import GenerationJob, TextGenerator
from evalstress.studies.attack.base import AttackRecord, AttackSetup, finish
from evalstress.studies.attack.candidates import usable_candidates
from evalstress.studies.attack.prompt import TAG, build_messages
from evalstress.studies.attack.trajectory import Trajectory

METHOD = "adveval"


def adveval(setup: AttackSetup, generator: TextGenerator, *,
            criteria: str | None = None) -> AttackRecord:
    """Run the search for one example, victim and direction."""
    params = setup.params
    example = setup.example
    trajectory = Trajectory(setup.evaluate([example.hypothesis], 0, ["original"]))
    if not trajectory.items:
        return finish(setup, METHOD, trajectory, start="original", start_text=example.hypothesis,
                      stop="original-unscored", iterations=0)
    iterations, idle = 0, 0
    stop = setup.stopped(trajectory)
    calls: dict[str, Any] = {"generated": 0, "usable": 0}
    while stop is None:
        if iterations >= params.max_iterations:
            stop = "iterations"
            break
        iterations += 1
        messages = build_messages(example, trajectory.top(params.trajectory), criteria=criteria)
        first = iterations * params.candidates
        jobs = [GenerationJob.of(messages, first + c) for c in range(params.candidates)]
        answers = generator.generate_many(jobs)
        calls["generated"] += len(answers)
        texts = usable_candidates(answers, source=example.source, seen=trajectory,
                                  rejections=setup.rejections, tag=TAG)
        scored = setup.evaluate(texts, iterations) if texts else []
        calls["usable"] += len(texts)
        for candidate in scored:
            trajectory.add(candidate)
        idle = 0 if scored else idle + 1
        stop = setup.stopped(trajectory)
        if stop is None and idle >= params.patience:
            stop = "no-candidates"
    return finish(setup, METHOD, trajectory, start="original", start_text=example.hypothesis,
                  stop=stop, iterations=iterations, extra={"answers": calls,
                                                           "criteria": bool(criteria)})
