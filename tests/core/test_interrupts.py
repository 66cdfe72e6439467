"""Ctrl-C and SIGTERM during a judge run: a prompt, quiet stop, and a resume that repeats nothing.

The command runs in a subprocess (signals go to a real process); the fake OpenAI-compatible
server runs in this process, so the test sees every request the run sent and answered.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalstress.core import interrupts
from evalstress.llm.fake_server import FakeServer, Reply

SRC = Path(__file__).resolve().parents[2] / "src"
CORPUS = SRC / "evalstress" / "corpus" / "sample.jsonl"


def cli(*args: str, **popen: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "evalstress.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)  # type: ignore[call-overload]


def canonical(request: dict[str, object]) -> str:
    return json.dumps(request, sort_keys=True)


def judge_run(server: FakeServer, tmp_path: Path) -> list[str]:
    return ["run", str(CORPUS), "--limit", "3", "-p", "truncation", "--workers", "1", "--quiet",
            "-e", f"judge:model=m,base_url={server.base_url},form=score-only,max_concurrency=2",
            "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache")]


def wait_for(condition: object, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("the run did not get that far in time")


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code", "name"), [(signal.SIGINT, 130, "Ctrl-C"),
                                                   (signal.SIGTERM, 143, "SIGTERM")])
def test_signal_during_a_judge_run_stops_in_seconds_and_the_resume_repeats_no_call(
        tmp_path: Path, sig: int, code: int, name: str) -> None:
    """"In seconds" is measured against the run that finishes the work, started the same way
    on the same machine: stopping takes under half its time, and the stopped run sends nothing
    new (at most the two requests its max_concurrency had on their way arrive late)."""
    with FakeServer(default=Reply("4", delay=0.4)) as server:
        proc = cli(*judge_run(server, tmp_path))
        wait_for(lambda: len(server.answered) >= 4 or proc.poll() is not None, 120)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(sig)
        sent, received = time.monotonic(), server.calls
        _, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        assert proc.returncode == code, stderr
        assert server.calls - received <= 2  # nothing new asked after the signal
        assert f"interrupted ({name})" in stderr
        assert "run the same command again to resume" in stderr
        for noise in ("Traceback", "Task was destroyed", "never retrieved", "Exception ignored"):
            assert noise not in stderr, stderr
        assert not (tmp_path / "run").exists()  # nothing half-written at --out
        first = {canonical(r) for r in server.answered}
        assert 4 <= len(first) < 18  # 3 originals + 15 truncations: stopped midway

        server.reset_counters()
        started = time.monotonic()
        proc = cli(*judge_run(server, tmp_path))
        _, stderr = proc.communicate(timeout=300)
        resumed = time.monotonic() - started
        assert proc.returncode == 0, stderr
        assert took < 0.5 * resumed, f"took {took:.1f} s to stop; the resumed run {resumed:.1f} s"
        again = {canonical(r) for r in server.requests}
        assert not first & again, "the resumed run asked again what the first run was answered"
        assert len(first) + len(again) == 18
        results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
        assert results["counts"]["missing_scores"] == 0


@pytest.mark.slow
def test_a_second_signal_exits_at_once(tmp_path: Path) -> None:
    with FakeServer(default=Reply("4", hang=True)) as server:
        proc = cli(*judge_run(server, tmp_path))
        wait_for(lambda: server.calls >= 2 or proc.poll() is not None, 120)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=10)
        assert proc.returncode == 130
        assert "Traceback" not in stderr


def test_deferred_holds_the_signal_until_the_block_ends() -> None:
    interrupts.install()
    try:
        done = []
        with pytest.raises(KeyboardInterrupt), interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler has run by now, and held the interrupt back
            done.append("rename")
        assert done == ["rename"]
        assert interrupts.exit_code() == 130
    finally:
        interrupts.uninstall()


def test_sigterm_maps_to_143() -> None:
    interrupts.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
        assert interrupts.exit_code() == 143
        assert "SIGTERM" in interrupts.message()
    finally:
        interrupts.uninstall()


def _staggered(request: dict[str, object]) -> Reply:
    """Answers that come back at different moments (0.3 to 1.5 s), so a signal always finds
    some on their way and others about to arrive within the grace period."""
    digest = int(hashlib.sha256(canonical(request).encode()).hexdigest(), 16)
    return Reply("4", delay=0.3 + (digest % 13) / 10)


@pytest.mark.slow
@pytest.mark.parametrize("wait_for_answers", [3, 7, 11])
def test_ctrl_c_with_many_requests_in_flight_keeps_every_answer_that_arrived(
        tmp_path: Path, wait_for_answers: int) -> None:
    """Eight requests in flight at once: each answer the server sent before or during the stop
    is cached (the resumed run never asks it again), and no session is left unclosed."""
    args = ["run", str(CORPUS), "--limit", "4", "-p", "truncation", "--workers", "1",
            "--quiet", "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"),
            "-e", "judge:model=m,base_url={url},form=score-only,max_concurrency=8"]
    with FakeServer(responder=_staggered) as server:
        run_args = [a.replace("{url}", server.base_url) for a in args]
        proc = cli(*run_args)
        wait_for(lambda: len(server.answered) >= wait_for_answers or proc.poll() is not None,
                 120)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr
        assert "Unclosed" not in stderr and "Traceback" not in stderr, stderr
        time.sleep(1.6)  # anything the server was still answering has been sent by now
        paid = {canonical(r) for r in server.answered}
        server.reset_counters()
        proc = cli(*run_args)
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        again = {canonical(r) for r in server.requests}
        assert not paid & again, (f"{len(paid & again)} answers that had arrived were asked "
                                  "again")
        assert len(paid | again) == 4 * 6  # 4 originals + 4 x 5 truncations


def test_a_sigterm_while_spacy_loads_waits_for_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt inside `import spacy` (which imports torch) left torch half made,
    and the command then ended on SIGINT (exit -2) instead of 143: the signal now waits."""
    import spacy

    from evalstress.core.text import load_spacy

    finished = []

    def slow_load(model: str) -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler has run by now
        finished.append(model)
        return "pipeline"

    monkeypatch.setattr(spacy, "load", slow_load)
    interrupts.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            load_spacy.__wrapped__("a-model")
        assert finished == ["a-model"]  # the load ran to its end before the interrupt
        assert interrupts.exit_code() == 143
    finally:
        interrupts.uninstall()


def test_only_the_main_thread_defers_a_signal() -> None:
    """A section deferred in another thread must not swallow the main thread's interrupt."""
    import threading

    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with interrupts.deferred():
            inside.set()
            release.wait(5)

    helper = threading.Thread(target=hold)
    interrupts.install()
    try:
        helper.start()
        assert inside.wait(5)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
    finally:
        release.set()
        helper.join()
        interrupts.uninstall()
