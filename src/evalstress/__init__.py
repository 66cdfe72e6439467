"""evalstress: stress tests for the metrics and LLM judges that score generated text."""

from __future__ import annotations

from typing import Any

from evalstress.core.version import __version__

__all__ = ["__version__", "card", "stress"]


def __getattr__(name: str) -> Any:
    """`evalstress.stress` and `evalstress.card` load their modules on first use, so `import
    evalstress` stays light."""
    if name == "stress":
        from evalstress.api import stress

        return stress
    if name == "card":
        import importlib

        return importlib.import_module("evalstress.card")  # a module one calls: card(...)
    raise AttributeError(f"module 'evalstress' has no attribute {name!r}")
