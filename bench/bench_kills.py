"""Kill runs at random moments and resume them: what survives a kill -9, a Ctrl-C and a SIGTERM.

For each scenario the command first runs once to completion (fresh cache): its tables are the
reference, its timing gives the window of the kills. Then each kill starts the same command
with a fresh --out folder and a fresh cache, signals it at a random moment (seeded, uniform
between the moment the baseline saw its first answer arrive or its first chunk written and the
moment the baseline's outputs were in place), and resumes it with the same command until it
exits 0. A run that finished its work before its moment is started again with a new draw (and
a window that ends before where that run finished), and counted as "redrawn". Each kill checks:

1. no repeated paid call: no request the fake server answered during the killed run is asked
   again by a resume (key: canonical JSON of the request body). After a kill -9 an answer the
   server had sent but the client had not yet stored cannot be saved: "answered, not stored"
   counts the answers missing from the cache file after the kill, and a repeat of one of
   those is not counted as a repeated paid call. After SIGINT or SIGTERM the run has a grace
   period to store what is on its way: both numbers must be 0;
2. no process left behind: every descendant of the killed process (recorded just before the
   signal) is gone within 15 s of it;
3. identical final table: scores.parquet equals the baseline's (sorted by example_id,
   perturbation, severity, seed, evaluator, aspect; pandas.testing.assert_frame_equal) and
   variants.parquet has the same rows; for the attack, attacks.jsonl (without each record's
   timing) and the ASR table of results.json;
and the exit code of the killed run: 130 after SIGINT, 143 after SIGTERM, as the command line
promises.

Scenarios (the built-in corpus, a few examples each; LLM parts against the in-process fake
OpenAI-compatible server):
  judge      run -p truncation with a score-only judge at concurrency 8; the server answers
             after 0.2-1.2 s (from a hash of the request), so a kill finds answers on their way
  generator  run with LLM-written fact-negation and continuation (a scripted model that puts
             "not" after the first auxiliary verb, or adds a sentence), BLEU as the evaluator
  attack     attack (adveval) with a scripted gold judge and generator; ROUGE-L and BLEU victims
  workers    run --suite blindspot-full --workers 2 -e bleu -e rouge (no LLM: checks 2 and 3)

Kill kinds: kill -9 to the process; SIGINT to its process group (what Ctrl-C in a terminal
sends; the command starts in a session of its own); SIGTERM to the process. --kills N means N
kill -9 and N signals in all, spread over the scenarios in turn, the signals half SIGINT and
half SIGTERM. Prints one row per scenario and kill kind, and the totals. Exits 1 on any
repeated paid call, an answer not stored after SIGINT/SIGTERM, a process left, a table that
differs, an exit code other than promised, or a run that never resumed.

Usage: python bench/bench_kills.py [--kills 20] [--seed 0] [--scenario NAME ...] [--quick]
A failed kill keeps its folder (out, cache, log of the killed run and its resumes) under
--workdir and prints where.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))

from evalstress.core.data import builtin_corpus  # noqa: E402
from evalstress.engine.variantfile import read_records  # noqa: E402
from evalstress.llm.cache import ResponseCache  # noqa: E402
from evalstress.llm.client import SAMPLING_PARAMS  # noqa: E402
from evalstress.llm.fake_server import FakeServer, Reply  # noqa: E402
from evalstress.studies.attack.prompt import SYSTEM as ATTACK_SYSTEM  # noqa: E402

CORPUS = SRC / "evalstress" / "corpus" / "sample.jsonl"
SORT_KEYS = ["example_id", "perturbation", "severity", "seed", "evaluator", "aspect"]
LEFT_WITHIN = 15.0  # seconds the killed process's descendants have to be gone
STOP_WITHIN = 60.0  # seconds a signalled run has to exit before it counts as hung
RESUME_TIMEOUT = 900.0
MAX_RESUMES = 3
MAX_REDRAWS = 4  # a run that finished before its kill moment is started again, drawn anew

KINDS = {"kill -9": signal.SIGKILL, "SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}
PROMISED_EXIT = {"kill -9": -signal.SIGKILL, "SIGINT": 130, "SIGTERM": 143}


def canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, ensure_ascii=False)


def _digest(body: dict[str, Any]) -> int:
    return int(hashlib.sha256(canonical(body).encode()).hexdigest(), 16)


# ---- scripted models -------------------------------------------------------------------------

def judge_reply(body: dict[str, Any]) -> Reply:
    """A rating from 1 to 5 after 0.2-1.2 s, both from a hash of the request: answers come
    back out of order, so a kill always finds some on their way."""
    digest = _digest(body)
    return Reply(str(1 + digest % 5), delay=0.2 + (digest // 5 % 11) / 10)


_BLOCK = re.compile(r"<text>\n(.*?)\n</text>", re.DOTALL)
_AUX = re.compile(r"\b(is|are|was|were|will|has|have|had|can|could|would|should)\b")


def generator_reply(body: dict[str, Any]) -> Reply:
    """The generation stage's model: for a negation, the asked text with "not" after its first
    auxiliary verb; otherwise (continuation) the text and one more sentence."""
    user = body["messages"][-1]["content"]
    text = _BLOCK.findall(user)[-1]
    delay = 0.1 + (_digest(body) % 5) / 10
    if any("Negate one statement" in str(m.get("content")) for m in body["messages"]):
        rewritten = _AUX.sub(lambda m: f"{m.group(1)} not", text, count=1)
    else:
        rewritten = f"{text} Everyone agreed to meet again the following week."
    return Reply(f"<text>\n{rewritten}\n</text>", delay=delay)


REWORDED = "Entirely reworded account"
REFUTED = "None of this is true."


def attack_responder(references: dict[str, str]) -> Callable[[dict[str, Any]], Reply]:
    """Generator and gold judge of the attack: even samples reword (gold 90, overlap ~0), odd
    ones copy a reference and deny it (gold 5, overlap high); the originals get 60."""

    def respond(body: dict[str, Any]) -> Reply:
        delay = 0.05 + (_digest(body) % 4) / 10
        user = body["messages"][-1]["content"]
        if body["messages"][0]["content"] == ATTACK_SYSTEM:
            source = next((s for s in references if s in user), "")
            seed = int(body.get("seed") or 0)
            if seed % 2 == 0:
                return Reply(f"<text>{REWORDED} number {seed}.</text>", delay=delay)
            return Reply(f"<text>{references.get(source, '')} {REFUTED}</text>", delay=delay)
        text = user.split("Text to evaluate:\n", 1)[-1].split("\n\nCriterion", 1)[0]
        score = "90" if REWORDED in text else "5" if text.endswith(REFUTED) else "60"
        return Reply(score, delay=delay)

    return respond


# ---- scenarios -------------------------------------------------------------------------------

@dataclass
class Scenario:
    name: str
    args: Callable[[str, Path, Path], list[str]]  # (server url, out, cache) -> CLI arguments
    responder: Callable[[dict[str, Any]], Reply] | None  # None: no LLM, no server
    kind: str = "run"  # run (scores.parquet + variants.parquet) or attack (attacks.jsonl)


def scenarios(quick: bool) -> dict[str, Scenario]:
    # enough examples that `--workers 2` starts its pool (engine.pipeline.POOL_MIN_WORK)
    n_judge, n_gen, n_attack, n_workers = (3, 3, 2, 12) if quick else (6, 6, 3, 16)
    corpus = str(CORPUS)

    def judge(url: str, out: Path, cache: Path) -> list[str]:
        return ["run", corpus, "--limit", str(n_judge), "-p", "truncation", "--workers", "1",
                "--chunk-size", "2", "-e",
                f"judge:model=m,base_url={url},form=score-only,max_concurrency=8",
                "--out", str(out), "--cache-dir", str(cache), "--quiet"]

    def generator(url: str, out: Path, cache: Path) -> list[str]:
        return ["run", corpus, "--limit", str(n_gen), "-p", "fact-negation", "-p", "continuation",
                "--generator", f"model=m,base_url={url},max_concurrency=8", "--workers", "1",
                "--chunk-size", "2", "-e", "bleu", "--out", str(out), "--cache-dir", str(cache),
                "--quiet"]

    def attack(url: str, out: Path, cache: Path) -> list[str]:
        return ["attack", corpus, "--limit", str(n_attack), "-v", "rouge@rougeL", "-v", "bleu",
                "-g", f"judge:model=gold,base_url={url},max_concurrency=8",
                "--generator", f"model=gen,base_url={url},max_concurrency=8",
                "--method", "adveval", "--budget", "24", "--gold-samples", "2",
                "--out", str(out), "--cache-dir", str(cache), "--quiet"]

    def workers(url: str, out: Path, cache: Path) -> list[str]:
        return ["run", corpus, "--limit", str(n_workers), "--suite", "blindspot-full",
                "--workers", "2", "--chunk-size", "2", "-e", "bleu", "-e", "rouge",
                "--out", str(out), "--cache-dir", str(cache), "--quiet"]

    references = {e.source.strip(): e.references[0] for e in builtin_corpus() if e.references}
    return {"judge": Scenario("judge", judge, judge_reply),
            "generator": Scenario("generator", generator, generator_reply),
            "attack": Scenario("attack", attack, attack_responder(references), kind="attack"),
            "workers": Scenario("workers", workers, None)}


# ---- one command, started, watched, killed ---------------------------------------------------

def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}


def start(args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("ab")
    try:
        return subprocess.Popen([sys.executable, "-m", "evalstress.cli", *args], env=env(),
                                stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True)
    finally:
        handle.close()


def staging(out: Path) -> Path:
    return out.parent / f".{out.name}.partial"


def first_event(server: FakeServer | None, out: Path) -> bool:
    """An answer arrived (LLM scenarios) or a chunk was written (the others)."""
    if server is not None:
        return bool(server.answered)
    chunks = staging(out) / "chunks"
    return chunks.is_dir() and any(p.suffix == ".json" for p in chunks.iterdir())


def wait_server_idle(server: FakeServer | None, timeout: float = 10.0) -> None:
    """Let the server finish the requests it holds (their answers count as answered or not)."""
    if server is None:
        return
    end = time.monotonic() + timeout
    while server.in_flight and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.2)


def living(processes: Sequence[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for p in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
    return alive


def wait_gone(processes: Sequence[psutil.Process], since: float) -> list[psutil.Process]:
    """The processes still alive LEFT_WITHIN seconds after `since`."""
    alive = living(processes)
    while alive and time.monotonic() - since < LEFT_WITHIN:
        time.sleep(0.1)
        alive = living(processes)
    return alive


def finished(scenario: Scenario, out: Path) -> bool:
    """Every output file of the command is in place."""
    names = ["results.json", "report.html"]
    names += ["attacks.jsonl"] if scenario.kind == "attack" else ["scores.parquet"]
    return all((out / name).exists() for name in names)


def stored_bodies(cache: Path) -> set[str]:
    """The request bodies whose answers are in the response cache, keyed like the server's:
    messages and the sampling parameters (what the client puts in the body from the key)."""
    path = cache / "llm.sqlite"
    if not path.exists():
        return set()
    store = ResponseCache(path)
    try:
        return {body_key(parts["messages"], parts["params"]) for parts in store.entries()}
    finally:
        store.close()


def body_key(messages: Any, params: dict[str, Any]) -> str:
    return json.dumps([messages, {k: v for k, v in sorted(params.items()) if v is not None}],
                      sort_keys=True, ensure_ascii=False)


def request_key(body: dict[str, Any]) -> str:
    return body_key(body.get("messages"), {k: body[k] for k in SAMPLING_PARAMS if k in body})


# ---- the tables compared ---------------------------------------------------------------------

def read_table(scenario: Scenario, out: Path) -> dict[str, Any]:
    if scenario.kind == "attack":
        records = []
        for line in (out / "attacks.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            record.pop("seconds", None)
            records.append(canonical(record))
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        asr = results["analyses"]["adversarial"]["asr"]
        return {"attacks": sorted(records), "asr": canonical({"asr": asr})}
    frame = pd.read_parquet(out / "scores.parquet")
    frame = frame.sort_values(SORT_KEYS, kind="mergesort").reset_index(drop=True)
    lines = [json.dumps(r, sort_keys=True) for r in read_records(out / "variants.parquet")]
    return {"scores": frame, "variants": sorted(lines)}


def same_table(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """None when equal, else what differs."""
    for name in a:
        if isinstance(a[name], pd.DataFrame):
            try:
                pd.testing.assert_frame_equal(a[name], b[name])
            except AssertionError as exc:
                return f"{name}: {str(exc).splitlines()[0]} ..."
        elif a[name] != b[name]:
            if isinstance(a[name], list):
                only_a, only_b = set(a[name]) - set(b[name]), set(b[name]) - set(a[name])
                return (f"{name}: {len(only_a)} lines only in the baseline, {len(only_b)} only "
                        f"in the resumed run, e.g. {sorted(only_b or only_a)[0][:300]}")
            return f"{name} differs"
    return None


# ---- baseline and kills ----------------------------------------------------------------------

@dataclass
class Baseline:
    table: dict[str, Any]
    first: float  # seconds from start to the first answer / chunk
    done: float  # seconds from start to the last output file in place
    total: float  # seconds from start to exit
    requests: int


@dataclass
class KillResult:
    kind: str
    resumes: int = 0
    repeated: int = 0  # answered during the killed run and asked again (see the docstring)
    not_stored: int = 0  # answered during the killed run, not in the cache after it
    left: int = 0
    identical: bool = False
    exit_ok: bool = False
    seconds: float = 0.0
    redraws: int = 0
    problems: list[str] = field(default_factory=list)


def fresh(folder: Path) -> tuple[Path, Path, Path]:
    """An empty folder: (out, cache, log) inside it."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder / "out", folder / "cache", folder / "log.txt"


def run_baseline(scenario: Scenario, server: FakeServer | None, folder: Path) -> Baseline:
    out, cache, log = fresh(folder)
    if server is not None:
        server.reset_counters()
    started = time.monotonic()
    proc = start(scenario.args(server.base_url if server else "", out, cache), log)
    first = done = None
    while proc.poll() is None:
        now = time.monotonic() - started
        if first is None and first_event(server, out):
            first = now
        if done is None and finished(scenario, out):
            done = now
        time.sleep(0.02)
    total = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{scenario.name}: the baseline exited {proc.returncode}; log: {log}\n"
                         + log.read_text(errors="replace")[-3000:])
    wait_server_idle(server)
    requests = 0
    if server is not None:
        keys = [canonical(r) for r in server.requests]
        requests = len(keys)
        if len(set(keys)) != len(keys):
            raise SystemExit(f"{scenario.name}: the baseline itself asked "
                             f"{len(keys) - len(set(keys))} requests twice: the checks would "
                             "blame resumes for it")
        unmatched = {request_key(r) for r in server.answered} - stored_bodies(cache)
        if unmatched:
            raise SystemExit(f"{scenario.name}: {len(unmatched)} answers of the baseline are "
                             "not found in its cache by request body: the stored-answer check "
                             "cannot work")
    first = first if first is not None else 0.0
    return Baseline(read_table(scenario, out), first, max(first, done or total), total,
                    requests)


@dataclass
class Killed:
    """A run stopped by a signal mid-work."""

    code: int
    descendants: list[psutil.Process]
    sent: float  # monotonic time of the signal


def kill_midway(scenario: Scenario, server: FakeServer | None, baseline: Baseline, kind: str,
                rng: random.Random, args: list[str], out: Path, log: Path,
                result: KillResult, upper: float) -> Killed | float:
    """Start the command and signal it at a random moment between the baseline's first answer
    (or chunk) and `upper`. Returns what happened, or, when the run had finished its work
    before the signal, a tighter `upper` for the next draw."""
    moment = rng.uniform(baseline.first, max(baseline.first, upper))
    if server is not None:
        server.reset_counters()
    started = time.monotonic()
    proc = start(args, log)
    seen = False  # the first answer or chunk (chunk files go when the parts are joined)
    done: float | None = None
    while proc.poll() is None:
        seen = seen or first_event(server, out)
        if done is None and finished(scenario, out):
            done = time.monotonic() - started
        if seen and time.monotonic() - started >= moment and done is None:
            break
        time.sleep(0.01)
    if proc.poll() is not None or done is not None:  # its work was done before the moment
        proc.wait()
        return max(baseline.first, (done or moment) - 0.5)
    try:
        descendants = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    sent = time.monotonic()
    if kind == "SIGINT":
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    else:
        proc.send_signal(KINDS[kind])
    try:
        code = proc.wait(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        result.problems.append(f"did not stop within {STOP_WITHIN:.0f} s of {kind}")
        proc.kill()
        code = proc.wait()
    if finished(scenario, out):
        # the last file was put in place between the look and the signal (the interpreter was
        # shutting down): no work was cut
        stayed = wait_gone(descendants, sent)
        result.left += len(stayed)
        if stayed:
            result.problems.append(f"{len(stayed)} processes left after a late {kind}")
        return max(baseline.first, time.monotonic() - started - 0.5)
    return Killed(code, descendants, sent)


def one_kill(scenario: Scenario, server: FakeServer | None, baseline: Baseline, kind: str,
             rng: random.Random, folder: Path) -> KillResult:
    result = KillResult(kind)
    began = time.monotonic()
    upper = baseline.done
    for _ in range(MAX_REDRAWS + 1):
        out, cache, log = fresh(folder)
        args = scenario.args(server.base_url if server else "", out, cache)
        killed = kill_midway(scenario, server, baseline, kind, rng, args, out, log, result,
                             upper)
        if isinstance(killed, Killed):
            break
        result.redraws += 1
        upper = min(upper, killed)
    else:
        result.problems.append(f"finished before every one of {MAX_REDRAWS + 1} kill moments")
        result.seconds = time.monotonic() - began
        return result

    result.exit_ok = killed.code == PROMISED_EXIT[kind]
    if not result.exit_ok:
        result.problems.append(f"exit {killed.code} after {kind}, promised "
                               f"{PROMISED_EXIT[kind]}")
    alive = wait_gone(killed.descendants, killed.sent)
    result.left += len(alive)
    if alive:
        result.problems.append("left behind: " + ", ".join(
            f"{p.pid} {' '.join(p.cmdline())[:80]}" for p in alive))
        for p in alive:  # started by this script: end them so the next kill starts clean
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()

    wait_server_idle(server)
    answered = {canonical(r): request_key(r) for r in server.answered} if server else {}
    stored = stored_bodies(cache) if server is not None else set()
    if server is not None:
        server.reset_counters()
    for attempt in range(1, MAX_RESUMES + 1):
        result.resumes = attempt
        proc = start(args, log)
        try:
            code = proc.wait(timeout=RESUME_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
        if code == 0:
            break
        result.problems.append(f"resume {attempt} exited {code}")
    else:
        result.problems.append("no resume finished; log: " + str(log))
        result.seconds = time.monotonic() - began
        return result

    if server is not None:
        wait_server_idle(server)
        again = {canonical(r) for r in server.requests}
        for body, key in answered.items():
            lost = key not in stored
            result.not_stored += lost
            # an answer a kill -9 cut off before the client stored it cannot be saved; any
            # other answer asked again was paid twice
            result.repeated += body in again and not (lost and kind == "kill -9")
    difference = same_table(baseline.table, read_table(scenario, out))
    result.identical = difference is None
    if difference:
        result.problems.append(f"table differs: {difference}")
    result.seconds = time.monotonic() - began
    return result


def failed(result: KillResult) -> bool:
    signal_kill = result.kind != "kill -9"
    return bool(result.left or not result.identical or not result.exit_ok
                or (signal_kill and (result.repeated or result.not_stored))
                or result.repeated
                or any(p.startswith(("no resume", "finished before")) for p in result.problems))


def table(rows: list[tuple[str, str, list[KillResult]]]) -> str:
    head = ("scenario", "kill", "kills", "resumes", "repeated paid", "answered, not stored",
            "procs left", "tables identical", "exit code ok", "redrawn", "seconds")
    lines = [head]
    total: dict[str, list[KillResult]] = {}
    for _, kind, results in rows:
        total.setdefault(kind, []).extend(results)
    for name, kind, results in [*rows, *(("all", k, v) for k, v in total.items())]:
        n = len(results)
        lines.append((name, kind, str(n), str(sum(r.resumes for r in results)),
                      str(sum(r.repeated for r in results)),
                      str(sum(r.not_stored for r in results)),
                      str(sum(r.left for r in results)),
                      f"{sum(r.identical for r in results)}/{n}",
                      f"{sum(r.exit_ok for r in results)}/{n}",
                      str(sum(r.redraws for r in results)),
                      f"{sum(r.seconds for r in results):.0f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True))
            for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    text.insert(len(rows) + 2, text[1])
    return "\n".join(text)


def schedule(names: Sequence[str], kills: int) -> dict[str, list[str]]:
    """The kills of each scenario: `kills` kill -9 and `kills` signals spread over the
    scenarios in turn; each scenario's signals alternate SIGINT / SIGTERM, starting with one
    or the other by scenario, so the two come out even over the whole run."""
    plan: dict[str, list[str]] = {name: [] for name in names}
    for i in range(kills):
        j = i % len(names)
        plan[names[j]].append("kill -9")
        plan[names[j]].append("SIGINT" if (i // len(names) + j) % 2 == 0 else "SIGTERM")
    return plan


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=None,
                        help="N kill -9 and N signals (SIGINT and SIGTERM in turn) in all, "
                        "spread over the scenarios in turn; default 20, with --quick one per "
                        "scenario and kind. For N per scenario, run one --scenario at a time")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the kill moments (uniform between the baseline's first "
                        "answer or chunk and the moment its outputs were in place)")
    parser.add_argument("--scenario", action="append", choices=["judge", "generator", "attack",
                                                                 "workers"],
                        help="run only these scenarios (repeatable); default all four")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: fewer examples per scenario, one kill per scenario "
                        "and kind unless --kills says otherwise")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the runs' folders go (default: a temporary folder, removed "
                        "when every kill passed); a failed kill's folder is kept there")
    args = parser.parse_args(argv)
    chosen = scenarios(args.quick)
    names = list(dict.fromkeys(args.scenario or chosen))
    kills = args.kills if args.kills is not None else (len(names) if args.quick else 20)
    if kills < 1:
        parser.error("--kills must be at least 1")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="evalstress-kills-"))
    workdir.mkdir(parents=True, exist_ok=True)
    plan = schedule(names, kills)
    rows: list[tuple[str, str, list[KillResult]]] = []
    bad = False
    began = time.monotonic()
    for name in names:
        if not plan[name]:
            continue
        scenario = chosen[name]
        rng = random.Random(f"{args.seed}:{name}")
        server = FakeServer(responder=scenario.responder).start() if scenario.responder else None
        try:
            base = run_baseline(scenario, server, workdir / name / "baseline")
            print(f"{name}: baseline {base.total:.1f} s, first answer/chunk at "
                  f"{base.first:.1f} s, outputs in place at {base.done:.1f} s, "
                  f"{base.requests} LLM requests", flush=True)
            results: dict[str, list[KillResult]] = {k: [] for k in KINDS}
            for i, kind in enumerate(plan[name]):
                folder = workdir / name / f"{i:02d}-{kind.replace(' ', '')}"
                result = one_kill(scenario, server, base, kind, rng, folder)
                results[kind].append(result)
                status = "FAIL" if failed(result) else "ok"
                print(f"  {name} {kind}: {status}, resumes {result.resumes}, repeated "
                      f"{result.repeated}, not stored {result.not_stored}, left {result.left}, "
                      f"redrawn {result.redraws}, {result.seconds:.1f} s"
                      + "".join(f"\n    {p}" for p in result.problems), flush=True)
                if failed(result):
                    bad = True
                    print(f"    kept: {folder}", flush=True)
                else:
                    shutil.rmtree(folder, ignore_errors=True)
            rows += [(name, kind, found) for kind, found in results.items() if found]
        finally:
            if server is not None:
                server.stop()
    print()
    print(table(rows))
    print("\nrepeated paid: answers the server sent during the killed run that a resume asked "
          "again (after kill -9, not counting those the client had not stored yet); answered, "
          "not stored: answers sent during the killed run that were not in the cache after it "
          "(they cannot be saved after a kill -9; after SIGINT/SIGTERM they must be 0); "
          "redrawn: runs that finished their work before the drawn moment, started again.")
    print(f"{time.monotonic() - began:.0f} s in all; seed {args.seed}; {kills} kill -9 and "
          f"{kills} SIGINT/SIGTERM over {', '.join(names)}; work folder {workdir}")
    if not bad and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
