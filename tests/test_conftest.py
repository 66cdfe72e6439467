"""The shared fixtures' own promises: a local server never outlives the test session."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.conftest import stop_server

IGNORES_SIGTERM = ("import signal, time\n"
                   "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                   "print('ready', flush=True)\n"
                   "time.sleep(600)\n")


def _stop_one_that_ignores_sigterm(grace: float) -> float:
    """Seconds that stop_server took on a process that ignores SIGTERM."""
    proc = subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    started = time.monotonic()
    stop_server(proc, grace=grace)
    took = time.monotonic() - started
    assert proc.returncode == -9  # SIGKILL: SIGTERM was ignored
    proc.stdout.close()
    return took


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_time() -> None:
    """The grace time, not a fixed wait, decides when the SIGKILL comes: a grace 1.2 s longer
    makes the stop about 1.2 s longer (killing and reaping cost the same in both, however
    loaded the machine)."""
    short = _stop_one_that_ignores_sigterm(0.3)
    long = _stop_one_that_ignores_sigterm(1.5)
    assert short >= 0.3 and long >= 1.5  # SIGTERM had its grace time
    assert long - short >= 0.6
