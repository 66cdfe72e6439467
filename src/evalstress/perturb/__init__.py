"""Perturbations: registry, protocol and the built-in catalogue."""

from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Skip,
    Variant,
    get_perturbation,
    perturbation,
    registry,
)

__all__ = [
    "PerturbContext",
    "Perturbation",
    "Skip",
    "Variant",
    "get_perturbation",
    "perturbation",
    "registry",
]
