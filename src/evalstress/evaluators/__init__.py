"""Evaluators: registry, protocol and the built-in metrics."""

from evalstress.evaluators.base import (
    Evaluator,
    Score,
    ScoreRequest,
    create_evaluator,
    evaluator,
    registry,
)

__all__ = ["Evaluator", "Score", "ScoreRequest", "create_evaluator", "evaluator", "registry"]
