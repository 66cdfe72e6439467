"""bench/memory_scaling.py: its target line by hand, and a tiny run of it end to end."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = str(ROOT / "bench" / "memory_scaling.py")


def test_the_target_line_reads_the_ratio_of_the_two_sizes() -> None:
    bench = runpy.run_path(BENCH, run_name="bench")
    # 440 / 365 = 1.205..., 430 / 365 = 1.178...
    assert bench["verdict"]({100: 365.0, 1000: 440.0, 2000: 450.0}) == (
        "peak 1,000 / 100: 1.21 (target <= 1.2: MISSES)")
    assert bench["verdict"]({100: 365.0, 1000: 430.0}) == (
        "peak 1,000 / 100: 1.18 (target <= 1.2: meets)")
    assert bench["verdict"]({1000: 430.0}) is None


@pytest.mark.slow
def test_a_tiny_run_prints_each_size_and_its_phases(tmp_path: Path) -> None:
    data = tmp_path / "paragraphs.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Paragraph {i} has a few "
                                        "words in it. And a second sentence follows."}) + "\n"
                            for i in range(3)), encoding="utf-8")
    done = subprocess.run([sys.executable, BENCH, "--sizes", "1,3", "--data", str(data),
                           "-p", "truncation", "-e", "bleu", "--phases"],
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()
            if line.strip().split(" ")[0] in ("1", "3")]
    assert [r[0] for r in rows] == ["1", "3"] and rows[0][2] == "1.00"
    assert float(rows[1][1]) > 50  # MB: an interpreter with pyarrow loaded
    assert "Phases at 3 examples" in done.stdout and "join chunk parts" in done.stdout
