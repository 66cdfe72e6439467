"""A side task runs in a process of its own, gives back what the function returns or raises,
falls back to this process when its own one dies, and stops when closed early."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from evalstress.engine.sidetask import SideTask


def where_am_i(tag: str) -> tuple[int, str]:
    return os.getpid(), tag


def refuse(message: str) -> None:
    raise ValueError(message)


def die_unless_in(parent: int) -> str:
    """Kill the process it runs in unless that is `parent` (as an out-of-memory kill would)."""
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return "done here"


def sleep_then_write(path: str) -> None:
    time.sleep(30)
    Path(path).write_text("finished", encoding="utf-8")


def test_the_function_runs_in_another_process_and_its_value_comes_back() -> None:
    with SideTask(where_am_i, "browser") as task:
        pid, tag = task.result()
    assert tag == "browser" and pid != os.getpid()


def test_the_functions_error_is_raised_where_the_result_is_asked_for() -> None:
    with SideTask(refuse, "scores.parquet: cannot read") as task, \
            pytest.raises(ValueError, match=r"^scores.parquet: cannot read$"):
        task.result()


def test_a_side_process_that_dies_leaves_the_work_to_this_one() -> None:
    with SideTask(die_unless_in, os.getpid()) as task:
        assert task.result() == "done here"


def test_closing_a_running_task_stops_its_process(tmp_path: Path) -> None:
    marker = tmp_path / "finished.txt"
    task = SideTask(sleep_then_write, str(marker))
    time.sleep(1.0)  # the process has started and sleeps
    started = time.monotonic()
    task.close()
    assert time.monotonic() - started < 10  # stopped, not waited for (it sleeps 30 s)
    time.sleep(0.5)
    assert not marker.exists()
