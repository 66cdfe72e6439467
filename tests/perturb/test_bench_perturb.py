"""bench/bench_perturb.py runs to its end on a machine without nlpaug (the `bench` extra)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_skips_the_nlpaug_comparison_with_a_note(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "nlpaug", None)  # as if not installed: import fails
    monkeypatch.setattr(sys, "argv", ["bench_perturb.py", "--limit", "2", "--seeds", "1"])
    runpy.run_path(str(ROOT / "bench" / "bench_perturb.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "2 WikiText paragraphs, 1 seeds" in out
    assert "ratio catalogue / parse" in out  # the benchmark itself ran
    last = out.strip().splitlines()[-1]
    assert "nlpaug is not installed" in last and "skipped" in last
