"""The code's digest: the same code gives the same digest wherever it is installed, and an
edit to any of its files (code, suites, wording) changes it; compiled caches do not."""

from __future__ import annotations

import shutil
from pathlib import Path

from evalstress.core.version import PACKAGE_ROOT, code_digest


def _copy(to: Path) -> Path:
    return Path(shutil.copytree(PACKAGE_ROOT, to / "evalstress",
                                ignore=shutil.ignore_patterns("__pycache__")))


def test_the_same_code_in_two_places_has_one_digest(tmp_path: Path) -> None:
    assert code_digest(_copy(tmp_path / "a")) == code_digest(_copy(tmp_path / "b"))


def test_an_edit_to_code_or_wording_changes_the_digest(tmp_path: Path) -> None:
    first, second = _copy(tmp_path / "a"), _copy(tmp_path / "b")
    stats = second / "analyses" / "stats.py"
    stats.write_text(stats.read_text() + "\n# a change\n")
    assert code_digest(first) != code_digest(second)
    third = _copy(tmp_path / "c")
    suite = next(third.rglob("*.yaml"))
    suite.write_text(suite.read_text() + "\n")
    assert code_digest(third) not in {code_digest(first), code_digest(second)}


def test_compiled_caches_leave_the_digest_alone(tmp_path: Path) -> None:
    first, second = _copy(tmp_path / "a"), _copy(tmp_path / "b")
    cache = second / "core" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "version.cpython-311.pyc").write_bytes(b"\0compiled")
    assert code_digest(first) == code_digest(second)
