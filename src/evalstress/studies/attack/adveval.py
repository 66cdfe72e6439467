"""AdvEval (paper 004): an LLM rewrites the text, guided by the gold-vs-victim disagreement.

Each iteration the generator sees the task, the optional criteria, the source and the top
candidates so far with their feedback S (ascending), and proposes `candidates` new texts. Usable
ones are scored by the gold judge and then by the victim; the search stops as the stop rule says
(`AttackParams.stop_rule`: on the first eq. 3 success, or only when S passes the threshold),
after `max_iterations`, when the victim budget is spent, or after `patience` iterations in a row
without a usable candidate (under the paper protocol: without a parseable text, as the released
code), and returns the text its rule picks (`Trajectory.best`). With `rescore_final` (the paper
protocol) the gold rates that text again on fresh samples and eq. 3 is judged on that rating
(the search-time verdict is kept, and says so in `extra.rescored`, if the fresh one is missing).

`adveval-victim` is the paper's Table 8 ablation: the same loop guided by the victim alone
(`objective.victim_feedback`), started from another example's text (a good original would end a
bad-direction search at once; the paper protocol starts so only towards bad), the gold asked only
about the text it returns.

Every generation and every score is cached (the sample index of candidate c in iteration i is
i * candidates + c), so rerunning a killed attack replays it from the caches without a call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalstress.llm.generate import GenerationJob, TextGenerator
from evalstress.studies.attack.base import AttackRecord, AttackSetup, finish, start_point
from evalstress.studies.attack.candidates import new_texts, parsed_texts
from evalstress.studies.attack.objective import victim_feedback
from evalstress.studies.attack.prompt import TAG, build_messages
from evalstress.studies.attack.trajectory import Candidate, Trajectory

METHOD = "adveval"
VICTIM_ONLY = "adveval-victim"


def _search(setup: AttackSetup, generator: TextGenerator, trajectory: Trajectory,
            score: Callable[[list[str], int], list[Candidate]],
            stopped: Callable[[Trajectory], str | None], criteria: str | None
            ) -> tuple[str, int, dict[str, Any]]:
    """The generate-score loop; returns (stop reason, iterations, answer counts)."""
    params, example = setup.params, setup.example
    iterations, idle = 0, 0
    stop = stopped(trajectory)
    calls: dict[str, Any] = {"generated": 0, "usable": 0}
    while stop is None:
        if iterations >= params.max_iterations:
            stop = "iterations"
            break
        iterations += 1
        history = trajectory.top(params.trajectory, later_ties=params.paper)
        messages = build_messages(example, history, criteria=criteria, paper=params.paper)
        first = iterations * params.candidates
        jobs = [GenerationJob.of(messages, first + c) for c in range(params.candidates)]
        answers = generator.generate_many(jobs)
        calls["generated"] += len(answers)
        parsed = parsed_texts(answers, rejections=setup.rejections, tag=TAG)
        texts = new_texts(parsed, source=example.source, seen=trajectory,
                          rejections=setup.rejections)
        scored = score(texts, iterations) if texts else []
        calls["usable"] += len(texts)
        for candidate in scored:
            trajectory.add(candidate)
        # the paper's code gives up only on an iteration without one parseable text; ours
        # also on one whose texts were all repeats, copies of the source or left unscored
        idle = 0 if (parsed if params.paper else scored) else idle + 1
        stop = stopped(trajectory)
        if stop is None and idle >= params.patience:
            stop = "no-candidates"
    return stop, iterations, calls


def adveval(setup: AttackSetup, generator: TextGenerator, *,
            criteria: str | None = None) -> AttackRecord:
    """Run the search for one example, victim and direction."""
    example = setup.example
    trajectory = Trajectory(setup.evaluate([example.hypothesis], 0, ["original"]))
    if not trajectory.items:
        return finish(setup, METHOD, trajectory, start="original", start_text=example.hypothesis,
                      stop="original-unscored", iterations=0)
    stop, iterations, calls = _search(setup, generator, trajectory, setup.evaluate,
                                      setup.stopped, criteria)
    extra: dict[str, Any] = {"answers": calls, "criteria": bool(criteria)}
    result = None
    if setup.params.rescore_final:
        chosen = trajectory.best(setup.params.stop_rule)
        assert chosen is not None
        result = setup.rescore(chosen)
        extra["rescored"] = {"search_gold": chosen.gold, "search_success": chosen.success,
                             "gold": result.gold if result else None}
        if result is not None:
            trajectory.add(result)
    return finish(setup, METHOD, trajectory, start="original", start_text=example.hypothesis,
                  stop=stop, iterations=iterations, result=result, extra=extra)


def victim_only_start(setup: AttackSetup) -> str:
    """Where the victim-only search starts when the method spec does not say: from another
    example's text, except towards good under the paper protocol, where sec. 4.6 starts from
    the original (the random start is there only to keep a bad-direction search from ending
    on its first text)."""
    if setup.params.paper and setup.direction == "good":
        return "original"
    return "random"


def adveval_victim_only(setup: AttackSetup, generator: TextGenerator, *,
                        criteria: str | None = None, start: str | None = None) -> AttackRecord:
    """The victim-guided search: S from the victim alone, stop at S > threshold (or the
    iterations, budget or patience), return the highest S, and let the gold judge that text.
    `start`: original or random (default: `victim_only_start`)."""
    params = setup.params
    label, text = start_point(setup, start or victim_only_start(setup))

    def score(texts: list[str], iteration: int) -> list[Candidate]:
        out = []
        for t, m in zip(texts, setup.victim_scores(texts), strict=False):
            if m.value is None:
                setup.rejections["victim-missing"] += 1
                continue
            out.append(Candidate(t, iteration, None, m.value,
                                 victim_feedback(setup.direction, m.value, params), False,
                                 m.raw, note=label if iteration == 0 else ""))
        return out

    def stopped(trajectory: Trajectory) -> str | None:
        threshold = params.stop_threshold
        if threshold is not None and any(c.feedback > threshold for c in trajectory.items):
            return "threshold"
        return "budget" if setup.budget.exhausted else None

    trajectory = Trajectory(score([text], 0))
    if not trajectory.items:
        return finish(setup, VICTIM_ONLY, trajectory, start=label, start_text=text,
                      stop="original-unscored", iterations=0, rule="highest-feedback")
    stop, iterations, calls = _search(setup, generator, trajectory, score, stopped, criteria)
    best = trajectory.best("highest-feedback")
    assert best is not None
    judged = setup.judge_final(best.text, best.iteration, best.victim, best.victim_raw,
                               "returned by the victim-only search")
    if judged is not None:
        trajectory.add(judged)
    return finish(setup, VICTIM_ONLY, trajectory, start=label, start_text=text, stop=stop,
                  iterations=iterations, result=judged, rule="highest-feedback",
                  extra={"answers": calls, "criteria": bool(criteria),
                         "feedback": "victim only"})
