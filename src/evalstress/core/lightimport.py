"""Import a library without optional dependencies it loads eagerly but evalstress never uses
through it: thinc (under spaCy) imports torch to offer torch layers, nltk imports scipy and
scikit-learn for its collocation tests and classifier wrappers. Each is a second of a run's
start, paid again in every helper process.

While the block imports, the refused packages look uninstalled to this thread only; a package
already loaded is never refused (the library binds what is there), and nothing is refused when
the library itself is loaded already. After the block, the refused packages import as usual.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
import threading
from collections.abc import Iterator
from typing import Any


class _Refused(importlib.abc.MetaPathFinder):
    """Answers "not installed" for `names` and their submodules, to one thread."""

    def __init__(self, names: frozenset[str]):
        self.names = names
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


@contextlib.contextmanager
def importing_without(library: str, *refused: str) -> Iterator[None]:
    """Import `library` in the block with the packages `refused` out of sight (see the module
    docstring)."""
    names = frozenset(name for name in refused if name not in sys.modules)
    if library in sys.modules or not names:
        yield
        return
    finder = _Refused(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
