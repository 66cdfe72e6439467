"""The command line starts light: importing it, `--help` and a bad argument load none of the
libraries a run needs (scipy, torch, spaCy, matplotlib, pyarrow.compute, pandas), so they answer
in a fraction of a second instead of the two seconds those imports take."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("scipy", "torch", "spacy", "matplotlib", "pyarrow.compute", "pandas")

#: runs the command line as `python -m evalstress.cli ARGS` does, then prints, on its last line,
#: the heavy libraries that ended up imported and the exit code
_RUN_CLI = textwrap.dedent(f"""
    import sys
    from evalstress.cli import app
    try:
        app(args=sys.argv[1:], prog_name="evalstress")
        code = 0
    except SystemExit as exc:
        code = exc.code
    print(repr((sorted(m for m in {HEAVY!r} if m in sys.modules), code)))
""")


def _last_line(args: list[str]) -> object:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "120"}
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_importing_the_command_line_loads_no_heavy_library() -> None:
    code = f"import evalstress.cli, sys; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    assert _last_line(["-c", code]) == []


@pytest.mark.parametrize(("args", "exit_code"), [
    (["--help"], 0),
    (["run", "--help"], 0),
    (["card", "--help"], 0),
    (["run", "--no-such-flag"], 2),
    (["run", "--limit", "zero"], 2),
    (["no-such-command"], 2),
])
def test_help_and_argument_errors_load_no_heavy_library(args: list[str], exit_code: int) -> None:
    assert _last_line(["-c", _RUN_CLI, *args]) == ([], exit_code)
