"""`evalstress run`'s settings model: a flag beats the --config file, which beats the suite's
own value, which beats the default; the config's keys are the model's fields."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.cli import run as run_module
from evalstress.core.strict import ConfigError
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING
from evalstress.job import StressJob
from evalstress.job.settings import LEXICAL_DEFAULT, RunSettings, SettingsError
from evalstress.suites import Suite

runner = CliRunner()

CONFIG_KEYS = {"data", "map", "task", "suite", "perturbations", "evaluators", "seeds", "out",
               "limit", "rel_tol", "shard", "cache_dir", "protocol", "generator", "verifier",
               "include_unverified", "max_reasks", "shots", "perturbation_prompts", "variants",
               "variant_map",
               "max_chars", "max_missing", "options", "workers", "backend", "ray_address",
               "chunk_size", "sequential", "no_cache", "quiet", "dry_run", "force", "max_units"}


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_config_keys_are_the_models_fields() -> None:
    model_fields = {f.name for f in fields(RunSettings) if "setting" in f.metadata}
    assert set(RunSettings.keys()) == model_fields == CONFIG_KEYS
    # the two fields that are not settings: where the values came from
    assert {f.name for f in fields(RunSettings)} - model_fields == {"config", "sources", "face"}


def test_a_config_may_set_every_field(tmp_path: Path) -> None:
    config = _config(tmp_path, "".join(f"{key}: null\n" for key in sorted(CONFIG_KEYS)
                                       if key not in ("data", "max_missing"))
                     + "data: d.jsonl\nmax_missing: 0.5\n")
    settings = RunSettings.resolve({}, config)
    assert settings.data == Path("d.jsonl")
    assert all(settings.sources[key] in ("config", "default") for key in CONFIG_KEYS)


@pytest.mark.parametrize("key", ["config", "sources", "evaluator", "seed"])
def test_an_unknown_config_key_is_refused_with_a_suggestion(tmp_path: Path, key: str) -> None:
    config = _config(tmp_path, f"{key}: 3\n")
    expected = re.escape(f"{config}: unknown config field '{key}'")
    with pytest.raises(SettingsError, match=expected) as caught:
        RunSettings.resolve({"data": Path("d.jsonl")}, config)
    if key in ("evaluator", "seed"):
        assert f"Did you mean '{key}s'?" in str(caught.value)


def test_flags_must_be_settings() -> None:
    with pytest.raises(TypeError, match="verbose"):
        RunSettings.resolve({"data": Path("d.jsonl"), "verbose": True}, None)


def test_every_run_option_can_come_from_the_config(tmp_path: Path) -> None:
    """The execution settings too: workers, backend, chunk size, caching, quiet, force."""
    config = _config(tmp_path, "workers: 1\nbackend: local\nchunk_size: 8\nsequential: true\n"
                               "no_cache: true\nquiet: true\ndry_run: true\nforce: true\n"
                               "options: {rel_tol: 0.02}\n")
    settings = RunSettings.resolve({}, config)
    assert (settings.workers, settings.backend, settings.chunk_size) == (1, "local", 8)
    assert settings.sequential and settings.no_cache and settings.quiet and settings.dry_run
    assert settings.force and settings.options == {"rel_tol": 0.02}
    flags = RunSettings.resolve({"workers": 2, "chunk_size": 4}, config)  # flags win
    assert (flags.workers, flags.chunk_size, flags.quiet) == (2, 4, True)
    with pytest.raises(SettingsError, match="field 'backend': expected one of local, ray"):
        RunSettings.resolve({}, _config(tmp_path, "backend: spark\n"))
    with pytest.raises(SettingsError, match="field 'quiet': expected true or false"):
        RunSettings.resolve({}, _config(tmp_path, "quiet: yes please\n"))
    with pytest.raises(ConfigError, match=r"unknown option 'rel_toll'\. Did you mean 'rel_tol'"):
        RunSettings.resolve({}, _config(tmp_path, "options: {rel_toll: 0.02}\n"))


@pytest.mark.parametrize(("name", "flag", "in_file", "default"), [
    ("seeds", 2, 3, None),  # default None: the suite's seeds
    ("limit", 4, 7, None),
    ("max_missing", 0.25, 0.75, DEFAULT_MAX_MISSING),
    ("rel_tol", 0.1, 0.3, None),
    ("max_chars", 80, 500, None),
    ("task", "translation", "summarization", None),
])
def test_a_flag_beats_the_config_which_beats_the_default(tmp_path: Path, name: str, flag: Any,
                                                         in_file: Any, default: Any) -> None:
    config = _config(tmp_path, f"data: d.jsonl\n{name}: {json.dumps(in_file)}\n")
    with_flag = RunSettings.resolve({name: flag}, config)
    assert getattr(with_flag, name) == flag and with_flag.sources[name] == "flag"
    from_file = RunSettings.resolve({name: None}, config)
    assert getattr(from_file, name) == in_file and from_file.sources[name] == "config"
    plain = RunSettings.resolve({"data": Path("d.jsonl")}, None)
    assert getattr(plain, name) == default and plain.sources[name] == "default"
    assert not plain.given(name) and from_file.given(name) and with_flag.given(name)


def test_an_empty_flag_is_not_given(tmp_path: Path) -> None:
    config = _config(tmp_path, "data: d.jsonl\nevaluators: [chrf]\ntask: summarization\n")
    settings = RunSettings.resolve({"evaluators": [], "task": ""}, config)
    assert settings.evaluators == ["chrf"] and settings.task == "summarization"


def test_an_empty_evaluator_list_in_the_config_means_the_default(tmp_path: Path) -> None:
    settings = RunSettings.resolve({}, _config(tmp_path, "data: d.jsonl\nevaluators: []\n"))
    assert settings.evaluators == LEXICAL_DEFAULT and settings.sources["evaluators"] == "default"


def test_the_suite_sits_between_the_config_and_the_default(tmp_path: Path) -> None:
    suite = Suite.from_dict({"perturbations": ["truncation"], "seeds": 1,
                             "options": {"max_chars": 500},
                             "generation": {"max_reasks": 4, "shots": 1},
                             "generator": "model=g,base_url=http://127.0.0.1:9/v1"})
    plain = RunSettings.resolve({"data": Path("d.jsonl")}, None).with_suite(suite)
    assert (plain.max_reasks, plain.shots, plain.max_chars) == (4, 1, 500)
    assert plain.generator == "model=g,base_url=http://127.0.0.1:9/v1"
    assert plain.sources["max_reasks"] == "suite" and plain.verifier is None
    config = _config(tmp_path, "data: d.jsonl\nmax_reasks: 0\nmax_chars: 50\ngenerator: ''\n")
    from_file = RunSettings.resolve({}, config).with_suite(suite)
    assert (from_file.max_reasks, from_file.max_chars) == (0, 50)
    assert from_file.generator == "model=g,base_url=http://127.0.0.1:9/v1"  # '' is unset
    with_flag = RunSettings.resolve({"max_reasks": 1, "max_chars": 80}, config).with_suite(suite)
    assert (with_flag.max_reasks, with_flag.max_chars) == (1, 80)
    # null in the config: the generation stage's own default, not the suite's
    null = RunSettings.resolve({}, _config(tmp_path, "data: d.jsonl\nshots: null\n"))
    assert null.with_suite(suite).shots is None


@pytest.mark.parametrize(("text", "message"), [
    ("limit: 0", "{config}: field 'limit': expected a whole number >= 1 (got 0)"),
    ("limit: abc", "{config}: field 'limit': expected a whole number >= 1 (got 'abc')"),
    ("rel_tol: -0.5", "{config}: field 'rel_tol' must be a number >= 0, got -0.5"),
])
def test_bad_config_values_name_the_file_and_field(tmp_path: Path, text: str,
                                                   message: str) -> None:
    config = _config(tmp_path, f"data: d.jsonl\n{text}\n")
    with pytest.raises(SettingsError) as caught:
        RunSettings.resolve({}, config)
    assert str(caught.value) == message.format(config=config)


def test_max_missing_and_max_chars_are_checked_with_the_suite(tmp_path: Path) -> None:
    suite = Suite.from_dict({"perturbations": ["truncation"], "seeds": 1})
    settings = RunSettings.resolve({}, _config(tmp_path, "data: d.jsonl\nmax_missing: half\n"))
    with pytest.raises(SettingsError,
                       match="field 'max_missing' 'half': give a fraction between 0 and 1"):
        settings.with_suite(suite)
    settings = RunSettings.resolve({"data": Path("d.jsonl"), "max_missing": 1.5}, None)
    with pytest.raises(SettingsError, match=r"--max-missing 1\.5: give a fraction between 0 and 1"):
        settings.with_suite(suite)
    settings = RunSettings.resolve({"data": Path("d.jsonl"), "max_chars": -5}, None)
    with pytest.raises(SettingsError, match="max_chars must be a positive whole number"):
        settings.with_suite(suite)
    assert RunSettings.resolve({"data": Path("d.jsonl"), "max_missing": 1}, None).with_suite(
        suite).max_missing == 1.0


def test_no_data_file_means_the_built_in_corpus(tmp_path: Path) -> None:
    settings = RunSettings.resolve({}, None)
    assert settings.data is None and settings.run_dir() == Path("runs/builtin-corpus")
    with pytest.raises(SettingsError, match="--map applies to a data file"):
        RunSettings.resolve({"map": ["hypothesis=text"]}, None)
    with pytest.raises(SettingsError, match="field 'task' applies to a data file"):
        RunSettings.resolve({}, _config(tmp_path, "task: qa\n"))
    assert RunSettings.resolve({"task": "qa"}, _config(tmp_path, "data: d.jsonl\n")).task == "qa"


def test_the_command_line_follows_the_same_precedence(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Through `evalstress run`, with the run itself stubbed out: seeds, limit and max_missing
    from a flag, else the config, else the default."""
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "hypothesis": f"Text number {i}.",
                                        "references": ["A text."]}) + "\n" for i in range(5)))
    seen: dict[str, Any] = {}

    def execute(job: StressJob, **kw: Any) -> None:
        seen.update(examples=len(job.examples), seeds=list(job.suite.seeds), out=job.out,
                    max_missing=job.max_missing)

    monkeypatch.setattr(run_module, "execute", execute)
    config = _config(tmp_path, f"data: {data}\nevaluators: [bleu]\nseeds: 3\nlimit: 2\n"
                               f"max_missing: 0.9\nout: {tmp_path / 'from-config'}\n")
    base = ["run", "-c", str(config), "-p", "truncation"]
    assert runner.invoke(app, base).exit_code == 0
    assert (seen["examples"], seen["seeds"], seen["max_missing"]) == (2, [0, 1, 2], 0.9)
    assert seen["out"] == tmp_path / "from-config"
    assert runner.invoke(app, [*base, "--seeds", "1", "--limit", "4", "--max-missing", "0.3",
                               "--out", str(tmp_path / "flag")]).exit_code == 0
    assert (seen["examples"], seen["seeds"], seen["max_missing"]) == (4, [0], 0.3)
    assert seen["out"] == tmp_path / "flag"
    assert runner.invoke(app, ["run", str(data), "-e", "bleu", "-p", "truncation"]).exit_code == 0
    assert (seen["examples"], seen["seeds"], seen["max_missing"]) == (5, [0, 1, 2, 3, 4],
                                                                      DEFAULT_MAX_MISSING)
    assert seen["out"] == Path(f"runs/{data.stem}")


def test_help_lists_the_card_first_and_quickstart_before_run() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    panel = next(i for i, line in enumerate(lines) if "Commands" in line)
    commands = [line.split()[1] for line in lines[panel + 1:]
                if len(line.split()) > 2 and line.split()[1][:1].islower()
                and len(line) - len(line.lstrip("│ ")) <= 2]
    assert commands[0] == "card"  # --help leads with the card (tests/cli/test_first_contact.py)
    assert commands.index("quickstart") + 1 == commands.index("run")
    assert set(commands) >= {"self-bias", "correlate", "attack", "list", "report", "compare",
                             "check", "combine", "serve", "criteria-levels", "cache"}


#: values of every shape a config file can hold
SHAPES: list[Any] = [5, -3, 1.5, True, "text", "", ["a", 1], [], {"k": [1, 2]}, {}, [[1]],
                     "x" * 5000]


@pytest.mark.parametrize("key", sorted(CONFIG_KEYS))
def test_a_config_value_of_any_shape_is_taken_or_refused_naming_its_field(
        tmp_path: Path, key: str) -> None:
    """Every declared setting meets values of every shape: it takes the value, or says which
    file and field are wrong (a SettingsError or a ConfigError), and a value it takes builds a
    job or fails as a clear error; never a TypeError or AttributeError from deep inside."""
    from evalstress.job import build_job

    for shape in SHAPES:
        config = _config(tmp_path, yaml.safe_dump({key: shape, "limit": 1}
                                                  if key != "limit" else {key: shape}))
        try:
            settings = RunSettings.resolve({}, config)
        except (SettingsError, ConfigError) as exc:
            assert f"field '{key}'" in str(exc) or str(config) in str(exc), (shape, exc)
            continue
        try:
            build_job(settings)
        except (ValueError, KeyError, ImportError) as exc:  # DataError, ConfigError, ...
            message = str(exc.args[0] if exc.args else exc)
            assert message.strip(), (key, shape)


@pytest.mark.parametrize(("text", "message"), [
    ("cache_dir: 5\n", "field 'cache_dir': expected a file or folder path (got 5)"),
    ("data: 7\n", "field 'data': expected a file or folder path (got 7)"),
    ("map: {hypothesis: [1, 2]}\n", "field 'map': expected field mappings such as"),
    ("seeds: 1.5\n", "field 'seeds': expected a whole number >= 1 or a list of whole numbers"),
    ("workers: many\n", "field 'workers': expected a whole number >= 0 (got 'many')"),
    ("protocol: papr\n", "field 'protocol': expected one of default, paper. Did you mean"),
    ("evaluators: [bleu, 3]\n", "field 'evaluators': expected a list of evaluator specs"),
])
def test_the_probes_wrong_types_are_one_line_errors(tmp_path: Path, text: str,
                                                    message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        RunSettings.resolve({}, _config(tmp_path, text))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_one_evaluator_alone_is_a_one_item_list_not_its_letters(tmp_path: Path) -> None:
    """`evaluators: bleu` used to say "unknown evaluator 'b'"."""
    settings = RunSettings.resolve({}, _config(tmp_path, "evaluators: bleu\n"))
    assert settings.evaluators == ["bleu"]


def test_a_run_too_big_is_refused_before_any_work_saying_how_to_raise_the_bound(
        tmp_path: Path) -> None:
    from evalstress.job import build_job

    settings = RunSettings.resolve({"perturbations": ["truncation"], "seeds": 1000,
                                    "max_units": 10_000}, None)
    with pytest.raises(SettingsError) as caught:
        build_job(settings)
    # 57 built-in examples x 5 truncation severities x 1000 seeds = 285,000
    assert ("the run plans 285,000 variants (57 examples x up to 5 perturbation severities "
            "x 1,000 seeds), more than --max-units 10,000") in str(caught.value)
    assert "raise --max-units" in str(caught.value)
    assert build_job(RunSettings.resolve({"perturbations": ["truncation"], "seeds": 1000},
                                         None)).examples  # under the default bound


def test_a_billion_seeds_is_refused_at_once(tmp_path: Path) -> None:
    """It used to fill 23 GB of memory before the kernel stopped it."""
    result = runner.invoke(app, ["run", "-c", str(_config(tmp_path, "seeds: 1000000000\n")),
                                 "-e", "bleu", "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "1,000,000,000 seeds is more than 10,000" in " ".join(result.output.split())


def test_a_zero_or_false_in_the_config_is_a_value_not_an_absence(tmp_path: Path) -> None:
    """`max_units: 0` read as "unset" and ran with the default bound."""
    with pytest.raises(SettingsError, match="field 'max_units': expected a whole number >= 1"):
        RunSettings.resolve({}, _config(tmp_path, "max_units: 0\n"))
    assert RunSettings.resolve({}, _config(tmp_path, "workers: 0\n")).sources["workers"] \
        == "config"
    assert RunSettings.resolve({}, _config(tmp_path, "max_units: null\n")).sources[
        "max_units"] == "default"


def test_a_config_max_missing_out_of_range_names_the_file_and_field(tmp_path: Path) -> None:
    config = _config(tmp_path, "max_missing: 5\n")
    settings = RunSettings.resolve({}, config)
    with pytest.raises(SettingsError, match=f"{config}: field 'max_missing' 5.0: give a "
                                            "fraction between 0 and 1"):
        settings.with_suite(Suite.from_dict({"perturbations": ["truncation"], "seeds": 1}))


def test_a_variant_map_without_variants_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="maps the fields of a --variants file"):
        RunSettings.resolve({"variant_map": ["text=perturbed"]}, None)
