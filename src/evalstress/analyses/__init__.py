"""Analyses: pure functions of the score table that return serializable results."""

from evalstress.analyses.blindspot import BlindspotResult, blindspot
from evalstress.analyses.registry import analysis_names, register_analysis, run_analyses

__all__ = ["BlindspotResult", "analysis_names", "blindspot", "register_analysis", "run_analyses"]
