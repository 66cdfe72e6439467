"""Imports every built-in perturbation module so their decorators register them."""

from evalstress.perturb import consistency, fluency, model_based, probes

__all__ = ["consistency", "fluency", "model_based", "probes"]
