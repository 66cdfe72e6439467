"""Every command's terminal output on small inputs: no line wider than $COLUMNS (at 80 and at
60), and every command that writes ends with two lines, `open:` the file to read first and
`next:` a command to try after it, which the command line parses; --quiet drops both.

A line may run past the width only when it is one word that no line could hold (a long path,
an evaluator's signature): it stands alone on its line, so it can still be copied whole."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.data import builtin_corpus
from evalstress.engine import pipeline
from evalstress.llm.fake_server import FakeServer, Reply
from tests.test_reproductions_doc import check_values, parse_command

ROOT = Path(__file__).resolve().parents[2]

#: each command that writes: its arguments (run in a folder `tmp`, after the ones before it)
#: and the file its `open:` line names
WRITERS: dict[str, tuple[list[str], str]] = {
    "quickstart": (["quickstart", "--limit", "2", "--workers", "1", "--out", "qs"],
                   "qs/report.html"),
    "run": (["run", "d.jsonl", "-e", "bleu", "--workers", "1", "--out", "run"],
            "run/report.html"),
    "card": (["card", "bleu", "--budget", "small", "--out", "card"], "card/card.html"),
    "atlas": (["atlas", "--page-only", "--published", str(ROOT / "docs" / "atlas"), "--page",
               "atlas.md"], "atlas.md"),
    "calibrate": (["calibrate", "--only", "none", "--budget", "small", "--work", "cw", "--page",
                   "cal.md", "--results", "cal.json"], "cal.md"),
    "attack": (["attack", "d.jsonl", "-v", "bleu", "-g", "chrf", "--method", "rule:jumble",
                "--limit", "1", "--out", "att"], "att/report.html"),
    "correlate": (["correlate", "docs.jsonl", "-e", "bleu", "--out", "cor"], "cor/report.html"),
    "criteria-levels": (["criteria-levels", "d.jsonl", "-j", "JUDGE", "--levels", "term,empty",
                         "--seeds", "1", "--out", "lev"], "lev/description-types.html"),
    "report": (["report", "run", "--out", "r.html"], "r.html"),
    "export": (["export", "run", "--variants", "v.jsonl"], "v.jsonl"),
    "compare": (["compare", "qs", "run", "--out", "cmp.html"], "cmp.html"),
    "compare-cards": (["compare", "card", "card", "--out", "cards.html"], "cards.html"),
    "data": (["data", "ex"], "ex/README.md"),
}

#: commands that print without writing (after the writers, which made their inputs)
READERS: dict[str, list[str]] = {
    "compare-cards-printed": ["compare", "card", "card"],
    "check": ["check", "run"],
    "combine": ["combine", "run"],
    "list": ["list", "evaluators"],
    "list-perturbations": ["list", "perturbations"],
    "cache": ["cache", "stats"],
    "card-dry-run": ["card", "bleu", "--budget", "small", "--dry-run", "--out", "dry"],
}

QUIET = ("quickstart", "run", "card", "atlas", "calibrate", "attack", "correlate",
         "criteria-levels")


def _inputs(tmp: Path) -> None:
    chosen = [e for e in builtin_corpus() if e.task == "summarization"][:3]
    (tmp / "d.jsonl").write_text("".join(json.dumps(e.to_dict()) + "\n" for e in chosen),
                                 encoding="utf-8")
    docs = [{"id": f"d{i}", "references": [f"The cat sat on mat number {i}."],
             "systems": [{"system": s, "summary": f"A cat sat on a mat {i} {s}.",
                          "coherence": i + j, "consistency": j, "fluency": i, "relevance": j}
                         for j, s in enumerate(("x", "y", "z"))]} for i in range(4)]
    (tmp / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs),
                                    encoding="utf-8")


def _run_all(tmp: Path, columns: str, *, quiet: bool = False) -> dict[str, str]:
    """Each command's output (stdout and stderr) at `columns`, run in `tmp`."""
    _inputs(tmp)
    outputs = {}
    with FakeServer(responder=lambda request: Reply("Rating: 4")) as server, \
            pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp)
        patch.setenv("EVALSTRESS_CACHE_DIR", str(tmp / "cache"))
        patch.setattr(pipeline, "default_workers", lambda: 1)  # criteria-levels: no --workers
        judge = (f"judge:model=fake,base_url={server.base_url},aspect=fluency,"
                 "form=score-only,logprobs=False")
        commands = {name: args for name, (args, _) in WRITERS.items()}
        if not quiet:
            commands.update(READERS)
        for name, args in commands.items():
            args = [judge if a == "JUDGE" else a for a in args]
            if quiet:
                if name not in QUIET:
                    continue
                args = [*args, "--quiet"]
            result = CliRunner().invoke(app, args, env={"COLUMNS": columns})
            assert result.exit_code in (0, 1), (name, result.output)  # check: 1 when broken
            outputs[name] = result.output
    return outputs


@pytest.fixture(scope="module")
def at_80(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _run_all(tmp_path_factory.mktemp("at80"), "80")


@pytest.mark.long_run  # twenty commands at each width: about 30 s
@pytest.mark.parametrize("columns", [80, 60])
def test_no_line_is_wider_than_columns(columns: int, at_80: dict[str, str],
                                       tmp_path: Path) -> None:
    outputs = at_80 if columns == 80 else _run_all(tmp_path, str(columns))
    assert set(outputs) == set(WRITERS) | set(READERS)
    wide = [(name, line) for name, output in outputs.items() for line in output.splitlines()
            if len(line) > columns and len(line.split()) > 1]
    assert not wide, "\n".join(f"{name}: {line}" for name, line in wide)
    # the card's findings are the longest lines a command prints: several lines each now
    assert sum(line.startswith("1. ") for line in outputs["card"].splitlines()) == 1
    assert len(outputs["card"].splitlines()) > 20


def last_lines(output: str) -> dict[str, str]:
    """The `open:` and `next:` lines, each joined with the lines it wrapped onto."""
    found: dict[str, str] = {}
    lines = output.splitlines()
    for number, line in enumerate(lines):
        for label in ("open:", "next:"):
            if line.startswith(label + " "):
                parts = [line[len(label):].strip()]
                for more in lines[number + 1:]:
                    if not more.startswith("  "):
                        break
                    parts.append(more.strip())
                found[label] = " ".join(part for part in parts if part)
    return found


def parses(command: str) -> None:
    """`command` (`evalstress ...`) is one the command line accepts: its options and arguments
    parse (typer's own parser, without running it) and the evaluators it names exist (the
    documented commands' check)."""
    assert shlex.split(command)[0] == "evalstress", command
    check_values(command, parse_command(command)[1])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WRITERS))
def test_a_command_that_writes_says_what_to_open_and_what_next(name: str,
                                                               at_80: dict[str, str]) -> None:
    ending = last_lines(at_80[name])
    assert set(ending) == {"open:", "next:"}, at_80[name]
    assert ending["open:"] == WRITERS[name][1]
    lines = at_80[name].rstrip("\n").splitlines()
    assert lines[-1].startswith("  ") or lines[-1].startswith("next: ")  # the last ones
    command, _, why = ending["next:"].rpartition(" (")
    assert why.endswith(")") and len(why) > 5, ending
    parses(command)


@pytest.mark.long_run  # twenty commands again, quiet
def test_quiet_drops_thelast_lines(tmp_path: Path) -> None:
    outputs = _run_all(tmp_path, "80", quiet=True)
    assert set(outputs) == set(QUIET)
    said = {name: last_lines(output) for name, output in outputs.items()}
    assert not any(said.values()), said


def test_a_suggestion_that_does_not_parse_is_caught() -> None:
    parses("evalstress card bleu --budget standard --out cards/bleu-standard")
    for broken in ("evalstress card bleu --budgte standard", "evalstress crad bleu",
                   "evalstress compare --out x.html"):
        with pytest.raises(Exception, match=r"budgte|crad|Missing parameter"):
            parses(broken)


@pytest.fixture
def fake_serving(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`serve` up to its announcement, without loading the model or serving."""
    import uvicorn

    import evalstress.serve as serving

    monkeypatch.setattr(serving, "build_app", lambda settings, policy: (None, Path("m.gguf")))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    # uvicorn's Config applies its logging dictConfig, which closes every handler already
    # installed: pytest's log capture among them, so every later test would fail
    monkeypatch.setattr(uvicorn.Config, "configure_logging", lambda self: None)
    yield


def test_serve_says_which_judge_to_point_at_it(fake_serving: None) -> None:
    result = CliRunner().invoke(app, ["serve", "--port", "0", "--alias", "smol"],
                                env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    ending = last_lines(result.output)
    assert "open:" not in ending
    command, _, why = ending["next:"].rpartition(" (")
    assert why == "the served judge's card)"
    parses(command)
    spec = shlex.split(command)[2]
    assert spec.startswith("judge:model=smol,base_url=http://127.0.0.1:")
