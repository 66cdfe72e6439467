"""Confidence intervals of proportions, for every layer that reports a rate over few trials.

The attack success rates of paper 004 (`analyses.adversarial`) and the precision and recall of
the LLM attacks' acceptance checks (`perturb.labelled`) are shares of a few dozen cases; the
Wilson score interval stays inside [0, 1] and keeps its coverage near 95% where the normal
approximation does not (a share of 8 out of 8 is not "certainly 1").
"""

from __future__ import annotations


def wilson(successes: int, attempts: int) -> tuple[float | None, float | None]:
    """Wilson score 95% interval of a proportion (scipy's binomtest); (None, None) without
    attempts."""
    if attempts == 0:
        return None, None
    from scipy.stats import binomtest

    ci = binomtest(successes, attempts).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)
