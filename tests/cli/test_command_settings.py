"""Every command that runs work goes through a settings model: its options are the model's
keys, it takes --config, and a value from the file is checked (and named) as a flag's is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.job.settings import RunSettings
from evalstress.job.settingsbase import Settings
from evalstress.job.studysettings import (
    AttackSettings,
    CardSettings,
    CorrelateSettings,
    LevelsSettings,
    SelfBiasSettings,
)

runner = CliRunner()

#: each command that runs work, and its settings model
MODELS: dict[str, type[Settings]] = {
    "run": RunSettings, "quickstart": RunSettings, "criteria-levels": LevelsSettings,
    "card": CardSettings, "attack": AttackSettings, "self-bias": SelfBiasSettings,
    "correlate": CorrelateSettings}

COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]


def _keys(command: str) -> set[str]:
    """The command's parameters as setting keys (a trailing _ dropped), --config left out."""
    return {str(p.name).rstrip("_") for p in COMMANDS[command].params} - {"config"}


def test_every_command_that_writes_a_run_or_a_card_has_a_settings_model() -> None:
    writes = {name for name, command in COMMANDS.items()
              if any((p.name == "out" and "directory" in (getattr(p, "help", "") or ""))
                     or (p.name == "out" and "card's folder" in (getattr(p, "help", "") or ""))
                     for p in getattr(command, "params", ()))}
    assert writes == set(MODELS)


@pytest.mark.parametrize("command", sorted(MODELS))
def test_a_run_like_command_takes_config_and_its_options_are_its_models_keys(
        command: str) -> None:
    assert "config" in {p.name for p in COMMANDS[command].params}, command
    keys = set(MODELS[command].keys())
    if command == "quickstart":  # a fixed choice of the run's settings
        assert _keys(command) < keys
    else:  # run's analysis options (a mapping) are written in the file only
        assert _keys(command) == keys - {"options"}, (_keys(command) ^ keys)


@pytest.mark.parametrize("command", ["attack", "self-bias", "correlate", "card",
                                     "criteria-levels", "quickstart"])
def test_a_misspelt_config_key_is_refused_with_a_suggestion(tmp_path: Path,
                                                            command: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("quite: true\n", encoding="utf-8")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "hypothesis": "A text."}) + "\n", encoding="utf-8")
    args = {"attack": [str(data), "-v", "bleu", "-g", "bleu"],
            "self-bias": [str(data), "--model", "a=b"], "correlate": [str(data)],
            "card": ["bleu"], "criteria-levels": [str(data), "-j", "judge:model=m"],
            "quickstart": []}[command]
    out = tmp_path / "out"
    result = runner.invoke(app, [command, *args, "--config", str(config), "--out", str(out)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"{config}: unknown config field 'quite'" in said and "'quiet'" in said, said
    assert not out.exists()


def test_a_config_value_is_checked_and_named_as_the_files(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("candidates: 0\n", encoding="utf-8")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "hypothesis": "A text."}) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["attack", str(data), "-v", "bleu", "-g", "bleu", "--config",
                                 str(config), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"{config}: field 'candidates'" in " ".join(result.output.split())


def test_a_required_option_may_come_from_the_config(tmp_path: Path) -> None:
    """attack without --victim: the error says it may be given either way."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "hypothesis": "A text."}) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["attack", str(data), "-g", "bleu",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert ("--victim is required: give it on the command line or in the --config file"
            in " ".join(result.output.split()))


def test_a_card_takes_its_evaluators_from_the_config(tmp_path: Path) -> None:
    """card with no SPEC on the command line: the file's specs are the cards made (here the
    dry run's plan, which scores nothing)."""
    config = tmp_path / "c.yaml"
    config.write_text("specs: [bleu]\nbudget: small\ndry_run: true\n", encoding="utf-8")
    result = runner.invoke(app, ["card", "--config", str(config), "--out",
                                 str(tmp_path / "card")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Card plan for bleu (small budget" in result.output
    none = runner.invoke(app, ["card", "--out", str(tmp_path / "card")])
    assert none.exit_code == 2
    assert "SPEC is required: give it on the command line or in the --config file" in " ".join(
        none.output.split())


def _correlate(tmp_path: Path, *more: str) -> dict[str, Any]:
    docs = [{"id": f"d{i}", "references": [f"The cat sat on mat number {i}."],
             "systems": [{"system": s, "summary": f"A cat sat on a mat {i} {s}.",
                          "coherence": i + j, "consistency": j, "fluency": i, "relevance": j}
                         for j, s in enumerate(("x", "y", "z"))]} for i in range(4)]
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text("limit: 2\nevaluators: [bleu]\nn_boot: 50\n", encoding="utf-8")
    out = tmp_path / "run"
    result = runner.invoke(app, ["correlate", str(data), "--config", str(config), "--out",
                                 str(out), "--no-cache", "--quiet", *more])
    assert result.exit_code == 0, result.output
    return dict(json.loads((out / "results.json").read_text(encoding="utf-8")))


def test_correlate_takes_its_settings_from_the_config_and_a_flag_wins(tmp_path: Path) -> None:
    results = _correlate(tmp_path)
    assert results["config"]["limit"] == 2 and results["config"]["evaluators"] == ["bleu"]
    assert results["config"]["n_boot"] == 50
    assert results["counts"]["documents"] == 2
    results = _correlate(tmp_path, "--limit", "3", "--force")
    assert results["counts"]["documents"] == 3


def test_quickstart_refuses_a_config_that_chooses_its_fixed_settings(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("evaluators: [rouge]\n", encoding="utf-8")
    result = runner.invoke(app, ["quickstart", "--config", str(config), "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"{config}: field 'evaluators': quickstart always runs the lexical metrics" in said
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", sorted(MODELS))
def test_a_default_shown_in_help_is_the_models_default(command: str) -> None:
    """An option's default (what --help shows) is the settings model's: a file's value is
    never overruled by a default written differently in two places."""
    from dataclasses import MISSING, fields

    model = MODELS[command]
    defaults = {f.name.rstrip("_"): f.default_factory() if f.default_factory is not MISSING
                else f.default for f in fields(model) if "setting" in f.metadata}
    for param in COMMANDS[command].params:
        key = str(param.name).rstrip("_")
        if key == "config" or param.default in (None, False, ()):
            continue
        assert param.default == defaults[key], (command, key)


@pytest.mark.parametrize("command", ["attack", "self-bias", "correlate", "criteria-levels"])
def test_a_command_without_its_data_says_where_to_give_it(command: str, tmp_path: Path) -> None:
    result = runner.invoke(app, [command, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "DATA is required: give it on the command line or in the --config file" in " ".join(
        result.output.split())
    assert not (tmp_path / "out").exists()


def test_correlate_reads_the_data_file_the_config_names(tmp_path: Path) -> None:
    first = _correlate(tmp_path)
    config = tmp_path / "c.yaml"
    config.write_text(f"data: {tmp_path / 'docs.jsonl'}\nlimit: 2\nevaluators: [bleu]\n"
                      "n_boot: 50\n", encoding="utf-8")
    out = tmp_path / "from-config"
    result = runner.invoke(app, ["correlate", "--config", str(config), "--out", str(out),
                                 "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output
    again = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert again["counts"] == first["counts"] and again["config"]["data"] == str(
        tmp_path / "docs.jsonl")


def test_max_missing_is_one_check_from_a_flag_or_a_file(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "hypothesis": "A text."}) + "\n", encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text("max_missing: 1.5\n", encoding="utf-8")
    base = ["attack", str(data), "-v", "bleu", "-g", "bleu", "--out", str(tmp_path / "out")]
    flag = runner.invoke(app, [*base, "--max-missing", "1.5"])
    from_file = runner.invoke(app, [*base, "--config", str(config)])
    assert flag.exit_code == from_file.exit_code == 2
    assert flag.output.strip() == ("error: --max-missing 1.5: give a fraction between 0 and 1 "
                                   "(1 turns the check off)")
    assert from_file.output.strip() == (f"error: {config}: field 'max_missing' 1.5: give a "
                                        "fraction between 0 and 1 (1 turns the check off)")
