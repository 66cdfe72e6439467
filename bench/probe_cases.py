"""The cases of `probe_reliability.py`: what each one gives the command line and what it should do.

A case is data: a category, a description, the argv after `evalstress`, the files it needs and
the outcome it expects. `error` means the command should refuse the input with exit 2 and one
error line naming the fault (`says`: any one of these substrings, compared case-insensitively
with white space removed, since the terminal wraps long lines); `accept` means it should run
(exit 0, or one of `exits`); `either` means a clear refusal and a correct run are both right,
and a run must pass its `verify` check.

Placeholders in an argv item or an environment value: `{url}` is the fake judge server's base
URL, `{root}` the case's folder; in `says`, `{bgpid}` is the pid of the case's background run.
Every case runs in a folder of its own (the current folder unless `cwd` says otherwise), with
$EVALSTRESS_CACHE_DIR at `cache/` inside it.

This module holds the model, the file builders and the cases of the input categories (data,
spec, config, suite); `probe_cases_runs.py` holds those of the output side (variants,
template, rundir, cache, out, disk, misc).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: a file's content: text, bytes, JSONL rows, or a function that writes the file itself
Content = str | bytes | list[dict[str, Any]] | Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """One probe of the command line."""

    category: str
    description: str
    argv: tuple[str, ...]
    expect: str  # "error", "accept" or "either"
    #: an error line should contain one of these (the file, field, parameter or option)
    says: tuple[str, ...] = ()
    #: files written into the case folder before the command runs; each is protected (a
    #: change or removal counts as data loss) unless `unprotected` names it
    files: Mapping[str, Content] = field(default_factory=dict)
    unprotected: tuple[str, ...] = ()
    #: more preparation (copies of a finished run, damage to it, a cache)
    setup: Callable[[CaseEnv], None] | None = None
    #: the current folder of the command, relative to the case folder
    cwd: str = "."
    #: exit codes of a successful run (3: the evaluator's answers are missing by design)
    exits: tuple[int, ...] = (0,)
    #: the exit code of a right refusal (143 or 130 for an interrupted run)
    error_exit: int = 2
    timeout: float = 240.0
    #: run under RLIMIT_AS of about 3 GB, so a regression cannot take the machine down
    memory_guard: bool = False
    #: RLIMIT_FSIZE in bytes: a write past it fails as a full disk would (EFBIG)
    file_size_limit: int | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    #: an API key that must appear in no file of the case folder and not on the terminal
    secret: str | None = None
    #: files (relative to the case folder) a successful run must leave
    products: tuple[str, ...] = ()
    #: (case folder) -> what is wrong with a successful run's outputs, or None
    verify: Callable[[Path], str | None] | None = None
    #: a run started first and still going while the command runs (its own cache folder);
    #: the command starts once `wait_for` exists
    background: tuple[str, ...] | None = None
    wait_for: str | None = None
    #: a signal sent to the command once `wait_for` exists (SIGINT to its process group,
    #: as Ctrl-C does; others to the process)
    signal: int | None = None
    #: the work done before a refusal is expected (an interrupted run)
    late_ok: bool = False
    #: chmod cases: permissions do not bind for root, who is skipped
    needs_non_root: bool = False
    #: environment variables taken out of the command's environment (no key at all)
    unset: tuple[str, ...] = ()
    #: strings from the data (control sequences) that must not reach stdout or stderr raw
    raw: tuple[str, ...] = ()
    #: an error line holding one of these describes the fault wrongly (misleading)
    not_says: tuple[str, ...] = ()
    #: a traceback on the terminal is what the case asks for (`--debug`)
    traceback_ok: bool = False
    #: (judge model, most requests): more requests to the fake server for that model count
    #: as work done before a refusal (the check could have come first)
    max_calls: tuple[str, int] | None = None
    #: a long-running server case: the command serves, and this function (base URL, server
    #: pid) talks to it and returns what is wrong, or None; the server is stopped afterwards
    drive: Callable[[str, int], str | None] | None = None
    #: what the case needs that a machine may lack ("serve": llama-cpp-python and the shipped
    #: GGUF); without it the case is skipped with the reason
    needs: str | None = None

    @property
    def name(self) -> str:
        return f"{self.category}: {self.description}"


class CaseEnv:
    """The case folder while a case is prepared: files, copies of finished runs, protection."""

    def __init__(self, root: Path, url: str, base_run: Callable[[str], Path]):
        self.root = root
        self.url = url
        self._base_run = base_run
        #: files whose loss or change counts as data loss
        self.protected: list[Path] = []

    def path(self, relative: str) -> Path:
        return self.root / relative

    def write(self, relative: str, content: Content, *, protect: bool = True) -> Path:
        """Write one file (parents made); protected unless told otherwise."""
        path = self.path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        elif isinstance(content, list):
            path.write_text("".join(json.dumps(row) + "\n" for row in content), encoding="utf-8")
        else:
            content(path)
        if protect:
            self.protected.append(path)
        return path

    def keep(self, relative: str) -> None:
        """Protect a file that is already there."""
        self.protected.append(self.path(relative))

    def run_dir(self, relative: str = "run", kind: str = "bleu", *, protect: bool = True) -> Path:
        """A copy of a finished run (`kind`: see probe_reliability.BASE_RUNS); its results,
        scores and variants are protected unless told otherwise."""
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self._base_run(kind), target)
        if protect:
            self.protected += [target / n for n in ("results.json", "scores.parquet",
                                                    "variants.parquet")]
        return target

    def base(self, kind: str) -> Path:
        """The finished run or card (`card`) of this kind the probe made once (not a copy:
        read it, do not change it)."""
        return self._base_run(kind)

    def card_dir(self, relative: str = "card", *, protect: bool = True) -> Path:
        """A copy of a finished card (small budget, BLEU, the built-in corpus); its card.json,
        card.md and the methods' results are protected unless told otherwise."""
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self._base_run("card"), target, symlinks=True)
        if protect:
            self.protected += [target / "card.json", target / "card.md",
                               *sorted(target.glob("runs/*/results.json"))]
        return target

    def link(self, relative: str, target: str) -> Path:
        """A symbolic link at `relative` pointing to `target` (relative to the case folder),
        in place of a file there."""
        path = self.path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.symlink_to(self.path(target))
        return path

    def cache(self, kind: str = "bleu") -> None:
        """The score cache of a finished run, copied into the case's cache folder."""
        source = self._base_run(kind).parent / f"{kind}.cache" / "scores.sqlite"
        shutil.copy(source, self.path("cache/scores.sqlite"))


# ---- file builders -----------------------------------------------------------------------------

def end_group(proc: subprocess.Popen[str]) -> None:
    """End a process a probe case started, and its group: SIGTERM, then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def parquet(rows: Sequence[Mapping[str, Any]]) -> Callable[[Path], None]:
    """A Parquet file of these rows."""

    def write(path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(list(rows)), path)

    return write


def csv_text(header: Sequence[str], *rows: Sequence[str], newline: str = "\n") -> str:
    """A CSV file; cells are quoted (doubled quotes inside)."""

    def cell(value: str) -> str:
        return '"' + value.replace('"', '""') + '"'

    lines = [",".join(header)] + [",".join(cell(v) for v in row) for row in rows]
    return newline.join(lines) + newline


def nested_json(depth: int) -> str:
    """One JSONL line holding an object nested `depth` levels deep."""
    return '{"id": "deep", "hypothesis": "x", "meta": ' + '{"a": ' * depth + "1" + "}" * depth \
        + "}\n"


TEXT_A = ("The city council approved the new budget on Monday after a long debate about "
          "school funding. Teachers welcomed the decision, and the mayor promised more money "
          "for libraries next year.")
TEXT_B = ("A small bakery in the old town has won a national prize for its rye bread. The "
          "owners, who opened the shop ten years ago, said they would use the money to train "
          "two apprentices.")
GOOD = [{"id": "a", "hypothesis": TEXT_A, "references": ["The council passed the budget."],
         "source": "Council meeting notes."},
        {"id": "b", "hypothesis": TEXT_B, "references": ["A bakery won a bread prize."],
         "source": "Local news."}]


def rows(*changes: Mapping[str, Any], drop: str | None = None) -> list[dict[str, Any]]:
    """GOOD with the first row changed (and `drop` removed from it); more changes go to the
    following rows."""
    out = [dict(r) for r in GOOD]
    for row, change in zip(out, changes, strict=False):
        row.update(change)
    if drop is not None:
        out[0].pop(drop, None)
    return out


# ---- argv builders -----------------------------------------------------------------------------

def run(*extra: str, data: str | None = "data.jsonl", evaluators: Sequence[str] = ("bleu",),
        perturbations: Sequence[str] = ("truncation",), seeds: str | None = "1",
        out: str | None = "out", quiet: bool = True) -> tuple[str, ...]:
    """`evalstress run` on a small job: one perturbation, one seed, BLEU, one process;
    `data=None` runs two examples of the built-in corpus."""
    argv = ["run", data] if data else ["run", "--limit", "2"]
    for name in perturbations:
        argv += ["-p", name]
    if seeds:
        argv += ["--seeds", seeds]
    for spec in evaluators:
        argv += ["-e", spec]
    argv += ["--workers", "1"]
    if quiet:
        argv.append("--quiet")
    if out:
        argv += ["--out", out]
    return (*argv, *extra)


def judge(model: str = "fake", **params: Any) -> str:
    """A judge spec against the probe's fake server: one attempt, quick retries, the
    score-only form (a parameter given as None is left out)."""
    spec = {"model": model, "base_url": "{url}", "form": "score-only", "max_attempts": 1,
            "backoff": 0.01, **params}
    return "judge:" + ",".join(f"{k}={v}" for k, v in spec.items() if v is not None)


def case(category: str, description: str, argv: Sequence[str], expect: str,
         *says: str, **more: Any) -> Case:
    """A Case; a command that reads data.jsonl gets GOOD there unless its files say otherwise."""
    files = dict(more.pop("files", {}))
    if "data.jsonl" in argv and "data.jsonl" not in files:
        files["data.jsonl"] = GOOD
    return Case(category, description, tuple(argv), expect, tuple(says), files=files, **more)


def error(category: str, description: str, argv: Sequence[str], *says: str,
          **more: Any) -> Case:
    return case(category, description, argv, "error", *says, **more)


def accept(category: str, description: str, argv: Sequence[str], **more: Any) -> Case:
    return case(category, description, argv, "accept", **more)


def either(category: str, description: str, argv: Sequence[str], *says: str,
           **more: Any) -> Case:
    return case(category, description, argv, "either", *says, **more)


# ---- output checks ---------------------------------------------------------------------------

def scores_of(root: Path, out: str = "out") -> Any:
    import pandas as pd

    return pd.read_parquet(root / out / "scores.parquet")


def has_perturbation(name: str, out: str = "out") -> Callable[[Path], str | None]:
    """The run scored variants of `name`."""

    def check(root: Path) -> str | None:
        found = set(scores_of(root, out)["perturbation"])
        return None if name in found else f"no scores of '{name}' (found {sorted(found)})"

    return check


def evaluators_are(*labels: str, out: str = "out") -> Callable[[Path], str | None]:
    """The run's results.json lists exactly these evaluators."""

    def check(root: Path) -> str | None:
        results = json.loads((root / out / "results.json").read_text(encoding="utf-8"))
        found = sorted(results["evaluators"])  # a mapping keyed by label
        return None if found == sorted(labels) else f"evaluators {found}, expected {list(labels)}"

    return check


def skipped(example_id: str, out: str = "out") -> Callable[[Path], str | None]:
    """The run recorded a skip naming `example_id` (a text over --max-chars)."""

    def check(root: Path) -> str | None:
        skips = (root / out / "skips.jsonl").read_text(encoding="utf-8")
        return None if example_id in skips else f"no skip of '{example_id}' in skips.jsonl"

    return check


def examples_are(count: int, out: str = "out") -> Callable[[Path], str | None]:
    """The run scored this many examples (originals in scores.parquet)."""

    def check(root: Path) -> str | None:
        scores = scores_of(root, out)
        found = scores.loc[scores["perturbation"] == "original", "example_id"].nunique()
        return None if found == count else f"{found} examples scored, expected {count}"

    return check


# ---- data: the examples file -------------------------------------------------------------------

BIG_TEXT = "word " * 1_000_000  # 5 MB of text, far over the default --max-chars
BOM = "\ufeff"


def _jsonl(*items: Mapping[str, Any], newline: str = "\n") -> str:
    return "".join(json.dumps(row) + newline for row in items)


def data_cases() -> list[Case]:
    d = "data"
    header, csv_rows = ["id", "hypothesis", "references"], [["a", TEXT_A, "The council."],
                                                             ["b", TEXT_B, "A bakery."]]
    csv_good = csv_text(header, *csv_rows)
    return [
        error(d, "a folder given as data", run(data="folder"), "folder",
              setup=lambda env: env.path("folder").mkdir()),
        error(d, "a data file that does not exist", run(data="nope.jsonl"), "nope.jsonl"),
        error(d, "an unsupported extension (.txt)", run(data="data.txt"), ".txt",
              files={"data.txt": _jsonl(*GOOD)}),
        error(d, "an empty JSONL file", run(), "data.jsonl", files={"data.jsonl": ""}),
        error(d, "a JSONL file of blank lines only", run(), "data.jsonl",
              files={"data.jsonl": "\n  \n\t\n\n"}),
        accept(d, "JSONL starting with a byte-order mark", run(),
               files={"data.jsonl": BOM + _jsonl(*GOOD)}, verify=examples_are(2)),
        accept(d, "JSONL with CRLF line endings", run(),
               files={"data.jsonl": _jsonl(*GOOD, newline="\r\n")}, verify=examples_are(2)),
        accept(d, "CSV with a byte-order mark", run(data="data.csv"),
               files={"data.csv": BOM + csv_good}, verify=examples_are(2)),
        accept(d, "CSV with CRLF line endings", run(data="data.csv"),
               files={"data.csv": csv_good.replace("\n", "\r\n")}, verify=examples_are(2)),
        accept(d, "Parquet data", run(data="data.parquet"),
               files={"data.parquet": parquet(GOOD)}, verify=examples_are(2)),
        error(d, "broken JSON on line 2", run(), "line 2",
              files={"data.jsonl": _jsonl(GOOD[0]) + '{"id": "b", "hypothesis": \n'}),
        error(d, "a JSONL line that is a list", run(), "line 1",
              files={"data.jsonl": "[1, 2, 3]\n"}),
        error(d, "a JSONL line nested 100,000 deep", run(), "line 1",
              files={"data.jsonl": nested_json(100_000)}, memory_guard=True),
        error(d, "duplicate ids", run(), "duplicate", files={"data.jsonl": rows({}, {"id": "a"})}),
        error(d, "a row without hypothesis", run(), "hypothesis",
              files={"data.jsonl": rows(drop="hypothesis")}),
        error(d, "hypothesis null", run(), "hypothesis",
              files={"data.jsonl": rows({"hypothesis": None})}),
        error(d, "hypothesis a number", run(), "hypothesis",
              files={"data.jsonl": rows({"hypothesis": 42})}),
        error(d, "hypothesis an empty text", run(), "hypothesis",
              files={"data.jsonl": rows({"hypothesis": ""})}),
        error(d, "hypothesis only white space", run(), "hypothesis",
              files={"data.jsonl": rows({"hypothesis": "   \n\t "})}),
        error(d, "hypothesis a list", run(), "hypothesis",
              files={"data.jsonl": rows({"hypothesis": [TEXT_A]})}),
        error(d, "source a number", run(), "source",
              files={"data.jsonl": rows({"source": 5})}),
        error(d, "references a number", run(), "references",
              files={"data.jsonl": rows({"references": 3.5})}),
        error(d, "references a list holding null", run(), "references",
              files={"data.jsonl": rows({"references": ["ok", None]})}),
        error(d, "id an object", run(), "id", files={"data.jsonl": rows({"id": {"k": 1}})}),
        error(d, "id a list", run(), "id", files={"data.jsonl": rows({"id": [1, 2]})}),
        error(d, "id a boolean", run(), "id", files={"data.jsonl": rows({"id": True})}),
        accept(d, "id a whole number", run(), files={"data.jsonl": rows({"id": 7})},
               verify=examples_are(2)),
        accept(d, "a 10,000-character id", run(), files={"data.jsonl": rows({"id": "i" * 10_000})},
               verify=examples_are(2)),
        error(d, "a lone surrogate in hypothesis", run(), "hypothesis",
              files={"data.jsonl": '{"id": "a", "hypothesis": "bad \\ud800 text"}\n'}),
        error(d, "an unknown task in a row", run(), "task",
              files={"data.jsonl": rows({"task": "poetry-slam"})}),
        error(d, "--task that does not exist", run("--task", "poetry-slam"), "poetry-slam"),
        error(d, "JSONL that is not UTF-8", run(), "UTF-8",
              files={"data.jsonl": _jsonl(GOOD[0]).encode() + b'{"id": "b", "hypothesis": "caf\xe9"}\n'}),
        error(d, "a .json file holding one JSON array", run(data="data.json"), "data.json",
              files={"data.json": json.dumps(GOOD, indent=2)}),
        error(d, "CSV with a duplicate header", run(data="data.csv"), "hypothesis",
              files={"data.csv": csv_text([*header, "hypothesis"],
                                          *[[*r, "another text"] for r in csv_rows])}),
        accept(d, "CSV cell over 131,072 characters (skipped by --max-chars)", run(data="data.csv"),
               files={"data.csv": csv_text(header, *csv_rows,
                                           ["long", "x " * 70_000, "A reference."])},
               verify=skipped("long")),
        error(d, "CSV with an unclosed quote", run(data="data.csv"), "line 3",
              files={"data.csv": f'id,hypothesis\na,"{TEXT_A}"\nb,"{TEXT_B}\n'}),
        error(d, "CSV row with more cells than the header", run(data="data.csv"), "line 2",
              files={"data.csv": f'id,hypothesis\na,"{TEXT_A}",extra\n'}),
        error(d, "CSV without a hypothesis column", run(data="data.csv"), "hypothesis",
              files={"data.csv": csv_text(["id", "text"], ["a", TEXT_A])}),
        error(d, "Parquet file of garbage", run(data="data.parquet"), "data.parquet",
              files={"data.parquet": b"PAR1 this is not parquet at all PAR1"}),
        error(d, "Parquet with hypothesis as integers", run(data="data.parquet"), "hypothesis",
              files={"data.parquet": parquet([{"id": "a", "hypothesis": 1},
                                              {"id": "b", "hypothesis": 2}])}),
        accept(d, "a 5 MB hypothesis with the default --max-chars (skipped)", run(),
               files={"data.jsonl": [*GOOD, {"id": "huge", "hypothesis": BIG_TEXT}]},
               verify=skipped("huge")),
        error(d, "-m hypothesis= (empty field name)", run("-m", "hypothesis="), "hypothesis"),
        error(d, "-m with an unknown target field", run("-m", "hypo=hypothesis"), "hypo"),
        error(d, "-m hypothesis=a column the data lacks", run("-m", "hypothesis=summary"),
              "summary"),
        error(d, "-m without =", run("-m", "hypothesis"), "hypothesis"),
        error(d, "--task without a data file", run("--task", "summarization", data=None),
              "--task"),
        error(d, "--map without a data file", run("-m", "hypothesis=text", data=None),
              "--map", "-m"),
        accept(d, "--limit 1 stops before a broken line 2", run("--limit", "1"),
               files={"data.jsonl": _jsonl(GOOD[0]) + "{broken\n"}, verify=examples_are(1)),
        accept(d, "a row with a meta object and extra fields", run(),
               files={"data.jsonl": rows({"meta": {"k": [1, 2]}, "extra": None})},
               verify=examples_are(2)),
    ]


# ---- spec: evaluator specs, perturbation names, run options -----------------------------------

def spec_cases() -> list[Case]:
    s = "spec"

    def bad_spec(description: str, spec: str, *says: str) -> Case:
        return error(s, description, run(evaluators=[spec]), *says)

    return [
        bad_spec("an unknown evaluator", "bleuu", "bleuu"),
        bad_spec("bleu:tokenize=nope", "bleu:tokenize=nope", "tokenize"),
        bad_spec("bleu:max_ngram_order=-3", "bleu:max_ngram_order=-3", "max_ngram_order"),
        bad_spec("bleu:max_ngram_order=0", "bleu:max_ngram_order=0", "max_ngram_order"),
        bad_spec("bleu:smooth_value=-1", "bleu:smooth_value=-1", "smooth_value"),
        bad_spec("ter:case_sensitive=maybe", "ter:case_sensitive=maybe", "case_sensitive"),
        bad_spec("an unknown parameter", "bleu:ngram=4", "ngram"),
        bad_spec("a parameter without =", "bleu:max_ngram_order", "max_ngram_order"),
        bad_spec("bleu:name= (empty)", "bleu:name=", "name"),
        bad_spec("chrf:char_order=abc", "chrf:char_order=abc", "char_order"),
        bad_spec("chrf:beta=-1", "chrf:beta=-1", "beta"),
        bad_spec("rouge:types=rougeX", "rouge:types=rougeX", "rougeX"),
        bad_spec("rep:orders=0", "rep:orders=0", "orders"),
        bad_spec("python: a module that does not exist", "python:target=nosuchmod.x:fn",
                 "nosuchmod"),
        bad_spec("python: a function the module lacks", "python:target=os.path:nosuchfn",
                 "nosuchfn"),
        bad_spec("command: a program that does not exist",
                 "command:cmd=nosuch-program-evalstress", "nosuch-program-evalstress"),
        bad_spec("judge:...,aspect= (empty)", judge(aspect=""), "aspect"),
        bad_spec("judge n=abc", judge(n="abc"), "'n'", "n="),
        bad_spec("judge:timeout=-1", judge(timeout=-1), "timeout"),
        bad_spec("judge:timeout=0", judge(timeout=0), "timeout"),
        bad_spec("judge temperature=hot", judge(temperature="hot"), "temperature"),
        bad_spec("judge scale=5-1", judge(scale="5-1"), "scale"),
        bad_spec("judge form=nope", judge(form="nope"), "form"),
        bad_spec("judge max_concurrency=0", judge(max_concurrency=0), "max_concurrency"),
        bad_spec("judge criteria= a missing file", judge(criteria="missing.yaml"),
                 "missing.yaml"),
        bad_spec("judge aspect unknown to the built-in forms", judge(aspect="sparkle"),
                 "sparkle"),
        either(s, "-e bleu:name=[/]x (markup characters in a name)",
               run(evaluators=["bleu:name=[/]x"], quiet=False), "name",
               verify=evaluators_are("[/]x")),
        either(s, "the same evaluator twice", run(evaluators=["bleu", "bleu"]), "bleu",
               verify=evaluators_are("bleu")),
        accept(s, "a judge against the fake server", run(evaluators=[judge()]),
               verify=evaluators_are("judge(fake)")),
        accept(s, "a judge whose every call gets a 500 (exit 3)",
               run(evaluators=[judge("status-500")]), exits=(3,)),
        accept(s, "a judge whose answers hold no rating (exit 3)",
               run(evaluators=[judge("no-rating", max_reasks=0)]), exits=(3,)),
        # the endpoint is asked once before any work: refused in one line, nothing written
        error(s, "a judge at a port nobody listens on",
              run(evaluators=["judge:model=m,base_url=http://127.0.0.1:9/v1,max_attempts=1,"
                              "form=score-only,timeout=2"]), "connection refused",
              "127.0.0.1:9"),
        error(s, "an unknown perturbation", run(perturbations=["truncatoin"]), "truncatoin"),
        either(s, "the same perturbation twice", run(perturbations=["truncation", "truncation"]),
               "truncation", verify=has_perturbation("truncation")),
        error(s, "a model perturbation without its model", run(perturbations=["bert-diverge"]),
              "model", "bert-diverge"),
        error(s, "an LLM perturbation without --generator", run(perturbations=["fact-negation"]),
              "--generator", "generator"),
        error(s, "--seeds 0", run(seeds="0"), "--seeds"),
        error(s, "--seeds abc", run(seeds="abc"), "--seeds"),
        error(s, "--limit 0", run("--limit", "0"), "--limit"),
        error(s, "--shard 3/2", run("--shard", "3/2"), "--shard"),
        error(s, "--shard abc", run("--shard", "abc"), "--shard"),
        error(s, "--shard 0/0", run("--shard", "0/0"), "--shard"),
        error(s, "--workers -1", run("--workers", "-1"), "--workers"),
        error(s, "--chunk-size 0", run("--chunk-size", "0"), "--chunk-size", "chunk_size"),
        error(s, "--max-chars -5", run("--max-chars", "-5"), "--max-chars", "max_chars"),
        error(s, "--max-missing 2", run("--max-missing", "2"), "--max-missing", "max_missing"),
        error(s, "--rel-tol -1", run("--rel-tol", "-1"), "--rel-tol", "rel_tol"),
        error(s, "--max-units below the run's size", run("--max-units", "3"), "--max-units",
              "max_units"),
        error(s, "--protocol nope", run("--protocol", "nope"), "--protocol", "protocol"),
        error(s, "--backend nope", run("--backend", "nope"), "--backend", "backend"),
        error(s, "--shots -1", run("--shots", "-1"), "--shots", "shots"),
        error(s, "--max-reasks abc", run("--max-reasks", "abc"), "--max-reasks"),
        error(s, "--generator that is no spec", run("--generator", "temperature=hot"),
              "--generator", "generator", "model"),
        error(s, "--variant-map with an unknown field", run("--variant-map", "nope=x"), "nope"),
        error(s, "--suite that does not exist", run("--suite", "nosuchsuite"), "nosuchsuite"),
        error(s, "an unknown option", run("--nope"), "--nope"),
        accept(s, "--dry-run scores nothing", run("--dry-run"),
               verify=lambda root: "--dry-run wrote a run directory" if (root / "out").exists()
               else None),
    ]


# ---- config: --config files ----------------------------------------------------------------------

CONFIG_BASE = {"data": "data.jsonl", "perturbations": ["truncation"], "seeds": 1,
               "evaluators": ["bleu"], "workers": 1, "quiet": True, "out": "out"}
CONFIG_RUN = ("run", "-c", "config.yaml")


def config(**changes: Any) -> str:
    """A config file: CONFIG_BASE with these keys changed (a value of ... removes the key)."""
    data = {**CONFIG_BASE, **changes}
    return dump_yaml({k: v for k, v in data.items() if v is not ...})


def config_cases() -> list[Case]:
    c = "config"

    def bad(description: str, text: str | bytes, *says: str, **more: Any) -> Case:
        files = {"config.yaml": text, "data.jsonl": GOOD, **more.pop("files", {})}
        return error(c, description, CONFIG_RUN, *says, files=files, **more)

    def good(description: str, text: str, **more: Any) -> Case:
        return accept(c, description, CONFIG_RUN, files={"config.yaml": text, "data.jsonl": GOOD},
                      **more)

    return [
        good("a valid config", config(), verify=examples_are(2)),
        good("evaluators: bleu (one alone, bare)", config(evaluators="bleu"),
             verify=evaluators_are("bleu")),
        bad("cache_dir: 5", config(cache_dir=5), "cache_dir"),
        bad("data: 7", config(data=7), "data"),
        bad("map: {hypothesis: [1, 2]}", config(map={"hypothesis": [1, 2]}), "map"),
        bad("seeds: 1.5", config(seeds=1.5), "seeds"),
        bad("seeds: [0, 0]", config(seeds=[0, 0]), "seed"),
        bad("seeds: -2", config(seeds=-2), "seeds"),
        bad("evaluators: 5", config(evaluators=5), "evaluators"),
        bad("evaluators: [bleu, 7]", config(evaluators=["bleu", 7]), "evaluators"),
        bad("an unknown key (evaluator:)", config(evaluator=["bleu"]), "evaluator"),
        bad("limit: two", config(limit="two"), "limit"),
        bad("limit: -1", config(limit=-1), "limit"),
        bad("workers: many", config(workers="many"), "workers"),
        bad("max_missing: 5", config(max_missing=5), "max_missing"),
        bad("max_units: 0", config(max_units=0), "max_units"),
        bad("rel_tol: -0.5", config(rel_tol=-0.5), "rel_tol"),
        bad("options: {nope: 1}", config(options={"nope": 1}), "nope"),
        bad("options: 5", config(options=5), "options"),
        bad("perturbations: 5", config(perturbations=5), "perturbations"),
        bad("quiet: yes please", config(quiet="yes please"), "quiet"),
        bad("out: [a, b]", config(out=["a", "b"]), "out"),
        bad("task: 3", config(task=3), "task"),
        bad("suite: a missing file", config(suite="missing-suite.yaml"), "missing-suite.yaml"),
        bad("variants: a missing file", config(variants="missing-variants.jsonl"),
            "missing-variants.jsonl"),
        bad("a config that is a list", "- data.jsonl\n- bleu\n", "config.yaml"),
        bad("broken YAML", "data: [data.jsonl\nseeds: 1\n", "config.yaml"),
        bad("a config that is not UTF-8", config().encode() + b"task: caf\xe9\n", "config.yaml"),
        error(c, "a config file that does not exist", ("run", "-c", "missing-config.yaml"),
              "missing-config.yaml"),
        either(c, "an empty config file", (*CONFIG_RUN, *run()[1:]), "config.yaml",
               files={"config.yaml": ""}, verify=examples_are(2)),
        accept(c, "a flag wins over the config", (*CONFIG_RUN, "--seeds", "1", "-e", "chrf"),
               files={"config.yaml": config(seeds=3), "data.jsonl": GOOD},
               verify=evaluators_are("chrf")),
    ]


# ---- suite: suite YAML files ---------------------------------------------------------------------

SUITE_BASE = {"name": "probe", "seeds": [0], "perturbations": {"truncation": {}},
              "analyses": ["blindspot"]}
SUITE_RUN = run("--suite", "suite.yaml", perturbations=(), seeds=None)


def suite(**changes: Any) -> str:
    data = {**SUITE_BASE, **changes}
    return dump_yaml({k: v for k, v in data.items() if v is not ...})


def suite_cases() -> list[Case]:
    s = "suite"

    def bad(description: str, text: str | bytes, *says: str, **more: Any) -> Case:
        return error(s, description, SUITE_RUN, *says, files={"suite.yaml": text}, **more)

    return [
        accept(s, "a valid suite", SUITE_RUN, files={"suite.yaml": suite()},
               verify=has_perturbation("truncation")),
        accept(s, "perturbations as a list of names", SUITE_RUN,
               files={"suite.yaml": suite(perturbations=["truncation"])},
               verify=has_perturbation("truncation")),
        bad("seeds: 1000000000", suite(seeds=1_000_000_000), "seeds", memory_guard=True),
        bad("seeds: []", suite(seeds=[]), "seeds"),
        bad("seeds: [-1]", suite(seeds=[-1]), "seed"),
        bad("seeds: 1.5", suite(seeds=1.5), "seeds"),
        bad("an unknown suite key", suite(perturbation={"truncation": {}}), "perturbation"),
        bad("an unknown perturbation", suite(perturbations={"truncatoin": {}}), "truncatoin"),
        bad("perturbations: {}", suite(perturbations={}), "perturbations"),
        bad("a perturbation's unknown parameter", suite(perturbations={"truncation": {"nope": 1}}),
            "nope"),
        bad("a severity outside the grid's range", suite(perturbations={"truncation":
                                                                         {"grid": [2.0]}}), "2.0"),
        bad("a severity listed twice", suite(perturbations={"truncation": {"grid": [0.1, 0.1]}}),
            "twice"),
        bad("grid: []", suite(perturbations={"truncation": {"grid": []}}), "severity", "grid"),
        bad("tasks: [nope]", suite(perturbations={"truncation": {"tasks": ["nope"]}}), "nope"),
        bad("an unknown analysis", suite(analyses=["blindspott"]), "blindspott"),
        bad("analyses: 5", suite(analyses=5), "analyses"),
        bad("options: {rel_tol: -1}", suite(options={"rel_tol": -1}), "rel_tol"),
        bad("options: {nope: 1}", suite(options={"nope": 1}), "nope"),
        bad("protocol: nope", suite(protocol="nope"), "protocol"),
        bad("generation: {nope: 1}", suite(generation={"nope": 1}), "nope"),
        bad("a suite that is a list", "- truncation\n", "suite.yaml"),
        bad("broken YAML", "perturbations: {truncation: \n", "suite.yaml"),
        bad("a suite that is not UTF-8", suite().encode() + b"description: caf\xe9\n",
            "suite.yaml"),
        bad("an empty suite file", "", "suite.yaml"),
    ]
