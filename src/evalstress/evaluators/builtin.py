"""Imports every built-in evaluator module so their decorators register them."""

from evalstress.evaluators import external, judge, lexical

__all__ = ["external", "judge", "lexical"]
