"""The YAML files the package ships read the same through the fast loader as through PyYAML's
reference `safe_load`: suites, criteria and attack prompts keep every value."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from evalstress.core.packaged import read_packaged_yaml

ROOT = Path(str(resources.files("evalstress")))
SHIPPED = sorted(p.relative_to(ROOT) for p in ROOT.rglob("*.yaml"))


def test_the_package_ships_the_yaml_files_runs_read() -> None:
    folders = {p.parts[0] for p in SHIPPED}
    assert {"suites", "criteria", "perturb"} <= folders


@pytest.mark.parametrize("relative", SHIPPED, ids=str)
def test_a_shipped_file_reads_as_safe_load_reads_it(relative: Path) -> None:
    reference = yaml.safe_load((ROOT / relative).read_text("utf-8"))
    assert read_packaged_yaml(*relative.parts) == reference
