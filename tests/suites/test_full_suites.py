"""criteria-full runs all 18 attacks of paper 000; dhp-full follows paper 003's Table 1 per task."""

from __future__ import annotations

from typer.testing import CliRunner

from evalstress.analyses.expectations import attack_of, expectation_for
from evalstress.cli import app
from evalstress.criteria import expectations
from evalstress.perturb.base import registry
from evalstress.suites import Suite, load_suite

# Paper 003, Table 1 (and Table 2 for the levels): per task, the perturbation types and whether
# they come in minor and major; our names for them
TABLE_1 = {
    "summarization": {"char-deletion": "M", "char-typo": "M", "fictional-named-entities": "M",
                      "grammatical-errors": "M", "sentence-reordering": "M",
                      "rewriting-and-insertion": "M"},
    "story": {"char-deletion": "1", "char-typo": "1", "fictional-named-entities": "1",
              "grammatical-errors": "1", "random-ending": "1", "wrong-ending": "1"},
    "qa": {"char-deletion": "M", "char-typo": "M", "fictional-named-entities": "M",
           "grammatical-errors": "M", "random-answer": "1"},
    "translation": {"char-deletion": "M", "char-typo": "M", "word-span-deletion": "M",
                    "fictional-named-entities": "M", "grammatical-errors": "M"},
}


# The severity labels each unit of dhp-full carries, by hand from Tables 1-2: a type marked (M)
# has a minor and a major unit; story's character and word types are its one degree, run with
# Table 2's minor setting (k = 5, one entity, one error) and labelled minor; the endings and the
# random answer have no degree at all and are labelled default, which discernment counts in the
# minor and the major group alike (so QA's minor group keeps its sentence level)
MINOR_MAJOR = {"minor", "major"}
LABELS = {
    "summarization": {"char-deletion": MINOR_MAJOR, "char-typo": MINOR_MAJOR,
                      "fictional-named-entities": MINOR_MAJOR,
                      "grammatical-errors": MINOR_MAJOR, "sentence-reordering": MINOR_MAJOR,
                      "rewriting-and-insertion": MINOR_MAJOR},
    "story": {"char-deletion": {"minor"}, "char-typo": {"minor"},
              "fictional-named-entities": {"minor"}, "grammatical-errors": {"minor"},
              "random-ending": {"default"}, "wrong-ending": {"default"}},
    "qa": {"char-deletion": MINOR_MAJOR, "char-typo": MINOR_MAJOR,
           "fictional-named-entities": MINOR_MAJOR, "grammatical-errors": MINOR_MAJOR,
           "random-answer": {"default"}},
    "translation": {"char-deletion": MINOR_MAJOR, "char-typo": MINOR_MAJOR,
                    "word-span-deletion": MINOR_MAJOR, "fictional-named-entities": MINOR_MAJOR,
                    "grammatical-errors": MINOR_MAJOR},
}


def severities_planned(suite: Suite, task: str) -> dict[str, set[str]]:
    """Each perturbation the suite runs on `task`, with the severity labels it runs at."""
    planned: dict[str, set[str]] = {}
    for plan, severity, _seed in suite.units(task):
        planned.setdefault(plan.name, set()).add(str(severity))
    return planned


def test_dhp_full_labels_each_unit_as_tables_1_and_2_grade_it() -> None:
    suite = load_suite("dhp-full")
    for task, expected in LABELS.items():
        planned = severities_planned(suite, task)
        assert planned == expected, task


def test_criteria_full_covers_every_attack_of_table_21() -> None:
    suite = load_suite("criteria-full")
    names = [p.name for p in suite.perturbations]
    assert len(names) == 18 and suite.analyses == ("criteria-confusion",)
    assert {attack_of(n) for n in names} == set(expectations())
    for name in names:
        row = expectation_for(name)
        assert row is not None and row.source == "table21", name
    assert sum(registry()[n].method == "llm" for n in names) == 14


def test_dhp_full_follows_table_1_per_task() -> None:
    suite = load_suite("dhp-full")
    for task, expected in TABLE_1.items():
        planned = severities_planned(suite, task)
        assert set(planned) == set(expected), task
        for name, grading in expected.items():
            if grading == "M":
                assert planned[name] == {"minor", "major"}, (task, name)
            else:
                assert len(planned[name]) == 1, (task, name)
        levels = {registry()[name].level for name in planned}
        methods = {registry()[name].method for name in planned}
        assert levels == {"char", "word", "sentence"} or task == "translation", task
        assert methods == {"rule", "llm"}, task
    assert "discernment" in suite.analyses


def test_list_suites_names_the_full_suites() -> None:
    result = CliRunner().invoke(app, ["list", "suites"])
    assert result.exit_code == 0
    assert "criteria-full" in result.output and "dhp-full" in result.output
