"""A worker process watches its parent from its first moment: a worker whose parent was
killed (kill -9, no chance to stop the pool) exits by itself, also while it still loads the
run's machinery."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC)}


def test_a_process_whose_parent_is_gone_exits_within_a_second() -> None:
    """Counted, not timed: the child's main thread prints a tick every 0.01 s of sleep while
    the watcher checks every 0.1 s; both sleep in the same process, so the ticks it got out
    before the exit measure the watcher's delay in its own time, however loaded the machine."""
    # the watched pid is not this child's parent: as after a kill -9, when init adopted it
    code = textwrap.dedent("""
        import time
        from evalstress.engine.workerstart import exit_with_parent
        exit_with_parent(parent=1, interval=0.1)
        for tick in range(3000):
            print(tick, flush=True)
            time.sleep(0.01)
    """)
    done = subprocess.run([sys.executable, "-c", code], env=_env(), timeout=60,
                          capture_output=True, text=True)
    assert done.returncode == 1  # exited by the watcher, not at the end of its 30 s of ticks
    ticks = len(done.stdout.split())
    assert 1 <= ticks < 100  # under a second of its own sleep: a first check ends it


def test_a_living_parent_keeps_its_worker() -> None:
    code = textwrap.dedent("""
        import os, time
        from evalstress.engine.workerstart import exit_with_parent
        exit_with_parent(os.getppid(), interval=0.05)
        time.sleep(0.5)
        print("finished")
    """)
    done = subprocess.run([sys.executable, "-c", code], env=_env(), timeout=30,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "finished"


def test_a_worker_whose_parent_dies_while_it_loads_its_spec_exits_without_waiting() -> None:
    """The watch starts before the spec is unpickled: a spec whose unpickling takes 30 s (as
    importing pandas, pyarrow and the evaluators does on a busy machine) does not keep a
    worker of a dead parent alive. The pool's parent pid is 1 here, not the child's parent,
    as after a kill -9. The old initializer started the watch only after the spec was loaded."""
    code = textwrap.dedent("""
        import pickle, sys, time
        from evalstress.engine.workerstart import start_worker

        class SlowToLoad:
            def __reduce__(self):
                return (time.sleep, (30,))

        start_worker(1, pickle.dumps(SlowToLoad()), interval=0.1)
        print("the spec loaded before the watch ended the worker")
        sys.exit(0)
    """)
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], env=_env(), timeout=60,
                          capture_output=True, text=True)
    # ended by the watch (exit 1, nothing printed), not by an error
    assert done.returncode == 1 and done.stderr == "", done.stdout + done.stderr
    assert time.monotonic() - began < 25  # well before the 30 s unpickling ended
    assert "loaded before" not in done.stdout


def test_the_first_module_a_worker_imports_loads_no_run_machinery() -> None:
    """What a spawned worker imports before its watch starts: this module and the standard
    library, no pandas, pyarrow, scipy, spaCy or torch."""
    code = ("import sys, evalstress.engine.workerstart; print(sorted(m for m in ('pandas', "
            "'pyarrow', 'numpy', 'scipy', 'spacy', 'torch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], env=_env(), timeout=60,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
