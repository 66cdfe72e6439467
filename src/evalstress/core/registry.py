"""One registry shape for everything a user names: perturbations, evaluators, analyses.

Each kind is a `Registry`: a decorator registers an entry under its name (twice is an error,
so two plugins cannot silently shadow each other), the built-in module and the installed
entry points load once on first use, and an unknown name is an `UnknownNameError` with a
did-you-mean and the command that lists the known names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from evalstress.core.strict import UnknownNameError, did_you_mean

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind (see the module docstring)."""

    def __init__(self, kind: str, *, builtin: str | tuple[str, ...], group: str | None = None,
                 listing: str = ""):
        self.kind = kind
        # the modules whose import registers the built-in entries, loaded by name like a plugin
        self._builtin = (builtin,) if isinstance(builtin, str) else builtin
        self._group = group
        self._listing = listing
        self._entries: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the class or function under `name` (and set its `name`)."""

        def add(entry: T) -> T:
            self.add(name, entry)
            if isinstance(entry, type):
                entry.name = name  # type: ignore[attr-defined]
            return entry

        return add

    def add(self, name: str, entry: T, *, replace: bool = False) -> None:
        """Register `entry` under `name`; a second, different entry is an error unless
        `replace` (entries rebuilt from data, such as prompt files read again)."""
        if not replace and name in self._entries and self._entries[name] is not entry:
            raise ValueError(f"{self.kind} '{name}' is registered twice")
        self._entries[name] = entry

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in self._builtin:
            importlib.import_module(module)
        if self._group:
            for ep in entry_points(group=self._group):
                ep.load()

    def all(self) -> dict[str, T]:
        """Every entry by name, sorted."""
        self._load()
        return dict(sorted(self._entries.items()))

    def names(self) -> list[str]:
        return list(self.all())

    def get(self, name: str) -> T:
        """The entry of `name`; an unknown name is an error with a did-you-mean."""
        entries = self.all()
        if name not in entries:
            see = f" See: {self._listing}" if self._listing else ""
            raise UnknownNameError(f"unknown {self.kind} '{name}'."
                                   f"{did_you_mean(name, entries)}{see}")
        return entries[name]


__all__ = ["Registry"]
