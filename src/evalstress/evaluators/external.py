"""Evaluators the user brings: a Python callable or an external command speaking JSONL.

A callable's cached scores are keyed by a fingerprint of its code (bytecode, constants, names,
defaults and simple closure values), so editing a scorer invalidates its old scores instead of
silently returning them; comments, blank lines and moves within the file do not. Code the
function calls (helpers, a model it loads) is not covered: bump `version=` when only that changes.
`python:target=module:function` finds modules in the working directory too, as `python -c` would.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalstress.core.params import (
    BOOLEAN,
    REQUIRED,
    TEXT,
    Param,
    ParamKind,
    ParamValueError,
    declare_params,
    duration,
    either,
    optional,
    real,
    text,
    words,
)
from evalstress.core.strict import ConfigError
from evalstress.core.userfile import DataError, parse_json_line
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, evaluator

ScoreFunction = Callable[..., Any]


def _to_row(value: Any, aspects: tuple[str, ...], where: str) -> ScoreRow:
    """Accept a number, None, or a mapping aspect -> number; anything else is missing."""
    if isinstance(value, Mapping):
        row = {}
        for aspect in aspects:
            item = value.get(aspect)
            row[aspect] = _to_score(item, f"{where}: no number for '{aspect}'")
        return row
    if len(aspects) != 1:
        return {a: Score.missing(f"{where}: expected a mapping of {list(aspects)}") for a in aspects}
    return {aspects[0]: _to_score(value, f"{where}: returned {value!r}")}


def _to_score(value: Any, reason: str) -> Score:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return Score.missing(reason)
    return Score(float(value))


def _resolve(target: str) -> ScoreFunction:
    module_name, sep, attr = target.partition(":")
    if not sep:
        raise ValueError(f"python evaluator target '{target}' must look like package.module:function")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:  # a console script does not put it there
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.split(".")[0] == exc.name.split(".")[0]:
            raise ValueError(f"python evaluator target '{target}': no module '{exc.name}' in the "
                             f"working directory ({cwd}) or the installed packages") from None
        raise
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
    if not callable(fn):
        raise ValueError(f"'{target}' is not a callable")
    return fn


_SIMPLE = (int, float, str, bytes, bool, type(None), complex)


def _stable_repr(value: Any) -> str:
    """repr() that does not depend on hash randomisation (frozensets of strings) or addresses."""
    if isinstance(value, types.CodeType):
        return _code_text(value)
    if isinstance(value, frozenset | set):
        return "{" + ",".join(sorted(_stable_repr(v) for v in value)) + "}"
    if isinstance(value, tuple | list):
        return "(" + ",".join(_stable_repr(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ",".join(sorted(f"{_stable_repr(k)}:{_stable_repr(v)}"
                                     for k, v in value.items())) + "}"
    if isinstance(value, _SIMPLE):
        return repr(value)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _code_text(code: types.CodeType) -> str:
    """What a code object does, without line numbers: bytecode, constants and names."""
    return "|".join([code.co_code.hex(), _stable_repr(code.co_consts), ",".join(code.co_names),
                     ",".join(code.co_varnames), ",".join(code.co_freevars)])


def source_fingerprint(fn: Any) -> str:
    """16 hex digits of sha256 over the code a callable runs, its defaults and simple closure
    values; partials add their bound arguments, callable objects use their class's __call__."""
    parts: list[str] = []
    while isinstance(fn, functools.partial):
        parts.append(_stable_repr((fn.args, fn.keywords)))
        fn = fn.func
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType) and not isinstance(fn, type) and callable(fn):
        parts.append(f"{type(fn).__module__}.{type(fn).__qualname__}")
        fn = next((vars(k)["__call__"] for k in type(fn).__mro__ if "__call__" in vars(k)), fn)
    code = getattr(fn, "__code__", None)
    if isinstance(code, types.CodeType):
        parts.append(_code_text(code))
        parts.append(_stable_repr(getattr(fn, "__defaults__", None)))
        parts.append(_stable_repr(getattr(fn, "__kwdefaults__", None)))
        cells = getattr(fn, "__closure__", None) or ()
        values = []
        for cell in cells:
            try:
                values.append(_stable_repr(cell.cell_contents))
            except ValueError:  # an empty cell
                values.append("<empty>")
        parts.append(",".join(values))
    else:  # a builtin or extension callable: its name is all we can see
        parts.append(f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


#: what a `python:` scorer must be, in every place that tells it (the listing, the docs, errors)
CONTRACT = ("expected f(request) -> number; request has .text, .references, .source, .task; "
            "it may also return a mapping aspect -> number, or None (a missing score)")
#: the made-up request a `python:target=` scorer is called on once when built
PROBE = ScoreRequest("A short text to check the scorer.", source="Its source.",
                     references=("A reference text.",), task="open-ended")
#: (target, code fingerprint, batched, aspects) of the scorers this process has probed already
_PROBED: set[tuple[str, str, bool, tuple[str, ...]]] = set()


def check_signature(fn: Any, where: str) -> None:
    """Refuse (ConfigError) a callable that cannot be called with one request, before any
    text is scored; one whose signature Python cannot read (a builtin) is let through."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(PROBE)
    except TypeError:
        names = ", ".join(str(p.replace(annotation=inspect.Parameter.empty))
                          for p in signature.parameters.values())
        raise ConfigError(f"{where}: takes ({names}), which one request cannot call; "
                          f"{CONTRACT}") from None


def probe(fn: Any, where: str, aspects: tuple[str, ...], batched: bool) -> None:
    """Call the scorer once on a made-up request and refuse (ConfigError) what breaks the
    contract: a TypeError or AttributeError from the call (it expected something else than a
    request), or an answer that is no score. Another exception is the scorer's own business
    on a made-up text, and is left to the run, which records it per text."""
    try:
        answer = fn([PROBE]) if batched else fn(PROBE)
    except (TypeError, AttributeError) as exc:
        raise ConfigError(f"{where}: called on one request it raised {type(exc).__name__}: "
                          f"{exc}; {CONTRACT}") from None
    except Exception:  # the scorer failing on a made-up text: the run records it per text
        return
    if batched:
        if not isinstance(answer, Sequence) or isinstance(answer, str | bytes) or \
                len(answer) != 1:
            raise ConfigError(f"{where}: batched=true, called on a list of one request it "
                              f"returned {answer!r:.60}, not a list of one score; {CONTRACT}")
        answer = answer[0]
    if answer is None:
        return
    row = _to_row(answer, aspects, where)
    if not all(score.ok for score in row.values()):
        raise ConfigError(f"{where}: called on one request it returned {answer!r:.60}, which "
                          f"is no score; {CONTRACT}")


def _callable(value: Any) -> Any:
    if callable(value):
        return value
    raise ParamValueError("expected a callable")


#: `aspects=` of the evaluators the user brings: the names of the scores their code returns
ASPECTS = Param(words(TEXT), "score", "the names of the scores, space-separated")
#: `version=`: bump it when code the fingerprint cannot see changes; a number stays a number,
#: as a spec read it before, so the cache keys of existing specs hold
VERSION = Param(either(real(), text(empty=True)), "", "your scorer's version, for the cache key",
                short="version")


@evaluator("python")
class CallableEvaluator(Evaluator):
    """Any Python function as an evaluator.

    With `batched=True` the function receives a list of ScoreRequest and returns a list; otherwise
    it is called per request. Each result is a number, a mapping aspect -> number, or None for a
    missing score. From the command line: `python:target=my_pkg.metrics:score`. The cache key
    holds a fingerprint of the function's code (`source`), so an edited scorer is re-run.
    """

    description = f"a Python callable (target=module:function): {CONTRACT}"
    label_param = "target"
    PARAMS = declare_params(
        target=Param(either(TEXT, ParamKind("a callable", _callable)), REQUIRED,
                     "package.module:function (or, from Python, the function itself)",
                     short="target"),
        aspects=ASPECTS,
        batched=Param(BOOLEAN, False, "call the function once per batch, with a list"),
        label=Param(optional(TEXT), None, "the name of a function given from Python",
                    signed="never"),
        version=VERSION)

    def __init__(self, target: str | ScoreFunction | None = None, **given: Any):
        values = self.take_params(given if target is None else {"target": target, **given})
        target = values["target"]
        fn = _resolve(target) if isinstance(target, str) else target
        target_name = target if isinstance(target, str) else (
            values["label"] or f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}")
        self.params.update(target=target_name, source=source_fingerprint(fn))
        self.settings["target"] = target_name
        self.fn = fn
        self._aspects = tuple(values["aspects"].split())
        self.batched = values["batched"]
        where = f"python:target={target_name}"
        check_signature(fn, where)
        seen = (target_name, str(self.params["source"]), bool(self.batched), self._aspects)
        if isinstance(target, str) and seen not in _PROBED:  # a scorer named on the command line
            probe(fn, where, self._aspects, self.batched)
            _PROBED.add(seen)

    @property
    def aspects(self) -> tuple[str, ...]:
        return self._aspects

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        where = str(self.params["target"])
        if self.batched:
            values = list(self.fn(list(requests)))
            if len(values) != len(requests):
                raise ValueError(f"{where} returned {len(values)} scores for {len(requests)} texts")
            return [_to_row(v, self._aspects, where) for v in values]
        rows = []
        for request in requests:
            try:
                value = self.fn(request)
            except Exception as exc:  # the user's code: record, do not crash the run
                rows.append({a: Score.missing(f"{where} raised {type(exc).__name__}: {exc}")
                             for a in self._aspects})
                continue
            rows.append(_to_row(value, self._aspects, where))
        return rows


@evaluator("command")
class CommandEvaluator(Evaluator):
    """An external program: JSONL requests on stdin, JSONL scores on stdout.

    Each input line is `{"id", "text", "source", "references", "task"}`; each output line is
    `{"id": ..., "score": x}` or `{"id": ..., "scores": {aspect: x}}` or `{"id": ..., "error": ...}`.
    Lines may come in any order; an id with no answer is recorded missing, with the reason.
    """

    description = "an external command, JSONL in and JSONL out (cmd='...')"
    label_param = "cmd"
    batch_size = 128
    PARAMS = declare_params(
        cmd=Param(TEXT, REQUIRED, "the command line, e.g. 'python my_scorer.py'", short="cmd"),
        aspects=ASPECTS,
        timeout=Param(duration(), 600.0, "seconds one batch may take", signed="never"),
        version=VERSION)

    def __init__(self, /, **given: Any):
        values = self.take_params(given)
        self.argv = shlex.split(values["cmd"])
        program = self.argv[0] if self.argv else ""
        if not program or shutil.which(program) is None:  # a path or a name on PATH
            raise ConfigError(f"evaluator 'command': cmd={values['cmd']!r}: no program "
                              f"'{program}' (not on PATH, or not an executable file); every "
                              "batch would fail")
        self._aspects = tuple(values["aspects"].split())
        self.timeout = values["timeout"]

    @property
    def aspects(self) -> tuple[str, ...]:
        return self._aspects

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        lines = [json.dumps({"id": i, "text": r.text, "source": r.source,
                             "references": list(r.references), "task": r.task},
                            ensure_ascii=False) for i, r in enumerate(requests)]
        cmd = self.params["cmd"]
        try:
            done = subprocess.run(self.argv, input="\n".join(lines) + "\n", capture_output=True,
                                  text=True, timeout=self.timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return [{a: Score.missing(f"command '{cmd}' failed: {exc}") for a in self._aspects}
                    for _ in requests]
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or [""]
            return [{a: Score.missing(f"command '{cmd}' exited {done.returncode}: {tail[0]}")
                     for a in self._aspects} for _ in requests]
        answers: dict[int, ScoreRow] = {}
        unusable: list[str] = []  # output lines tied to no request: said in the missing rows
        for line_no, line in enumerate(done.stdout.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"command '{cmd}' output line {line_no}"
            answer = _answer(line, len(requests))
            if isinstance(answer, str):
                unusable.append(f"output line {line_no} {answer}")
                continue
            record, index = answer
            if "error" in record:
                answers[index] = {a: Score.missing(f"{where}: {record['error']}")
                                  for a in self._aspects}
            else:
                answers[index] = _to_row(record.get("scores", record.get("score")),
                                         self._aspects, where)
        why = "".join(f"; {problem}" for problem in unusable[:3])
        if len(unusable) > 3:
            why += f"; and {len(unusable) - 3} more output lines"
        return [answers.get(i) or {
                    a: Score.missing(f"command '{cmd}' gave no score for line {i + 1}{why}")
                    for a in self._aspects} for i in range(len(requests))]


def _answer(line: str, requests: int) -> tuple[dict[str, Any], int] | str:
    """An output line as (record, the index of the request it answers), or why it answers
    none."""
    try:
        record = parse_json_line(line, "output", 0)
    except DataError as exc:
        where = f", column {exc.column}" if exc.column is not None else ""
        return f"is not JSON: {exc.message}{where}"
    if not isinstance(record, dict) or "id" not in record:
        return 'is not a JSON object with an "id"'
    ident = record["id"]
    if isinstance(ident, float) and ident.is_integer():  # 2.0 from a language without ints
        ident = int(ident)
    try:
        if isinstance(ident, bool) or not isinstance(ident, int | str):
            raise ValueError(ident)
        index = int(ident)
    except ValueError:
        return f"has id {ident!r}, not a request's number"
    if not 0 <= index < requests:
        return f"has id {index}, but the batch's ids are 0 to {requests - 1}"
    return record, index
