"""bench/bench_scale.py: the scale bench's arithmetic, and its quick mode end to end."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = str(ROOT / "bench" / "bench_scale.py")


def stats(wall: float, parent_mb: float, worker_mb: float, run_mb: float,
          cache_mb: float) -> dict[str, Any]:
    return {"wall": wall, "rss_mb": parent_mb, "worker_rss_mb": worker_mb, "run_mb": run_mb,
            "cache_mb": cache_mb, "largest_mb": max(parent_mb, worker_mb), "parent_share": 0.1,
            "load": 1.0}


def test_ratios_targets_and_extrapolation_are_computed_by_hand() -> None:
    bench = runpy.run_path(BENCH, run_name="bench")
    results = {
        (250, 1): stats(250.0, 900.0, 0.0, 100.0, 25.0),
        (1000, 1): stats(1000.0, 1000.0, 0.0, 400.0, 100.0),
        (250, 2): stats(150.0, 600.0, 800.0, 100.0, 25.0),
        (1000, 2): stats(560.0, 600.0, 1040.0, 400.0, 100.0),
    }
    lines = bench["summarise"](results, [250, 1000], [1, 2])
    text = "\n".join(lines)
    # the largest process: the parent serially (1000/900), a worker with two (1040/800)
    assert "N=1000 / N=250, workers=1: 1.11 (target <= 1.2: meets)" in text
    assert "N=1000 / N=250, workers=2: 1.30 (target <= 1.2: MISSES)" in text
    assert "wall, 2 workers / 1, N=1000: 0.560 (target <= 0.52 at N=1000: MISSES)" in text
    assert "wall, 2 workers / 1, N=250: 0.600;" in text  # no target at other sizes
    # 1 s per example -> 100,000 s = 27.8 h; (400 + 100) MB / 1000 examples -> 50 GB;
    # memory: 1000 MB + (1000 - 900) / 750 MB per example * 99,000 examples = 14,200 MB
    assert ("workers=1 (this machine, from N=1000): 27.8 h, 50.0 GB on disk, peak RSS of the "
            "largest process ~14,200 MB") in text
    # 0.56 s per example -> 15.6 h; 1040 + 240 / 750 * 99,000 = 32,720 MB
    assert "workers=2 (this machine, from N=1000): 15.6 h, 50.0 GB on disk" in text
    assert "~32,720 MB" in text


@pytest.mark.long_run  # runs the bench's quick mode end to end: about 25 s
def test_quick_mode_prints_every_run_and_the_ratios(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_scale.py", "--quick"])
    runpy.run_path(BENCH, run_name="__main__")
    out = capsys.readouterr().out
    rows = {(int(f[0]), int(f[1])): f for f in (line.split() for line in out.splitlines())
            if len(f) == 10 and f[0].isdigit()}
    assert set(rows) == {(4, 1), (8, 1), (4, 2), (8, 2)}
    for (_, workers), fields in rows.items():
        assert fields[4] == "100%" if workers == 1 else int(fields[4].rstrip("%")) < 100
        assert float(fields[5]) > 100  # the runner's process holds spaCy at least
        assert (float(fields[6]) > 100) == (workers == 2)  # a worker exists only with 2
        assert float(fields[7]) > 0  # variants and scores were written
    assert "N=8 / N=4, workers=1:" in out and "N=8 / N=4, workers=2:" in out
    assert "wall, 2 workers / 1, N=8:" in out
    assert out.count("extrapolated to 100,000 examples") == 2
