"""Imports every built-in perturbation module so their decorators register them."""

from evalstress.perturb import (
    characters,
    consistency,
    fluency,
    hierarchical,
    llm,
    model_based,
    probes,
)

__all__ = ["characters", "consistency", "fluency", "hierarchical", "llm", "model_based", "probes"]
