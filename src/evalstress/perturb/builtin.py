"""Imports every built-in perturbation module so their decorators register them."""

from evalstress.perturb import consistency, fluency, probes
from evalstress.perturb import model_based

__all__ = ["consistency", "fluency", "model_based", "probes"]
