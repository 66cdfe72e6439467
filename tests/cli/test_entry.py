"""The `evalstress` command ends quickly without losing what an exit owes: its status, its
output, its atexit handlers (which join child processes) and a thread still at work."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "evalstress.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_the_command_keeps_its_exit_status_and_its_whole_output() -> None:
    listing = _cli("list", "perturbations")
    assert listing.returncode == 0, listing.stderr
    # the same bytes as the app gives when Python exits the usual way
    usual = _python("""
        import sys
        from evalstress.cli import app
        app(args=sys.argv[1:], prog_name="evalstress")
    """, "list", "perturbations")
    assert usual.returncode == 0, usual.stderr
    assert "truncation" in listing.stdout and listing.stdout == usual.stdout
    missing = _cli("run", "no-such-file.jsonl", "--quiet")
    assert missing.returncode == 2
    assert "no-such-file.jsonl" in missing.stderr


@pytest.mark.parametrize(("code", "status", "stderr"), [
    (None, 0, ""), (3, 3, ""), ("stopped: a reason", 1, "stopped: a reason")])
def test_exit_now_reads_its_code_as_sys_exit_does(code: object, status: int,
                                                  stderr: str) -> None:
    done = _python(f"""
        import atexit
        from evalstress.cli.entry import exit_now
        atexit.register(print, "atexit ran")
        print("before", end="")  # buffered: flushed on the way out
        exit_now({code!r})
    """)
    assert done.returncode == status
    assert done.stdout == "beforeatexit ran\n"
    assert done.stderr.strip() == stderr


def test_a_thread_still_at_work_is_waited_for(tmp_path: Path) -> None:
    marker = tmp_path / "written"
    done = _python(f"""
        import threading, time
        from pathlib import Path
        from evalstress.cli.entry import exit_now
        def late():
            time.sleep(0.5)
            Path({str(marker)!r}).write_text("done")
        threading.Thread(target=late).start()
        exit_now(5)
    """)
    assert done.returncode == 5
    assert marker.read_text() == "done"


def test_python_dash_m_evalstress_is_the_command_line() -> None:
    """A checkout without the console script on PATH: `python -m evalstress` runs the same
    commands (it was "No module named evalstress.__main__")."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-m", "evalstress", "--version"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("evalstress ")
    bad = subprocess.run([sys.executable, "-m", "evalstress", "crad"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "No such command 'crad'" in bad.stderr
