"""Fuzz the perturbations, the LLM attacks' prompts and acceptance checks, and the data loaders
with fresh randomness and many examples: a developer's run before a release.

The test suite checks the same properties on one fixed draw per test (tests/conftest.py loads
a derandomized hypothesis profile, so CI cannot turn red at random). This run draws new inputs
every time, from the strategies of tests/perturb/fuzzing.py (any Unicode, English words mixed
with digits of other scripts, right-to-left and unspaced scripts, combining marks, emoji
sequences, control characters...):

- `rule:NAME`: every rule perturbation at every severity of its grid answers a text with a
  Variant that changed it or a Skip that says why (tests/perturb/test_fuzz.py);
- `prompt:NAME` and `checks:NAME`: every LLM attack builds its prompt for any text, and its
  acceptance checks judge any answer against any original without an exception;
- `loader:TEST`: the loader properties of tests/core/test_fuzz_loaders.py, at their own 150
  examples per call; their inputs are counted as files handed to `load_examples`.

Properties take turns, `--per-round` examples each, until `--seconds` have passed; the first
round runs whole whatever the budget, and a round that finds a failure may run past it
(hypothesis shrinks the input first). A property that fails is not run again. An example
running past `--hang` seconds is a failure (a loop that never ends); one stuck inside a C
extension past twice that gets every thread's stack printed. Prints per property the inputs
tried, then each failure with its exception, where it was raised and its minimal example,
ready to paste as an `@example`; exits 1 on a failure.

Usage: python bench/bench_fuzz.py [--seconds 600] [--per-round 100] [--hang 60]
       [--only PREFIX ...]
"""

from __future__ import annotations

import argparse
import faulthandler
import functools
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))


@dataclass
class Property:
    """One property: `run(examples, count)` tries up to `examples` inputs, calling `count()` for
    each, and raises when one breaks it."""

    name: str
    run: Callable[[int, Callable[[], None]], None]
    tried: int = 0
    failures: list[str] = field(default_factory=list)


def fresh_settings(examples: int) -> settings:
    """New randomness each call, no example database, no timing: only a broken property fails."""
    return settings(max_examples=examples, derandomize=False, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=True)


def drawn(name: str, strategies: dict[str, st.SearchStrategy[Any]],
          body: Callable[..., None], hang: int) -> Property:
    """A property over inputs drawn from `strategies`, `body(**inputs)` checking each."""
    from tests.perturb.fuzzing import time_limit

    def run(examples: int, count: Callable[[], None]) -> None:
        @fresh_settings(examples)
        @given(**strategies)
        @recording
        def check(**inputs: Any) -> None:
            count()
            # stuck inside a C extension, where no signal handler runs: the stacks show where
            faulthandler.dump_traceback_later(2 * hang)
            try:
                with time_limit(hang):
                    body(**inputs)
            finally:
                faulthandler.cancel_dump_traceback_later()

        check()

    return Property(name, run)


def perturbation_properties(hang: int) -> list[Property]:
    from tests.perturb.fuzzing import (
        LLM,
        RULES,
        check_attack_prompt,
        check_attack_validation,
        check_rule_grid,
        texts,
    )

    from evalstress.core.text import TextParser

    parser = TextParser()
    parser.parse("spaCy loads before the clock starts.")
    out = [drawn(f"rule:{name}", {"text": texts, "seed": st.integers(0, 2**32 - 1)},
                 lambda text, seed, name=name: check_rule_grid(name, text, seed, parser), hang)
           for name in RULES]
    out += [drawn(f"prompt:{name}", {"text": texts},
                  lambda text, name=name: check_attack_prompt(name, text), hang)
            for name in LLM]
    out += [drawn(f"checks:{name}", {"original": texts, "answer": texts},
                  lambda original, answer, name=name: check_attack_validation(
                      name, original, answer, parser), hang)
            for name in LLM]
    return out


def loader_properties() -> list[Property]:
    """The property tests of tests/core/test_fuzz_loaders.py themselves (each function there
    that hypothesis drives); their settings were fixed when their module was imported (under
    `main`, after the random profile was loaded)."""
    import tests.core.test_fuzz_loaders as loaders

    return module_properties(loaders, "loader")


def module_properties(loaders: Any, prefix: str) -> list[Property]:
    """A property per hypothesis test of the module `loaders`, counting the files it hands to
    the module's `load_examples`."""

    def runner(test: Callable[[], None]) -> Callable[[int, Callable[[], None]], None]:
        def run(_examples: int, count: Callable[[], None]) -> None:
            # hypothesis calls its handle's `inner_test` for every input (the documented hook
            # for wrapping a test's execution): wrapped, it records the inputs of a failure
            handle = test.hypothesis  # type: ignore[attr-defined]
            inner = handle.inner_test
            handle.inner_test = recording(inner)
            try:
                with counting_loads(loaders, count):
                    test()
            finally:
                handle.inner_test = inner

        return run

    return [Property(f"{prefix}:{name}", runner(test)) for name, test in vars(loaders).items()
            if name.startswith("test_") and hasattr(test, "hypothesis")]


@contextmanager
def counting_loads(module: Any, count: Callable[[], None]) -> Iterator[None]:
    """Count each file the loader tests hand to `load_examples`."""
    load = module.load_examples

    def counted(*args: Any, **kwargs: Any) -> Any:
        count()
        return load(*args, **kwargs)

    module.load_examples = counted
    try:
        yield
    finally:
        module.load_examples = load


#: the attribute `recording` sets on an exception: the inputs the test was called with
INPUTS = "fuzz_inputs"


def recording(test: Callable[..., None]) -> Callable[..., None]:
    """`test`, noting on any exception it raises the inputs it was called with. hypothesis
    calls a failing test last with the minimal example it shrank to, so the exception it
    raises carries that example, whatever words hypothesis puts in its own notes."""

    @functools.wraps(test)
    def recorded(*args: Any, **kwargs: Any) -> None:
        try:
            test(*args, **kwargs)
        except BaseException as error:
            with suppress(AttributeError, TypeError):  # an exception without __dict__
                setattr(error, INPUTS, (args, kwargs))
            raise

    return recorded


def as_example(inputs: tuple[tuple[Any, ...], dict[str, Any]] | None) -> str:
    """The inputs as a `@example(...)` decorator, ready to paste above the property."""
    if inputs is None:
        return "(the minimal example was not recorded)"
    args, kwargs = inputs
    shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"@example({', '.join(shown)})"


def describe(error: BaseException) -> list[str]:
    """Each distinct failure in what hypothesis raised: the exception, the frame it came from
    (outside hypothesis) and the minimal example hypothesis shrank it to."""
    if isinstance(error, BaseExceptionGroup):
        return [line for inner in error.exceptions for line in describe(inner)]
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if "/hypothesis/" not in f.filename]
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames[-3:]))
    example = as_example(getattr(error, INPUTS, None))
    return [f"{type(error).__name__}: {str(error)[:300]}\n    raised at {where}\n    {example}"]


def fuzz(properties: list[Property], seconds: float, per_round: int,
         echo: Callable[[str], None] = print) -> None:
    """Rounds over the properties, the first one whole, until the budget is spent; failures
    land on each property."""
    deadline = time.monotonic() + seconds
    first = True
    while first or time.monotonic() < deadline:
        live = [p for p in properties if not p.failures]
        for prop in live:
            if not first and time.monotonic() >= deadline:
                return

            def count(prop: Property = prop) -> None:
                prop.tried += 1

            try:
                prop.run(per_round, count)
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # any failure of the property, reported below
                prop.failures = describe(error)
                echo(f"{prop.name}: FAILED after {prop.tried:,} inputs")
        first = False
        if not live:
            return


def report(properties: list[Property], seconds: float) -> str:
    width = max(len(p.name) for p in properties)
    lines = [f"{'property':<{width}}  {'inputs':>8}  result"]
    lines += [f"{p.name:<{width}}  {p.tried:>8,}  {'FAILED' if p.failures else 'ok'}"
              for p in properties]
    failed = [p for p in properties if p.failures]
    lines.append(f"total: {sum(p.tried for p in properties):,} inputs over {len(properties)} "
                 f"properties in {seconds:.0f} s; {len(failed)} failed")
    for prop in failed:
        lines += ["", f"{prop.name}:", *(f"  {f}" for f in prop.failures)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="time budget (default 600)")
    parser.add_argument("--per-round", type=int, default=100,
                        help="examples per property per round (default 100)")
    parser.add_argument("--hang", type=int, default=60,
                        help="seconds after which one example counts as hung (default 60)")
    parser.add_argument("--only", nargs="+", metavar="PREFIX", default=None,
                        help="run only the properties whose names start with one of these "
                             "(e.g. rule:char-typo loader:)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.per_round < 1 or args.hang < 1:
        parser.error("--seconds, --per-round and --hang must be positive")
    # the loader tests take their settings from the profile loaded when they are imported
    settings.register_profile("bench-fuzz", derandomize=False, database=None, deadline=None,
                              suppress_health_check=list(HealthCheck))
    settings.load_profile("bench-fuzz")
    properties = perturbation_properties(args.hang) + loader_properties()
    if args.only:
        properties = [p for p in properties if p.name.startswith(tuple(args.only))]
        if not properties:
            parser.error(f"--only {' '.join(args.only)}: no property starts with that")
    import hypothesis

    print(f"bench_fuzz: {len(properties)} properties, {args.seconds:.0f} s, rounds of "
          f"{args.per_round} examples, hypothesis {hypothesis.__version__}", flush=True)
    start = time.monotonic()
    fuzz(properties, args.seconds, args.per_round,
         echo=lambda line: print(line, flush=True))
    print(report(properties, time.monotonic() - start))
    return 1 if any(p.failures for p in properties) else 0


if __name__ == "__main__":
    sys.exit(main())
