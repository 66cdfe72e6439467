"""Refresh requirements/lock.txt: the exact versions `scripts/setup.sh` installs and CI tests.

The package itself asks for ranges (pyproject.toml), so `pip install evalstress` takes whatever
compatible releases the registry serves that day. The test set-up must not: a new release of a
test dependency (a changed message, a changed default) would turn the suite red on a commit
that changed nothing. So setup.sh installs through the lock (`pip install -c`), and this script
is the one way the lock moves:

1. a new virtual environment (a temporary folder, or --venv DIR, kept) gets
   `EVALSTRESS_UNLOCKED=1 bash scripts/setup.sh`: every extra setup.sh installs, at the newest
   releases the ranges allow;
2. `pip freeze` of that environment (evalstress itself left out) becomes the new lock, with a
   header naming the Python and the platform it was resolved on;
3. what moved against the old lock is printed (updated, added, removed);
4. the test suite runs in that environment (`--no-tests` skips it); the exit status is the
   suite's.

The lock is written before the suite runs, so a red suite can be reproduced with the same set;
`git checkout requirements/lock.txt` goes back. Built wheels stay in pip's cache, so a second
refresh does not compile llama-cpp-python again (the first takes about 15 minutes on 2 cores).

Usage: python scripts/refresh_lock.py [--venv DIR] [--no-tests] [--pytest-args "..."]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
#: the project's own distribution: installed editable from the checkout, never pinned
OWN = "evalstress"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)\s*$")


def canonical(name: str) -> str:
    """A distribution name as the registry compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(text: str, source: str = "requirements/lock.txt") -> dict[str, str]:
    """The `name==version` lines of a lock, by canonical name. Comments and blank lines are
    skipped; any other line is an error naming its number, since a lock is only pins."""
    pins: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = PIN.match(stripped)
        if match is None:
            raise ValueError(f"{source}, line {number}: not a `name==version` pin: {stripped!r}")
        pins[canonical(match.group(1))] = match.group(2)
    return pins


def moved(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """What changed between two locks, a line each, sorted by name: `name a -> b`,
    `+ name b` (added), `- name a` (removed)."""
    lines = []
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if before is None:
            lines.append(f"+ {name} {after}")
        elif after is None:
            lines.append(f"- {name} {before}")
        else:
            lines.append(f"  {name} {before} -> {after}")
    return lines


def lock_text(frozen: Iterable[str], python: str, machine: str, day: date) -> str:
    """The lock file: a header saying what it is and how to move it, then the pins sorted by
    name, the project itself left out."""
    pins = {}
    for line in frozen:
        match = PIN.match(line.strip())
        if match and canonical(match.group(1)) != OWN:
            pins[canonical(match.group(1))] = f"{match.group(1)}=={match.group(2)}"
    header = [
        "# The exact set `bash scripts/setup.sh` installs and CI tests (pip install -c this file).",
        "# Written by `python scripts/refresh_lock.py`, which resolves every extra setup.sh installs",
        "# at the newest releases pyproject.toml allows, runs the suite on them and says what moved.",
        "# Do not edit by hand; tests/test_lock.py fails when an installed version differs.",
        f"# Resolved {day.isoformat()} on CPython {python}, {machine}.",
    ]
    return "\n".join(header + [pins[name] for name in sorted(pins)]) + "\n"


def resolved_on(text: str) -> str | None:
    """The `major.minor` of the CPython a lock was resolved on, from its header."""
    match = re.search(r"^# Resolved \S+ on CPython (\d+\.\d+)", text, flags=re.MULTILINE)
    return match.group(1) if match else None


def run(argv: list[str], env: dict[str, str]) -> None:
    """Run a step, echoing it; a failed step ends the refresh with its status."""
    print("$ " + shlex.join(argv), flush=True)
    done = subprocess.run(argv, cwd=ROOT, env=env)
    if done.returncode:
        sys.exit(f"refresh_lock: `{shlex.join(argv)}` failed with exit {done.returncode}")


def refresh(venv: Path, tests: bool, pytest_args: list[str]) -> int:
    """Steps 1-4 of the module's docstring; returns the suite's exit status (0 without it)."""
    started = time.monotonic()
    run([sys.executable, "-m", "venv", str(venv)], dict(os.environ))
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "VIRTUAL_ENV": str(venv), "EVALSTRESS_UNLOCKED": "1"}
    env.pop("PYTHONHOME", None)
    run(["bash", "scripts/setup.sh"], env)
    python = str(venv / "bin" / "python")
    frozen = subprocess.run([python, "-m", "pip", "freeze", "--exclude-editable"], cwd=ROOT,
                            env=env, capture_output=True, text=True, check=True).stdout
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             env=env, capture_output=True, text=True, check=True).stdout.strip()
    old = read_pins(LOCK.read_text(encoding="utf-8")) if LOCK.exists() else {}
    text = lock_text(frozen.splitlines(), version, f"{platform.system()} {platform.machine()}",
                     date.today())
    LOCK.parent.mkdir(exist_ok=True)
    LOCK.write_text(text, encoding="utf-8")
    changes = moved(old, read_pins(text))
    installed = time.monotonic() - started
    print(f"\n{LOCK.relative_to(ROOT)}: {len(read_pins(text))} pins, resolved and installed in "
          f"{installed / 60:.1f} min; {len(changes)} moved:")
    print("\n".join(changes) if changes else "  (nothing)")
    if not tests:
        return 0
    suite = subprocess.run([python, "-m", "pytest", *pytest_args], cwd=ROOT, env=env)
    verdict = "passed" if suite.returncode == 0 else f"FAILED (exit {suite.returncode})"
    print(f"\nthe suite on the new set {verdict}; refresh took "
          f"{(time.monotonic() - started) / 60:.1f} min in all")
    return suite.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, help="keep the new environment in this folder "
                        "(it must not exist yet); default: a temporary folder, removed after")
    parser.add_argument("--no-tests", action="store_true", help="write the lock, skip the suite")
    parser.add_argument("--pytest-args", default="", help="extra arguments for pytest, quoted")
    args = parser.parse_args()
    if args.venv is not None:
        if args.venv.exists():
            parser.error(f"--venv {args.venv}: the folder exists; name a new one")
        sys.exit(refresh(args.venv.resolve(), not args.no_tests, shlex.split(args.pytest_args)))
    with tempfile.TemporaryDirectory(prefix="evalstress-lock-") as folder:
        sys.exit(refresh(Path(folder) / "venv", not args.no_tests, shlex.split(args.pytest_args)))


if __name__ == "__main__":
    main()
