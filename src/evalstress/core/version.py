"""The package version, importable from any layer without loading the package's faces, and the
digest of the code itself: a version string names a release, but a source checkout changes
between releases, and a result made by other code must not be taken for this code's."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"

#: the installed package's folder
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=4)
def code_digest(root: Path = PACKAGE_ROOT) -> str:
    """sha256 over the package's files (code, suites, criteria, wording, corpus: relative path
    and bytes, in path order; compiled caches left out), so two installs of the same code agree
    and any edit to it changes the digest."""
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
