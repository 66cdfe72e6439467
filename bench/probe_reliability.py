"""Reliability probe of the command line: how `evalstress` meets bad, odd and hostile input.

Each case (`probe_cases.py`, `probe_cases_runs.py`: data files, evaluator specs, configs,
suites, imported variants, judge templates, damaged run directories and caches, output
targets, full disks, interrupts, the rest of the command line) runs `python -m evalstress.cli`
in a folder of its own, with $EVALSTRESS_CACHE_DIR inside it, this checkout's src/ first on
PYTHONPATH and a timeout. Judge cases talk to the fake OpenAI-compatible server
(`evalstress.llm.fake_server`) this process starts; nothing else is reached and no model is
downloaded. Each case lands in one outcome:

  data loss         a file the case protected (foreign files in --out, the data, a finished
                    run, the cache, the current folder) is gone or changed afterwards
  traceback         "Traceback" in the output, or an exit code the command line does not
                    promise (0, 2, 3; 1 only from `check`; 4 is its "unexpected error": a bug;
                    a timeout counts here too)
  silent wrong      an input that should be refused ran (exit 0/3), a run that said it worked
                    left wrong outputs, or an API key reached a file or the terminal (named
                    "data leak", the key's encoded forms included: base64 at every
                    alignment, hex, percent-encoding; SQLite caches are read cell by cell),
                    or control characters from the data reached the terminal raw
  late failure      refused (exit 2), but only after work: a staging folder or run directory
                    was made, cache rows written, a temporary file left behind, or more
                    requests sent to the judge server than the case allows; the error could
                    have come first
  misleading        refused (exit 2), but the error line does not name what is at fault
  wrongly refused   an input that should run was refused (exit 2)
  clear error       refused (exit 2) with an error line naming the file, field or option
  rightly accepted  ran as it should (exit 0, or 3 where the case's evaluator fails by design)

Prints a table per category with a total row, then one line per case that is neither a clear
error nor rightly accepted. Exits 1 when any case is a traceback, silent wrong, late failure,
data loss or wrongly refused. Runs as root skip the chmod cases (permissions do not bind);
the serve cases are skipped, with the reason, where `evalstress serve` cannot run (no
llama-cpp-python or no shipped GGUF).

Categories of reliability round four (issue 43) are in `probe_cases_secure.py` (leak-encoded,
markdown, serve, terminal) and `probe_cases_owned.py` (symlink, ownership, upfront, json-depth,
small); a symlink's target is a protected file, so writing through a link is data loss.

Usage: python bench/probe_reliability.py [--only CATEGORY ...] [-k TEXT] [--list] [--jobs N]
       [--json FILE] [--keep] [--workdir DIR]
A full run takes about 25 minutes with one job (the round-four categories, 110 cases: about 9).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
sys.path[:0] = [str(HERE), str(SRC)]

from evalstress.llm.fake_server import FakeServer, Reply  # noqa: E402
from probe_cases import (  # noqa: E402
    Case,
    CaseEnv,
    config_cases,
    data_cases,
    end_group,
    run,
    spec_cases,
    suite_cases,
)
from probe_cases_owned import owned_cases  # noqa: E402
from probe_cases_runs import output_cases  # noqa: E402
from probe_cases_secure import ENCODED_ECHOES, LEAK_KEY, secure_cases  # noqa: E402
from probe_cases_serve import serve_and_drive, unavailable  # noqa: E402

OUTCOMES = ("clear error", "misleading", "rightly accepted", "wrongly refused", "traceback",
            "silent wrong", "late failure", "data loss")
#: outcomes that fail the probe
FAILING = ("traceback", "silent wrong", "late failure", "data loss", "wrongly refused")
#: files of a run directory: a new one after a refusal means the run had started
RUN_FILES = {"results.json", "scores.parquet", "variants.parquet", "manifest.json",
             "examples.jsonl", "skips.jsonl", "report.html"}
MEMORY_GUARD = 3 << 30  # bytes of address space for a case that could blow up
#: finished runs the rundir, cache and out cases copy (built once per probe)
BASE_RUNS = {"bleu": ("bleu",), "two": ("bleu", "rouge")}
WAIT_LIMIT = 120.0  # seconds a case waits for its background run or its signal moment
#: the cache folder of a case's background run, inside the case folder: its rows are the
#: background run's work, not the command's
BACKGROUND_CACHE = "cache-background"
#: the base card the card cases copy: BLEU, small budget, the built-in corpus
BASE_CARD = ("card", "bleu", "--budget", "small", "--quiet", "--workers", "1")
#: requests the fake judge server got, by model name (a case's `max_calls` reads it)
CALLS: dict[str, int] = {}


# ---- what a command did ---------------------------------------------------------------------

@dataclass
class Observation:
    """What one command did, as the classification reads it."""

    exit_code: int | None  # None: killed at the timeout
    stdout: str = ""
    stderr: str = ""
    lost: list[str] = field(default_factory=list)  # protected files gone or changed
    work: list[str] = field(default_factory=list)  # what it made before it exited
    leaks: list[str] = field(default_factory=list)  # where the secret was found
    raw: list[str] = field(default_factory=list)  # control sequences from the data, printed raw
    problem: str | None = None  # what is wrong with a successful run's outputs
    seconds: float = 0.0


@dataclass
class Result:
    category: str
    description: str
    outcome: str
    exit_code: int | None
    message: str
    detail: str
    seconds: float


def digest(path: Path) -> str | None:
    """A file's content hash; None when it is gone (or is no longer a file)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def lost_files(before: dict[Path, str | None], root: Path) -> list[str]:
    """The protected files that are gone or changed since `before` was taken."""
    return [f"{path.relative_to(root)} {'changed' if digest(path) else 'gone'}"
            for path, was in before.items() if digest(path) != was]


def cache_rows(root: Path) -> dict[Path, int]:
    """Rows in every SQLite cache under `root` but the background run's (an unreadable file
    counts 0)."""
    counts: dict[Path, int] = {}
    for path in root.rglob("*.sqlite"):
        if BACKGROUND_CACHE in path.relative_to(root).parts:
            continue
        total = 0
        with contextlib.suppress(sqlite3.Error, OSError):
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                tables = [t for (t,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")
                          if not t.endswith("_namespaces") and not t.startswith("sqlite_")]
                total = sum(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
                            for t in tables)
            finally:
                conn.close()
        counts[path] = total
    return counts


def listing(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def work_done(root: Path, files_before: set[Path], rows_before: dict[Path, int]) -> list[str]:
    """What a command made before it exited: a staging folder, run files, cache rows."""
    made: list[str] = []
    new = sorted(listing(root) - files_before)
    staging = sorted({p for path in new for p in [path, *path.parents]
                      if p.name.endswith(".partial") and root in p.parents})
    made += [f"staging folder {p.relative_to(root)}" for p in staging]
    made += [f"run file {p.relative_to(root)}" for p in new
             if p.name in RUN_FILES and not any(s in p.parents for s in staging)]
    made += [f"temporary file {p.relative_to(root)} left behind" for p in new
             if p.name.endswith(".tmp") and not any(s in p.parents for s in staging)]
    for path, count in cache_rows(root).items():
        if count > rows_before.get(path, 0):
            made.append(f"{count - rows_before.get(path, 0)} cache rows in "
                        f"{path.relative_to(root)}")
    return made


def key_forms(key: str) -> list[str]:
    """How a key can leak: as given, JSON-escaped (\\uXXXX, \\/), percent-encoded, one half of
    it (a message wrapped over two lines), or encoded (`encoded_forms`)."""
    escaped = "".join(c if c.isalnum() else "\\/" if c == "/" else f"\\u{ord(c):04x}"
                      for c in key)
    half = len(key) // 2
    return [key, escaped, quote_plus(key), key[:half], key[half:], *encoded_forms(key)]


def encoded_forms(key: str) -> list[str]:
    """The key's bytes base64-encoded (standard and URL-safe) at each of the three alignments
    it can have inside a longer encoded text (as in b64("Bearer " + key)): the characters of
    the groups that hold only key bytes; hex in both cases; every byte percent-encoded."""
    raw = key.encode()
    forms = []
    for pad in range(3):
        whole = (pad + len(raw)) // 3  # groups of three bytes that are complete
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.append(encode(b"\0" * pad + raw).decode()[4 if pad else 0: 4 * whole])
    forms += [raw.hex(), raw.hex().upper(), "".join(f"%{b:02X}" for b in raw),
              "".join(f"%{b:02x}" for b in raw)]
    return [f for f in forms if len(f) >= 12]


def sqlite_text(path: Path) -> str:
    """Every cell of every table of a SQLite file, blobs decompressed where zlib can (a
    cache may store its values compressed); "" when the file cannot be read."""
    cells: list[str] = []
    with contextlib.suppress(sqlite3.Error, OSError):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    for value in row:
                        if isinstance(value, bytes):
                            with contextlib.suppress(zlib.error):
                                value = zlib.decompress(value)
                            value = value.decode("utf-8", "replace")
                        cells.append(str(value))
        finally:
            conn.close()
    return "\n".join(cells)


def readable_text(path: Path) -> str:
    """A file's text for the leak search: Parquet string cells (the pages are compressed),
    SQLite cells and bytes, else the bytes as text."""
    if path.suffix == ".sqlite":
        return sqlite_text(path) + "\n" + path.read_bytes().decode("utf-8", "replace")
    if path.suffix == ".parquet":
        with contextlib.suppress(Exception):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            return "\n".join(str(v) for name in table.column_names
                             for v in table.column(name).to_pylist() if v is not None)
    return path.read_bytes().decode("utf-8", "replace")


def leaks(key: str, texts: dict[str, str]) -> list[str]:
    """Where (a name of `texts`) some form of `key` appears, also once line breaks and white
    space are taken out (a wrapped terminal line) and doubled backslashes undone (JSON)."""
    found = []
    forms = key_forms(key)
    for where, text in texts.items():
        views = (text, "".join(text.split()), text.replace("\\\\", "\\"))
        if any(form in view for form in forms for view in views):
            found.append(where)
    return found


# ---- classification ---------------------------------------------------------------------------

def error_message(stderr: str) -> str:
    """The command's error, joined into one line: from its first `error:` line to the next
    blank line, or the text of click's boxed "Error" panel, else the last line of stderr."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().lower().startswith("error:"):
            taken = [line.strip()]
            for more in lines[i + 1:]:
                if not more.strip() or more.lstrip().lower().startswith("error:"):
                    break
                taken.append(more.strip())
            return " ".join(taken)
        if "─ Error ─" in line or line.startswith("Error:"):
            boxed = [m.strip("│ ").strip() for m in lines[i + 1:]
                     if m.startswith("│")] or [line]
            return "error: " + " ".join(boxed)
    rest = [line.strip() for line in lines if line.strip()]
    return rest[-1] if rest else ""


def names_fault(says: Sequence[str], message: str) -> bool:
    """Whether the message contains one of `says`, ignoring case and white space (the
    terminal wraps long lines anywhere)."""
    flat = "".join(message.split()).lower()
    return not says or any("".join(s.split()).lower() in flat for s in says)


def normal_exits(case: Case) -> set[int]:
    """The exit codes the command line promises for this case; any other is a crash."""
    codes = {0, 2, 3, case.error_exit, *case.exits}
    if case.argv[:1] == ("check",):
        codes.add(1)
    return codes


def crashed(case: Case, obs: Observation) -> str | None:
    """A traceback in the output, a timeout, or an exit code outside the promised ones."""
    if obs.exit_code is None:
        return f"no exit within {case.timeout:.0f} s (killed)"
    if not case.traceback_ok and ("Traceback" in obs.stdout or "Traceback" in obs.stderr):
        return "a traceback on the terminal"
    if obs.exit_code not in normal_exits(case):
        return f"exit {obs.exit_code}"
    return None


def classify(case: Case, obs: Observation) -> tuple[str, str]:
    """(outcome, detail) of one case, by the rules in this module's docstring, in order:
    data loss, traceback, data leak, then by what the case expects."""
    if obs.lost:
        return "data loss", "; ".join(obs.lost)
    crash = crashed(case, obs)
    if crash:
        return "traceback", crash + (f"; {obs.problem}" if obs.problem else "")
    if obs.leaks:
        return "silent wrong", "data leak: the API key in " + ", ".join(obs.leaks)
    if obs.raw:
        return "silent wrong", "control characters from the data reached the terminal raw: " \
            + ", ".join(obs.raw)
    code = obs.exit_code
    if case.expect == "error" and code in (0, 1, 3):
        return "silent wrong", f"ran (exit {code}) instead of refusing"
    if case.expect != "error" and code in case.exits:
        if obs.problem:
            return "silent wrong", obs.problem
        return "rightly accepted", ""
    if code == case.error_exit and case.expect != "accept":
        if obs.work and not case.late_ok:
            return "late failure", "refused after: " + "; ".join(obs.work)
        message = error_message(obs.stderr)
        if not names_fault(case.says, message):
            return "misleading", "the error names none of: " + ", ".join(case.says)
        wrong = [s for s in case.not_says if s.lower() in message.lower()]
        if wrong:
            return "misleading", "the error describes the fault as " + ", ".join(wrong)
        return "clear error", ""
    if code == 0:  # a judge that should have failed (exit 3) reported success
        return "silent wrong", f"exit 0 where exit {', '.join(map(str, case.exits))} was due"
    if code == 3:
        return "wrongly refused", "exit 3: an evaluator's scores are mostly missing"
    return "wrongly refused", "refused an input that should run"


# ---- running a case ----------------------------------------------------------------------------

def fill(text: str, root: Path, url: str) -> str:
    return text.replace("{url}", url).replace("{root}", str(root))


def environment(root: Path, url: str, extra: dict[str, str],
                unset: Sequence[str] = ()) -> dict[str, str]:
    """The command's environment: no inherited evalstress or OpenAI settings, this checkout's
    src/, the case's cache, wide lines, one thread per library, no model downloads; `unset`
    taken out."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVALSTRESS_", "OPENAI_"))}
    env.update(PYTHONPATH=str(SRC), EVALSTRESS_CACHE_DIR=str(root / "cache"), COLUMNS="200",
               OPENAI_API_KEY="sk-probe-0000", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OMP_NUM_THREADS="1", RAYON_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.update({k: fill(v, root, url) for k, v in extra.items()})
    for name in unset:
        env.pop(name, None)
    return env


def limits(case: Case) -> Callable[[], None] | None:
    """The rlimits a case runs under (set in the child before exec)."""
    if not case.memory_guard and case.file_size_limit is None:
        return None
    memory, size = case.memory_guard, case.file_size_limit

    def apply() -> None:
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_GUARD, MEMORY_GUARD))
        if size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def start(argv: Sequence[str], root: Path, cwd: Path, url: str, env: dict[str, str],
          preexec: Callable[[], None] | None = None) -> subprocess.Popen[str]:
    """`python -m evalstress.cli ARGV` in a session of its own (a timeout kills the group)."""
    return subprocess.Popen([sys.executable, "-m", "evalstress.cli",
                             *(fill(a, root, url) for a in argv)],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True,
                            preexec_fn=preexec)


def stop(proc: subprocess.Popen[str]) -> None:
    """End a process this probe started, and its group, and read what it left."""
    end_group(proc)
    with contextlib.suppress(Exception):
        proc.communicate(timeout=5)


def wait_for(path: Path, proc: subprocess.Popen[str]) -> bool:
    """Whether `path` appears before the process ends (or WAIT_LIMIT passes)."""
    deadline = time.monotonic() + WAIT_LIMIT
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists():
            return True
        time.sleep(0.1)
    return path.exists()


def execute(case: Case, root: Path, url: str, base_run: Callable[[str], Path]) -> tuple[
        Case, Observation]:
    """Prepare the case folder, run the command and observe it; returns the case with its
    placeholders filled (`{bgpid}`) and the observation."""
    cwd = root / case.cwd
    for folder in (root / "cache", cwd):
        folder.mkdir(parents=True, exist_ok=True)
    env = CaseEnv(root, url, base_run)
    for relative, content in case.files.items():
        env.write(relative, content, protect=relative not in case.unprotected)
    if case.setup is not None:
        case.setup(env)
    for keep in (cwd / "KEEP-here.txt", root / "cache" / "KEEP-cache.txt"):
        keep.write_text("the probe's sentinel\n", encoding="utf-8")
        env.protected.append(keep)
    protected = {path: digest(path) for path in env.protected}
    files_before, rows_before = listing(root), cache_rows(root)
    variables = environment(root, url, dict(case.env), case.unset)
    calls_before = CALLS.get(case.max_calls[0], 0) if case.max_calls else 0
    if case.drive is not None:
        served = serve_and_drive(case, [fill(a, root, url) for a in case.argv], cwd, variables)
        return case, Observation(*served[:3], lost_files(protected, root), problem=served[3],
                                 seconds=served[4])

    background = None
    if case.background is not None:
        bg_env = {**variables, "EVALSTRESS_CACHE_DIR": str(root / BACKGROUND_CACHE)}
        background = start(case.background, root, cwd, url, bg_env)
        assert case.wait_for is not None
        if not wait_for(root / case.wait_for, background):
            stop(background)
            raise RuntimeError(f"the background run never made {case.wait_for}")
        case = replace(case, says=tuple(s.replace("{bgpid}", str(background.pid))
                                        for s in case.says))
        files_before, rows_before = listing(root), cache_rows(root)
    started = time.monotonic()
    proc = start(case.argv, root, cwd, url, variables, limits(case))
    try:
        if case.signal is not None:
            assert case.wait_for is not None
            if wait_for(root / case.wait_for, proc):
                time.sleep(0.5)
                target = -proc.pid if case.signal == signal.SIGINT else proc.pid
                with contextlib.suppress(ProcessLookupError):
                    os.kill(target, case.signal)
        try:
            out, err = proc.communicate(timeout=case.timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            stop(proc)
            out, err, code = "", "", None
    finally:
        if background is not None:
            stop(background)
    obs = Observation(code, out, err, seconds=time.monotonic() - started)
    obs.lost = lost_files(protected, root)
    obs.work = work_done(root, files_before, rows_before)
    if case.max_calls is not None:
        model, most = case.max_calls
        sent = CALLS.get(model, 0) - calls_before
        if sent > most:
            obs.work.append(f"{sent} requests to the judge server (at most {most} needed)")
    obs.raw = [ascii(s) for s in case.raw if s in out or s in err]
    if case.secret:
        written = {str(p.relative_to(root)): readable_text(p) for p in root.rglob("*")
                   if p.is_file() and p not in protected}
        obs.leaks = leaks(case.secret, {"stdout": out, "stderr": err, **written})
    if code in case.exits and case.expect != "error":  # a run that went on past the point
        spent = [w for w in obs.work if w.endswith("needed)")]  # of knowing: a problem too
        obs.problem = output_problem(case, root) or (spent[0] if spent else None)
    return case, obs


def output_problem(case: Case, root: Path) -> str | None:
    """What is wrong with the outputs of a run that said it worked."""
    missing = [p for p in case.products if not (root / p).exists()]
    if missing:
        return "said it worked but wrote no " + ", ".join(missing)
    if case.verify is None:
        return None
    try:
        return case.verify(root)
    except Exception as exc:  # a missing or unreadable output is the finding
        return f"outputs unreadable ({type(exc).__name__}: {exc})"


# ---- the probe -----------------------------------------------------------------------------------

def all_cases() -> list[Case]:
    return [*data_cases(), *spec_cases(), *config_cases(), *suite_cases(), *output_cases(),
            *secure_cases(), *owned_cases()]


def respond(body: dict[str, Any]) -> Reply:
    """The fake judge server, by model name: echo-HOW answers 401 with the key echoed (the
    encoded forms of ENCODED_ECHOES echo the probe's LEAK_KEY, which the server cannot see
    otherwise), echo200-HOW rates 4 and echoes the key in the answer, deny-401 refuses every
    request, slow takes 2 s, status-500 fails, no-rating answers without a number, others
    rate 4. Requests are counted by model (CALLS)."""
    model = str(body.get("model", ""))
    CALLS[model] = CALLS.get(model, 0) + 1
    if model.removeprefix("echo-") in ENCODED_ECHOES:
        message = ENCODED_ECHOES[model.removeprefix("echo-")](LEAK_KEY)
        return Reply(status=401, body=json.dumps({"error": {"message": message}}).encode())
    if model.removeprefix("echo200-") in ENCODED_ECHOES:
        return Reply("Rating: 4. " + ENCODED_ECHOES[model.removeprefix("echo200-")](LEAK_KEY))
    if model == "deny-401":
        return Reply(status=401, error="Incorrect API key provided")
    if model.startswith("echo-"):
        return Reply(status=401, echo=model.removeprefix("echo-"), error="invalid key")
    if model == "slow":
        return Reply("Rating: 4", delay=2.0)
    if model == "status-500":
        return Reply(status=500)
    if model == "no-rating":
        return Reply("I would rather not say.")
    return Reply("Rating: 4")


class BaseRuns:
    """The finished runs cases copy, each made once (by the first case that asks)."""

    def __init__(self, folder: Path, url: str):
        self.folder = folder
        self.url = url
        self._lock = threading.Lock()
        self._made: dict[str, Path] = {}

    def __call__(self, kind: str) -> Path:
        with self._lock:
            if kind not in self._made:
                target = self.folder / kind
                env = environment(self.folder, self.url, {})
                env["EVALSTRESS_CACHE_DIR"] = str(self.folder / f"{kind}.cache")
                argv = (*BASE_CARD, "--out", str(target)) if kind == "card" else \
                    run(data=None, evaluators=BASE_RUNS[kind], out=str(target))
                proc = start(argv, self.folder, self.folder, self.url, env)
                _, err = proc.communicate(timeout=600)
                if proc.returncode != 0:
                    raise RuntimeError(f"the base run '{kind}' failed: {err[-2000:]}")
                self._made[kind] = target
            return self._made[kind]


def probe(case: Case, workdir: Path, url: str, base: BaseRuns, keep: bool) -> Result:
    """Run one case in a fresh folder and classify it; the folder goes unless `keep` and the
    case fails."""
    root = Path(tempfile.mkdtemp(prefix="case-", dir=workdir))
    try:
        filled, obs = execute(case, root, url, base)
        outcome, detail = classify(filled, obs)
    except Exception as exc:  # the probe's own failure to prepare a case
        outcome, detail, obs = "traceback", f"probe could not run the case: {exc}", \
            Observation(None)
    message = error_message(obs.stderr) if obs.exit_code not in (0, None) else ""
    if keep and outcome in FAILING:
        detail += f" (kept in {root})"
        (root / "probe-output.txt").write_text(
            f"argv: {[fill(a, root, url) for a in case.argv]}\nexit: {obs.exit_code}\n"
            f"--- stdout\n{obs.stdout}\n"
            f"--- stderr\n{obs.stderr}\n", encoding="utf-8")
    else:
        for path in root.rglob("*"):  # let cleanup into chmod'ed folders
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)
    return Result(case.category, case.description, outcome, obs.exit_code, message, detail,
                  round(obs.seconds, 1))


def table(results: Iterable[Result]) -> str:
    by_category: dict[str, dict[str, int]] = {}
    for r in results:
        by_category.setdefault(r.category, dict.fromkeys(OUTCOMES, 0))[r.outcome] += 1
    total = {o: sum(c[o] for c in by_category.values()) for o in OUTCOMES}
    head = "| category | cases | " + " | ".join(OUTCOMES) + " |"
    lines = [head, "| --- " * (len(OUTCOMES) + 2) + "|"]
    for name, counts in [*by_category.items(), ("**total**", total)]:
        lines.append(f"| {name} | {sum(counts.values())} | "
                     + " | ".join(str(counts[o]) for o in OUTCOMES) + " |")
    return "\n".join(lines)


def findings(results: Iterable[Result]) -> list[str]:
    """One line per case that is neither a clear error nor rightly accepted."""
    return [f"- [{r.outcome}] {r.category}: {r.description} (exit {r.exit_code}): "
            f"{r.detail}{' | ' + r.message[:200] if r.message else ''}"
            for r in results if r.outcome not in ("clear error", "rightly accepted")]


def select(cases: list[Case], only: Sequence[str] | None, text: str | None,
           is_root: bool) -> tuple[list[Case], list[Case]]:
    """(cases to run, chmod cases skipped because permissions do not bind for root)."""
    chosen = [c for c in cases if (not only or c.category in only)
              and (not text or text.lower() in c.name.lower())]
    skipped = [c for c in chosen if c.needs_non_root and is_root]
    return [c for c in chosen if c not in skipped], skipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", help="a category (repeatable)")
    parser.add_argument("-k", dest="text", help="only cases whose name contains TEXT")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    parser.add_argument("--json", type=Path, help="save every case's result here")
    parser.add_argument("--keep", action="store_true", help="keep the folders of failing cases")
    parser.add_argument("--workdir", type=Path, help="where case folders go (default: a "
                        "temporary folder)")
    args = parser.parse_args()
    cases = all_cases()
    categories = sorted({c.category for c in cases})
    if args.only and set(args.only) - set(categories):
        parser.error(f"unknown category {sorted(set(args.only) - set(categories))}; "
                     f"choose from {categories}")
    chosen, skipped = select(cases, args.only, args.text, os.geteuid() == 0)
    missing = {need: unavailable(need) for need in {c.needs for c in chosen if c.needs}}
    lacking = [c for c in chosen if c.needs and missing[c.needs]]
    chosen = [c for c in chosen if c not in lacking]
    for need, reason in missing.items():
        if reason:
            print(f"skipping the cases that need {need}: {reason}")
    if args.list:
        for c in chosen + skipped:
            print(f"{c.category:9} {c.expect:6} {c.description}")
        print(f"\n{len(chosen) + len(skipped)} cases")
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="evalstress-probe-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with FakeServer(responder=respond, keep_requests=False) as server:
        base = BaseRuns(workdir / "_base", server.base_url)
        base.folder.mkdir(exist_ok=True)

        def one(c: Case) -> Result:
            result = probe(c, workdir, server.base_url, base, args.keep)
            print(f"  {result.outcome:16} {result.seconds:6.1f} s  {c.name}", flush=True)
            return result

        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(one, chosen))
    if not args.workdir and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{len(results)} cases in {time.monotonic() - started:.0f} s"
          + (f"; {len(skipped)} chmod cases skipped (running as root, where permissions do "
             "not bind)" if skipped else "") + "\n")
    print(table(results))
    lines = findings(results)
    if lines:
        print("\nCases to look at:")
        print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n",
                             encoding="utf-8")
    sys.exit(1 if any(r.outcome in FAILING for r in results) else 0)


if __name__ == "__main__":
    main()
