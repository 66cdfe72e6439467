"""`evalstress list` in an 80-column terminal: every name, signature and word is printed whole
(a table squeezed to 80 columns printed `abbrevi` / `ation`), and no line is wider than 80."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.cli.listing import evaluator_info
from evalstress.evaluators.base import registry as evaluator_registry
from evalstress.perturb.base import registry as perturbation_registry


def listed(what: str, monkeypatch: pytest.MonkeyPatch) -> str:
    result = CliRunner().invoke(app, ["list", what], env={"COLUMNS": "80"})  # an 80-column pipe
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80, result.output
    return result.output


def test_perturbations_keep_names_and_words_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    output = listed("perturbations", monkeypatch)
    lines = output.splitlines()
    printed = set(output.split())
    for cls in perturbation_registry().values():
        info = cls.info()
        assert any(line.split()[:1] == [info["name"]] for line in lines), info["name"]
        words = [*info["description"].split(), *info["damages"], *info["preserves"]]
        cut = [w for w in words if w not in printed and f"{w}," not in printed]
        assert not cut, (info["name"], cut)


def test_evaluators_keep_names_signatures_and_words_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    output = listed("evaluators", monkeypatch)
    lines = [line.strip() for line in output.splitlines()]
    printed = set(output.split())
    for name, cls in evaluator_registry().items():
        assert any(line.split()[:1] == [name] for line in lines), name
        assert evaluator_info(cls)["signature"] in lines, name
        cut = [w for w in cls.description.split() if w not in printed]
        assert not cut, (name, cut)


def test_a_named_evaluator_is_listed_alone_with_its_contract() -> None:
    """`list evaluators python` shows what a scorer of one's own must look like, and only it."""
    result = CliRunner().invoke(app, ["list", "evaluators", "python"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "expected f(request) -> number; request has .text, .references, .source, .task" in text
    assert "target = (required)" in text
    listed = [line.split()[0] for line in result.output.splitlines()
              if line and not line.startswith(" ") and "level" in line]
    assert listed == ["python"]


def test_an_unknown_name_to_list_is_one_line_with_a_did_you_mean() -> None:
    result = CliRunner().invoke(app, ["list", "evaluators", "pythn"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "unknown evaluator 'pythn'. Did you mean 'python'?" in result.output
    suites = CliRunner().invoke(app, ["list", "suites", "dhp"], env={"COLUMNS": "200"})
    assert suites.exit_code == 2 and "names can follow perturbations or evaluators only" in \
        suites.output
