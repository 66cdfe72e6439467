"""Worker processes never outlive their run: a worker whose parent was killed (kill -9, no
chance to stop the pool) exits by itself, and so does the resource tracker behind the pool.
A started helper shares the warm-up's sentence parse."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from evalstress.core.data import builtin_corpus
from evalstress.core.text import TextParser
from evalstress.engine.chunkwork import (
    SENTENCE_BATCH,
    ChunkExecutor,
    ChunkWorker,
    WorkerSpec,
    interrupts_blocked,
)
from evalstress.suites import custom_suite

SRC = Path(__file__).resolve().parents[2] / "src"
CORPUS = SRC / "evalstress" / "corpus" / "sample.jsonl"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC)}


@pytest.mark.slow
@pytest.mark.parametrize("busy", [True, False], ids=["working", "starting"])
def test_kill_9_of_a_pooled_run_leaves_no_process_behind(tmp_path: Path, busy: bool) -> None:
    """The workers and the resource tracker end with the killed parent, and the tracker
    removes the pool's semaphores without a warning about them on the run's stderr. A worker
    killed while it still starts (importing the run's machinery) ends within seconds too: it
    watches its parent before those imports (it used to live on 6-18 s)."""
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as sink:  # the child keeps its own copy of the file
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalstress.cli", "run", str(CORPUS), "--suite", "blindspot-full",
             "--workers", "3", "--chunk-size", "2", "--quiet", "--no-cache",
             "--out", str(tmp_path / "run")],
            env=_env(), stdout=subprocess.DEVNULL, stderr=sink,
            start_new_session=True)
    parent = psutil.Process(proc.pid)
    workers: list[psutil.Process] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        workers = parent.children(recursive=True)
        if len(workers) >= 3:  # two helpers (--workers 3: this process and two) and the tracker
            break
        time.sleep(0.2)
    assert len(workers) >= 3, "the run never started its worker pool"
    # busy: the workers work on chunks; else they import the run's machinery
    time.sleep(2 if busy else 0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + (15 if busy else 3)
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.25)
        alive = [w for w in alive if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    for process in alive:  # never leave them to the next test, whatever the verdict
        process.kill()
    assert alive == [], f"left behind: {[' '.join(w.cmdline())[:60] for w in alive]}"
    assert "leaked semaphore" not in errors.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.3, 0.8])
def test_ctrl_c_while_workers_start_prints_no_worker_traceback(tmp_path: Path,
                                                               delay: float) -> None:
    """Ctrl-C reaches the whole process group, workers still importing included."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstress.cli", "run", str(CORPUS), "--suite", "blindspot-full",
         "--workers", "2", "--chunk-size", "2", "--quiet", "--no-cache",
         "--out", str(tmp_path / "run")],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any("spawn" in " ".join(c.cmdline()) for c in parent.children()):
            break  # the first worker is starting: it imports evalstress, pandas, spaCy ...
        time.sleep(0.01)
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    assert "interrupted (Ctrl-C)" in output


def test_a_ctrl_c_while_interrupts_are_blocked_is_raised_after_the_block() -> None:
    """The kernel may hand the signal to another thread (the pool's manager, a progress bar):
    the interrupt still waits for the end of the block."""
    stop = threading.Event()
    bystander = threading.Thread(target=stop.wait, daemon=True)
    bystander.start()
    steps = []
    # Python's own Ctrl-C handler, whatever an earlier test left installed (a run's handler
    # would record this Ctrl-C as the next run's)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_blocked():
                signal.pthread_kill(bystander.ident or 0, signal.SIGINT)
                deadline = time.monotonic() + 0.3
                while time.monotonic() < deadline:  # Python checks for signals between steps
                    steps.append(1)
                steps.append("block done")
            steps.append("after the block")  # never reached: the interrupt comes first
    finally:
        stop.set()
        signal.signal(signal.SIGINT, before)
    assert steps[-1] == "block done"


def test_interrupts_blocked_without_a_ctrl_c_changes_nothing() -> None:
    handler = signal.getsignal(signal.SIGINT)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    with interrupts_blocked():
        pass
    assert signal.getsignal(signal.SIGINT) is handler
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == mask


def test_a_sentence_pool_is_parsed_in_both_processes_into_the_same_sentences() -> None:
    """The warm-up's dataset-wide sentence parse is shared with a started helper batch by
    batch, and gives the parses one process would, in order."""
    examples = builtin_corpus()
    texts = [e.hypothesis for e in examples] * 3  # three batches of SENTENCE_BATCH or fewer
    assert 2 * SENTENCE_BATCH < len(texts) <= 3 * SENTENCE_BATCH
    parser = TextParser(forgetful=True)
    worker = ChunkWorker(custom_suite(["truncation"]), examples, examples, {}, [], None, parser)
    executor = ChunkExecutor(worker, 1, WorkerSpec([], None, "scores"))
    try:
        deadline = time.monotonic() + 120
        while executor.started < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        shared = list(executor.sentence_parses(texts))
    finally:
        executor.close()
    alone = list(TextParser(forgetful=True).sentence_parses(texts, here=True))
    assert shared == alone
    assert 0 < parser.parses < len(texts)  # this process parsed a batch, the helper the rest


@pytest.mark.long_run  # BERTScore twice, once beside a pool of helpers: about a minute
def test_a_model_scoring_beside_helpers_takes_its_share_of_the_cores_and_scores_the_same(
        monkeypatch: pytest.MonkeyPatch, bertscore_threads: list[int]) -> None:
    """Under --workers 2 a model scores in the run's own process while a helper perturbs: its
    forward passes take the cores divided by the two processes (at least one thread), not
    torch's one per core on top of the helper's, and the scores are those of the serial run
    (which keeps torch's own count)."""
    torch = pytest.importorskip("torch")
    import pandas as pd

    from evalstress.engine import pipeline
    from evalstress.engine.runner import run
    from evalstress.evaluators import create_evaluator

    monkeypatch.setattr(pipeline, "POOL_MIN_WORK", 0)  # a pool even for this small run
    seen = bertscore_threads
    examples = [e for e in builtin_corpus() if e.references][:2]
    serial = run(examples, custom_suite(["truncation"], seeds=1),
                 [create_evaluator("bertscore")], chunk_size=1, workers=1)
    alone = set(seen)
    seen.clear()
    pooled = run(examples, custom_suite(["truncation"], seeds=1),
                 [create_evaluator("bertscore")], chunk_size=1, workers=2)
    assert alone == {torch.get_num_threads()}
    assert set(seen) == {max(1, len(os.sched_getaffinity(0)) // 2)}
    assert pooled.table["score"].notna().all()
    pd.testing.assert_frame_equal(serial.table, pooled.table)
