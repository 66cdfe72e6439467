"""bench/bench_fuzz.py: a few seconds of its run end to end, and how it reports a failure and a
hang (on properties made to fail, since the real ones pass)."""

from __future__ import annotations

import runpy
import subprocess
import sys
import types
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
BENCH = str(ROOT / "bench" / "bench_fuzz.py")


def test_a_short_run_tries_inputs_on_each_kind_of_property_and_passes() -> None:
    names = ["rule:char-typo", "prompt:abbreviation", "checks:abbreviation",
             "loader:test_arbitrary_json_rows"]
    done = subprocess.run([sys.executable, BENCH, "--seconds", "3", "--per-round", "5",
                           "--only", *names], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {f[0]: f[1:] for f in (line.split() for line in done.stdout.splitlines())
            if len(f) == 3 and f[0] in names}
    assert set(rows) == set(names)
    assert all(int(tried.replace(",", "")) > 0 and result == "ok"
               for tried, result in rows.values())
    assert "over 4 properties" in done.stdout and "0 failed" in done.stdout


def test_a_failure_is_reported_with_its_minimal_example_and_stops_that_property() -> None:
    bench = runpy.run_path(BENCH, run_name="bench")

    def empty(text: str) -> None:
        assert not text, "a character"

    broken = bench["drawn"]("rule:empty", {"text": st.text()}, empty, 10)
    fine = bench["drawn"]("rule:fine", {"text": st.text(max_size=5)}, lambda text: None, 10)
    bench["fuzz"]([broken, fine], 1, 50, echo=lambda line: None)
    assert len(broken.failures) == 1 and not fine.failures
    failure = broken.failures[0]
    # hypothesis shrinks any text to its simplest one-character text, "0": the report gives it
    # as a decorator to paste above the property, whatever hypothesis's own notes say
    assert failure.startswith("AssertionError: a character")
    assert "@example(text='0')" in failure
    assert "test_bench_fuzz.py" in failure  # where it was raised
    # `fine` ran its whole first round; a failed property is not run again
    assert fine.tried >= 50
    tried = (broken.tried, fine.tried)
    bench["fuzz"]([broken, fine], 0.1, 50, echo=lambda line: None)
    assert broken.tried == tried[0] and fine.tried >= tried[1] + 50
    table = bench["report"]([broken, fine], 1.0)
    assert "rule:empty" in table and "FAILED" in table and "1 failed" in table


def test_an_example_that_never_ends_is_a_failure() -> None:
    bench = runpy.run_path(BENCH, run_name="bench")

    def forever(text: str) -> None:
        while True:
            pass

    hung = bench["drawn"]("rule:hangs", {"text": st.just("loop")}, forever, 1)
    bench["fuzz"]([hung], 1, 1, echo=lambda line: None)
    assert len(hung.failures) == 1
    assert hung.failures[0].startswith("TimeoutError: still running after 1 s")


def test_a_failing_loader_property_is_reported_with_its_minimal_example() -> None:
    """The loader properties are hypothesis tests of their own module; the bench wraps each
    test's execution, so a failure names its inputs and the wrapper is removed afterwards."""
    bench = runpy.run_path(BENCH, run_name="bench")
    module = types.ModuleType("made_up_loader_tests")
    loaded: list[str] = []
    module.load_examples = loaded.append  # type: ignore[attr-defined]

    @settings(database=None, derandomize=True, deadline=None)
    @given(rows=st.integers(0, 1000))
    def test_few_rows(rows: int) -> None:
        module.load_examples(f"{rows} rows")  # type: ignore[attr-defined]
        assert rows < 7, "too many rows"

    module.test_few_rows = test_few_rows  # type: ignore[attr-defined]
    inner = test_few_rows.hypothesis.inner_test  # type: ignore[attr-defined]
    (prop,) = bench["module_properties"](module, "loader")
    bench["fuzz"]([prop], 1, 50, echo=lambda line: None)
    assert prop.name == "loader:test_few_rows" and len(prop.failures) == 1
    # 7 is the smallest count the property refuses; each input handed to the loader is counted
    assert "@example(rows=7)" in prop.failures[0], prop.failures[0]
    assert prop.tried == len(loaded) > 0
    assert test_few_rows.hypothesis.inner_test is inner  # type: ignore[attr-defined]
