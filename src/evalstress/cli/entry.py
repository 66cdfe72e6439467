"""The `evalstress` command (and `python -m evalstress.cli`): the typer app, then a quick exit.

A finished run holds hundreds of MB of Python objects (spaCy's vocabulary, the metric
libraries, their tables), and the interpreter's teardown frees them one by one: 0.5-0.7 s
after the last line is written, on every command. The command instead does what an exit must
(its atexit handlers, which join child processes, and its streams flushed) and ends the
process without the teardown, as multiprocessing's own child processes do. When a thread
other than daemons is still running, it exits as usual. `app` itself is unchanged: code that
calls it in-process (tests, notebooks) exits as Python does.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def main() -> NoReturn:
    """Run the command line, then exit with its status (see the module docstring)."""
    from evalstress.cli import app

    try:
        app()
    except SystemExit as stop:
        exit_now(stop.code)
    exit_now(0)


def exit_now(code: object) -> NoReturn:
    """Exit with `code` as `sys.exit` reads it, without the interpreter's teardown when only
    this thread and daemon threads run."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    main_thread = threading.current_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        sys.exit(status)  # e.g. a pool still shutting down: let Python join it
    atexit._run_exitfuncs()  # multiprocessing joins its children, loggers flush, ...
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe (| head) cannot be flushed
            stream.flush()
    os._exit(status)
