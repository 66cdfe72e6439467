"""The first thing a worker process runs: watch the parent, then load the run.

A spawned worker imports the run's machinery (pandas, pyarrow, the evaluators) and unpickles its
spec before it can work, seconds on a busy machine. The pool's initializer is this module's
`start_worker`, which imports only the standard library: the watch on the parent starts before
any of that, so a kill -9 of the parent during start-up ends the worker within a check
interval instead of after its imports. The spec arrives as pickled bytes and is unpickled here,
after the watch has started.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time

#: how many threads fastchrf's rayon pool starts in a process (one per core if unset)
THREADS_VARIABLE = "RAYON_NUM_THREADS"

#: how often a worker looks whether its parent still lives (seconds)
PARENT_CHECK_INTERVAL = 0.5


def exit_with_parent(parent: int, interval: float = PARENT_CHECK_INTERVAL) -> threading.Thread:
    """Watch from a daemon thread whether the process `parent` still is this process's parent;
    when it died (kill -9 leaves no chance to stop the pool), exit at once: a worker holds
    hundreds of MB and would otherwise live on, reparented, for ever."""

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    thread = threading.Thread(target=watch, name="evalstress-parent-watch", daemon=True)
    thread.start()
    return thread


def start_helper(parent: int, interval: float = PARENT_CHECK_INTERVAL) -> None:
    """What every process a run spawns does first: the watch on `parent`, then the signals."""
    exit_with_parent(parent, interval)
    # Ctrl-C reaches the whole process group: the parent decides, and terminates the pool.
    # The process was born with SIGINT blocked (`chunkwork.interrupts_blocked`), so a Ctrl-C
    # during its start-up stayed pending instead of printing a traceback from inside an
    # import; now that it is ignored, unblocking discards it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start_worker(parent: int, spec: bytes, interval: float = PARENT_CHECK_INTERVAL) -> None:
    """The pool's initializer: the watch on `parent` first, then the signals, then the worker
    built from the pickled `spec` (`engine.chunkwork.WorkerSpec`)."""
    start_helper(parent, interval)
    # one thread per worker: native thread pools (fastchrf's rayon) would otherwise start a
    # thread per core in every worker and fight the pool for the same cores (the parent sets
    # it before spawning; this holds for a worker started otherwise)
    os.environ.setdefault(THREADS_VARIABLE, "1")
    from evalstress.engine.chunkwork import init_worker

    init_worker(pickle.loads(spec))
