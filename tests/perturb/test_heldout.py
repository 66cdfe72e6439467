"""The held-out set of the LLM attacks' acceptance (tests/perturb/heldout/) and the precision
table the package ships from it (perturb/validator_precision.json).

The rule of the set: its replies were written after the checks were last tuned, on originals of
their own, and no check and no test is ever fitted to them. A held-out reply the checks misjudge
stays in the set and counts; fixing a check because of it would turn it into a tuning reply (add
new held-out replies then)."""

from __future__ import annotations

import datetime
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from wordfreq import zipf_frequency

from evalstress.core.text import TextParser
from evalstress.core.version import __version__
from evalstress.perturb.labelled import checks_table, load_labelled, measure
from evalstress.perturb.llm import builtin_attacks
from evalstress.perturb.precision import FLOOR, attack_trust, precision_table
from tests.perturb.conftest import assert_every_kind_of_reply

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = Path(__file__).resolve().parent / "heldout"
TUNING = Path(__file__).resolve().parent / "labelled"
WINDOW = 5  # words: a shorter run of words is common English, not a copied reply


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _windows(text: str) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i:i + WINDOW]) for i in range(len(words) - WINDOW + 1)}


def _sources() -> Iterator[Path]:
    """What the checks are made of and what tests them: the checks' code and the attack files,
    the tuning set, and every test but this file, whose rule is the point."""
    perturb = ROOT / "src" / "evalstress" / "perturb"
    yield from sorted(perturb.rglob("*.py"))
    yield from sorted((perturb / "prompts").glob("*.yaml"))
    yield from sorted(TUNING.glob("*.yaml"))
    yield from (p for p in sorted((ROOT / "tests").rglob("*.py")) if p.name != "test_heldout.py")


def test_every_llm_attack_has_a_held_out_set_of_each_kind() -> None:
    assert_every_kind_of_reply(load_labelled(HELDOUT))


def test_the_held_out_set_has_originals_of_its_own() -> None:
    held = {a.text for answers in load_labelled(HELDOUT).values() for a in answers}
    tuned = {a.text for answers in load_labelled(TUNING).values() for a in answers}
    assert held and not held & tuned
    shown = {" ".join(d.original.split()) for spec in builtin_attacks().values()
             for d in spec.demonstrations}
    assert not held & shown


def test_no_check_and_no_other_test_refers_to_a_held_out_reply() -> None:
    # no run of five words of a held-out original or reply (refusals and remarks aside: they
    # are stock phrases around copies of other replies), and no invented name of the set (a
    # word English does not use), appears in the checks' code, the attack files, the tuning
    # set or any other test
    cases = load_labelled(HELDOUT)
    texts = {a.text for answers in cases.values() for a in answers} | {
        a.answer for answers in cases.values() for a in answers
        if a.kind not in ("refusal", "preamble")}
    windows = set().union(*(_windows(t) for t in texts))
    names = {w for t in texts for w in re.findall(r"\b[A-Z][a-z]{3,}\b", t)
             if zipf_frequency(w.lower(), "en") == 0}
    assert len(windows) > 1000 and {"Hestby", "Varnholt", "Quenby"} <= names
    for path in _sources():
        text = path.read_text("utf-8")
        found = windows & _windows(text)
        assert not found, (path, sorted(found)[:3])
        assert not {n for n in names if re.search(rf"\b{n}\b", text)}, path


@pytest.fixture(scope="module")
def heldout_results():  # type: ignore[no-untyped-def]
    return measure(load_labelled(HELDOUT), builtin_attacks(), TextParser())


def test_the_shipped_table_is_what_the_checks_measure_on_the_held_out_set(
        heldout_results) -> None:  # type: ignore[no-untyped-def]
    shipped = precision_table()["checks"]
    measured = checks_table(heldout_results)
    assert shipped == measured, ("the checks no longer measure what the package ships: run "
                                 "python bench/bench_validators.py --write")


def test_the_table_says_when_and_with_what_it_was_measured() -> None:
    table = precision_table()
    datetime.date.fromisoformat(table["measured"])
    assert table["evalstress"] == __version__
    assert "tests/perturb/heldout" in table["set"]


def test_the_table_counts_by_hand() -> None:
    # uncommon-phrase on the held-out set: 8 correct and 9 wrong replies; the checks accept
    # 4 correct ones and 2 wrong ones (a rare word of another meaning: squandered, abandoned)
    row = precision_table()["checks"]["uncommon-phrase"]
    assert (row["correct"], row["wrong"], row["tp"], row["fp"]) == (8, 9, 4, 2)
    assert row["precision"] == round(4 / 6, 4) and row["recall"] == 0.5
    # Wilson 95% interval of 4 out of 6, by its formula
    z, n, p = 1.959963984540054, 6, 4 / 6
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5)
    assert row["precision_ci"] == [round(centre - half, 4), round(centre + half, 4)]


def test_the_floor_decides_which_attacks_write_unverified_variants() -> None:
    checks = precision_table()["checks"]
    for name, spec in builtin_attacks().items():
        trust = attack_trust(spec)
        precision = checks[name]["precision"]
        assert trust.check_precision == precision
        assert (trust.verification == "checks") == (precision is not None
                                                    and precision >= FLOOR), name
    # the two attacks whose tuning set already showed them below the floor
    for name in ("uncommon-phrase", "rewriting-and-insertion"):
        assert attack_trust(builtin_attacks()[name]).verification == "unverified"


def test_a_measured_verifier_is_shipped_for_every_attack() -> None:
    local = precision_table()["verifiers"]["local"]
    assert local["temperature"] == 0 and set(local["attacks"]) == set(builtin_attacks())
    datetime.date.fromisoformat(local["measured"])


def test_bench_prints_tuning_and_held_out_precision_with_intervals(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_validators.py", "--attack", "uncommon-phrase"])
    runpy.run_path(str(ROOT / "bench" / "bench_validators.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "tuning set (the checks were tightened on it" in out
    assert "held-out set (never used to change a check" in out
    rows = [[c.strip() for c in line.split("|")[2:-1]] for line in out.splitlines()
            if line.startswith("| uncommon-phrase")]
    tuning, heldout = rows
    # tuning: 15 correct, 19 wrong, 10 accepted wrong; held-out: the shipped row
    assert tuning[:6] == ["15", "19", "10", "0", "0.60", "[0.41, 0.77]"]
    assert heldout == ["8", "9", "2", "4", "0.67", "[0.30, 0.90]", "0.50", "[0.22, 0.78]",
                       "unverified"]
