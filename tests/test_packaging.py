"""The package metadata builds without warnings: the license is an SPDX expression (PEP 639),
which the build backend named in [build-system] must be new enough to read."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_license_is_an_spdx_expression_the_backend_supports() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert data["project"]["license"] == "MIT"  # a string, not the deprecated {text=...} table
    setuptools = next(Requirement(r) for r in data["build-system"]["requires"]
                      if Requirement(r).name == "setuptools")
    # setuptools reads `license = "SPDX"` from version 77 on: no older one may build it
    assert not setuptools.specifier.contains(Version("76.9"))
    assert setuptools.specifier.contains(Version("77.0"))


def test_setuptools_reads_the_metadata_without_a_warning() -> None:
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the deprecated license table warns: fail on it
        dist = apply_configuration(Distribution(), str(PYPROJECT))
    assert dist.metadata.license_expression == "MIT"
