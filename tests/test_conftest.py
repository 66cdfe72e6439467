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


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_time() -> None:
    proc = subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    started = time.monotonic()
    stop_server(proc, grace=0.5)
    assert proc.returncode == -9  # SIGKILL: SIGTERM was ignored
    assert time.monotonic() - started < 5
    proc.stdout.close()
