"""Analyses: pure functions of the score table that return serializable results."""

from evalstress.analyses.blindspot import BlindspotResult, blindspot

__all__ = ["BlindspotResult", "blindspot"]
