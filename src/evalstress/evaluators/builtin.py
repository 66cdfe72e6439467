"""Imports every built-in evaluator module so their decorators register them."""

from evalstress.evaluators import external, lexical

__all__ = ["external", "lexical"]
