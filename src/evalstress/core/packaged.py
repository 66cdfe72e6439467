"""YAML files that ship inside the package (suites, criteria, the LLM attacks' prompts).

They are read on every run, many at import time of the registries, so they go through libyaml
(`yaml.CSafeLoader`) when PyYAML was built with it: the same data, many times faster
than the pure-Python loader (bench/README.md, "Figures behind the code"). A user's YAML keeps
`yaml.safe_load`, whose error messages the file readers quote.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_packaged_yaml(text: str) -> Any:
    """The data of a YAML text the package ships (trusted: no error message to shape)."""
    return yaml.load(text, Loader=_LOADER)  # a safe loader, in C where there is one


def read_packaged_yaml(*parts: str) -> Any:
    """The data of the shipped file evalstress/<parts...>, e.g. ("criteria", "aspects.yaml")."""
    resource = resources.files("evalstress").joinpath(*parts)
    return parse_packaged_yaml(resource.read_text("utf-8"))
