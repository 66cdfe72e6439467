"""Imports every built-in perturbation module so their decorators register them."""

from evalstress.perturb import (
    bias,
    characters,
    consistency,
    fluency,
    hierarchical,
    llm,
    model_based,
    probes,
)

__all__ = ["bias", "characters", "consistency", "fluency", "hierarchical", "llm", "model_based", "probes"]
