"""The attack's objective (paper 004): feedback S (eq. 2), success (eq. 3) and their parameters.

Both scores are on 0-100. Direction `good` looks for texts the gold evaluator rates high and the
victim rates low (good-but-underrated); `bad` for texts the gold rates low and the victim high
(bad-but-overrated).
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from evalstress.core.strict import unknown_name_error

Direction = Literal["good", "bad"]
DIRECTIONS: tuple[Direction, ...] = ("good", "bad")

#: How a search ends and which candidate it returns (see `AttackParams.stop_rule`).
STOP_RULES = ("first-success", "highest-feedback")
#: Whose details a search follows (see `AttackParams.protocol` and `protocol.py`).
PROTOCOLS = ("default", "paper")
#: Victim queries per search when none is given: paper 004's budget.
DEFAULT_BUDGET = 300


@dataclass(frozen=True)
class AttackParams:
    """Everything that shapes a search; `to_dict` gives the `params` block of results.json.

    Defaults are paper 004's: tau+ 70, tau- 30, delta 40, lambda 1, a 300-query victim budget
    (`DEFAULT_BUDGET`; `budget` None leaves it to the method: 300 for paper 004's methods, and
    for paper 002's appendix-j search what it needs to reach its noise target, as that paper
    bounds the search by the noise alone), 8 candidates per iteration, the top 10 of the
    trajectory in the prompt, at most 30 iterations, 8 gold samples. `stop_threshold` (S above
    which the search stops; 80 in the paper's released code) and `patience` (iterations in a
    row without one usable candidate before giving up; the released code gives up after 1) are
    ours to set.

    `rescore_final` (on under the paper protocol): once an AdvEval search has picked its text,
    ask the gold about it again on fresh samples (a judge's seeds moved past the search's) and
    judge eq. 3 on that score, as the released code's `evaluate()` rates the returned text
    anew. Off, the verdict uses the scores the search already had.

    `stop_rule` says when a search ends and what it returns:
    - `first-success` (our default): stop at the first candidate that meets eq. 3 and return the
      successful candidate with the highest S. It answers "did the search meet any text that
      fools the victim?", which counts a success the search would later have moved away from.
    - `highest-feedback` (paper 004, sec. 3.2, and its released code): stop only when S exceeds
      `stop_threshold` or the iterations (or budget) run out, return the candidate with the
      highest S (the latest among equals), and judge eq. 3 on that text alone.

    `protocol` (`default` or `paper`, set by `--protocol`) decides the details where paper 004's
    released code and ours differ and no other parameter names them; under `paper`:
    - eq. 3 compares strictly with the thresholds (gold above tau+, below tau-; appendix A.2);
    - S is rounded to one decimal, as the code's `combine_score`, before anything compares it;
    - the top-k the generator sees keeps the later of equal scores (the code's stable sort);
    - an iteration counts towards `patience` only when no answer held a parseable text (the
      code gives up only then), not when every text was a repeat or could not be scored;
    - the generator's prompt states the code's length bounds (`prompt.TASK_PROMPTS_PAPER`);
    - the victim-only ablation starts from another example's text only towards bad (sec. 4.6).
    """

    tau_plus: float = 70.0
    tau_minus: float = 30.0
    delta: float = 40.0
    lam: float = 1.0
    budget: int | None = None
    candidates: int = 8
    trajectory: int = 10
    max_iterations: int = 30
    gold_samples: int = 8
    stop_threshold: float | None = 80.0
    patience: int = 3
    seed: int = 0
    stop_rule: str = "first-success"
    protocol: str = "default"
    rescore_final: bool = False

    def __post_init__(self) -> None:
        if self.stop_rule not in STOP_RULES:
            raise unknown_name_error("stop rule", self.stop_rule, STOP_RULES)
        if self.protocol not in PROTOCOLS:
            raise unknown_name_error("attack protocol", self.protocol, PROTOCOLS)
        for name in ("budget", "candidates", "trajectory", "max_iterations", "gold_samples",
                     "patience"):
            if getattr(self, name) is not None and int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("tau_plus", "tau_minus"):
            if not 0 <= float(getattr(self, name)) <= 100:
                raise ValueError(f"{name} must lie on the 0-100 scale, got {getattr(self, name)}")
        if float(self.delta) < 0:
            raise ValueError(f"delta must be >= 0, got {self.delta}")

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> AttackParams:
        """Build from a mapping; `lambda` is accepted for `lam`; unknown keys are errors."""
        known = [f.name for f in fields(cls)]
        values: dict[str, Any] = {}
        for key, value in options.items():
            name = "lam" if key == "lambda" else key
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ValueError(f"unknown attack parameter '{key}'{hint}")
            values[name] = value
        return cls(**values)

    @property
    def victim_budget(self) -> int:
        """Victim queries per search: the given budget, else `DEFAULT_BUDGET` (a method that
        bounds its own search may size it instead, `AttackSetup.bound_budget`)."""
        return DEFAULT_BUDGET if self.budget is None else int(self.budget)

    @property
    def paper(self) -> bool:
        """True under `--protocol paper` (see the class docstring for what it changes)."""
        return self.protocol == "paper"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["lambda"] = out.pop("lam")
        return out


def feedback(direction: Direction, gold: float, victim: float, lam: float = 1.0) -> float:
    """Paper 004 eq. 2: S = lambda*gold - victim (good) or victim - lambda*gold (bad)."""
    if direction == "good":
        return lam * gold - victim
    if direction == "bad":
        return victim - lam * gold
    raise ValueError(f"unknown direction '{direction}'; choose good or bad")


def search_feedback(direction: Direction, gold: float, victim: float,
                    params: AttackParams) -> float:
    """S as a search compares it: eq. 2, rounded to one decimal under the paper protocol (the
    released code's `combine_score` rounds, which makes near-equal scores ties)."""
    s = feedback(direction, gold, victim, params.lam)
    return round(s, 1) if params.paper else s


def victim_feedback(direction: Direction, victim: float, params: AttackParams) -> float:
    """Feedback without a gold (paper 004's Table 8 ablation): eq. 2 with the gold score fixed
    at the direction's ideal, 100 for good and 0 for bad, so S = 100 * lambda - victim (good) or
    victim (bad), and S > 80 means a victim under 20 (good) or over 80 (bad)."""
    return search_feedback(direction, 100.0 if direction == "good" else 0.0, victim, params)


def succeeded(direction: Direction, gold: float, victim: float, params: AttackParams) -> bool:
    """Paper 004 eq. 3: a confident gold label and a gap of at least delta the wrong way.

    good: gold >= tau+ and gold - victim >= delta; bad: gold <= tau- and victim - gold >= delta.
    Under the paper protocol the gold must lie strictly beyond tau ("exceeding 70", "below
    30", appendix A.2): a gold of exactly 70 or 30 is no confident label there.
    """
    if direction == "good":
        confident = gold > params.tau_plus if params.paper else gold >= params.tau_plus
        return confident and gold - victim >= params.delta
    if direction == "bad":
        confident = gold < params.tau_minus if params.paper else gold <= params.tau_minus
        return confident and victim - gold >= params.delta
    raise ValueError(f"unknown direction '{direction}'; choose good or bad")


def victim_target(direction: Direction, params: AttackParams) -> float:
    """The victim score that would complete a success if the gold label held (tau+ - delta for
    good, tau- + delta for bad): where victim-only searches (TextFooler) stop."""
    if direction == "good":
        return params.tau_plus - params.delta
    return params.tau_minus + params.delta


def parse_directions(value: str) -> tuple[Direction, ...]:
    """`good`, `bad` or `both`."""
    if value == "both":
        return DIRECTIONS
    if value in DIRECTIONS:
        return (value,)
    raise ValueError(f"unknown direction '{value}'; choose good, bad or both")
