"""Imports every built-in perturbation module so their decorators register them."""

from evalstress.perturb import consistency, fluency, probes

__all__ = ["consistency", "fluency", "probes"]
