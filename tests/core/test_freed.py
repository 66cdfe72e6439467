"""Freed memory goes back to the system: what kept a run's peak growing with its size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads RssAnon from /proc and calls glibc")

SCRIPT = """
import json
import pyarrow as pa
from evalstress.core.freed import give_back

def anon():
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024

found = {}
blocks = [bytes(2000) for _ in range(50_000)]  # 100 MB from the C heap, past pymalloc's sizes
keep = bytes(2000)  # allocated above them: the heap cannot shrink from its top
found["c heap"] = [anon()]
del blocks
found["c heap"].append(anon())
give_back()
found["c heap"].append(anon())
table = pa.array(range(20_000_000))  # 160 MB from pyarrow's pool
found["arrow"] = [anon()]
del table
found["arrow"].append(anon())
give_back()
found["arrow"].append(anon())
print(json.dumps(found))
"""


def test_memory_freed_by_a_phase_stays_with_the_process_until_given_back() -> None:
    """100 MB freed on the C heap below a live block and 160 MB freed from pyarrow's pool stay
    in the process's resident memory (the allocators keep them for reuse), and the next phase's
    work would come on top; `give_back` returns at least 80% of each."""
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          check=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(src)})
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for name, freed in (("c heap", 100), ("arrow", 160)):
        live, after_free, after_give_back = found[name]
        assert live - after_free < 0.2 * freed, (name, found[name])  # kept by the allocator
        assert live - after_give_back > 0.8 * freed, (name, found[name])
