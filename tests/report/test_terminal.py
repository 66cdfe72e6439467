import math

import pandas as pd
import pytest
from rich.console import Console

from evalstress.analyses.blindspot import BlindspotResult, BlindspotRow, SeverityPoint
from evalstress.analyses.discernment import discernment_analysis
from evalstress.job import LEXICAL_DEFAULT, JobResult, RunSettings, build_job, run_job
from evalstress.report.terminal import blindspot_table, discernment_tables, print_summary


def point(mean: float) -> SeverityPoint:
    return SeverityPoint("0.5", 0.5, mean, 0.0, 1.0, mean - 1.0, 4, 2, 0)


def test_table_says_not_applicable_and_inconclusive() -> None:
    rows = [BlindspotRow("rep", "rep-2", "truncation", False, 1.0, [point(1.0)], 0.01, False,
                         False),
            BlindspotRow("bleu", "bleu", "truncation", True, 1.0, [point(0.5)], 0.01, True, True,
                         n_scores=10, n_missing=8),
            BlindspotRow("bleu", "bleu", "negation", True, float("nan"), [], 0.0, False, False,
                         n_scores=4, n_missing=4, n_empty_severities=1)]
    console = Console(record=True, width=200)
    console.print(blindspot_table(BlindspotResult(rows, 0.01, 0.0),
                                  lambda evaluator, pert: evaluator != "rep"))
    text = console.export_text()
    lines = {line.split("│")[1].strip() + line.split("│")[2].strip(): line
             for line in text.splitlines() if line.count("│") > 5}
    assert "n/a" in lines["rep/rep-2 ↓truncation"]
    assert "INCONCLUSIVE" in lines["bleu/bleutruncation"]  # 8 of 10 scores missing
    assert "no scores" in lines["bleu/bleunegation"] and "INCONCLUSIVE" in lines["bleu/bleunegation"]


def _table_text(rows: list[BlindspotRow]) -> str:
    console = Console(record=True, width=200)
    console.print(blindspot_table(BlindspotResult(rows, 0.01, 0.0)))
    return " ".join(console.export_text().split())


def test_the_title_counts_the_seeds_the_run_had() -> None:
    one = SeverityPoint("0.5", 0.5, 0.5, 0.0, 1.0, -0.5, 4, 1, 0)
    text = _table_text([BlindspotRow("bleu", "bleu", "truncation", True, 1.0, [one], 0.01,
                                     True, True)])
    assert "mean score over 1 seed as noise grows" in text
    two = _table_text([BlindspotRow("bleu", "bleu", "truncation", True, 1.0, [point(0.5)], 0.01,
                                    True, True)])
    assert "mean score over 2 seeds as noise grows" in two


def test_the_lower_is_better_legend_comes_with_a_lower_is_better_row() -> None:
    higher = BlindspotRow("bleu", "bleu", "truncation", True, 1.0, [point(0.5)], 0.01, True, True)
    lower = BlindspotRow("ter", "ter", "truncation", False, 1.0, [point(1.5)], 0.01, True, True)
    assert "lower is better" not in _table_text([higher])
    assert "↓ lower is better" in _table_text([higher, lower])


def test_the_caption_names_the_tests_that_decided() -> None:
    """A strict run (the paper protocol) must not claim a tolerance it did not apply."""
    row = BlindspotRow("bleu", "bleu", "truncation", True, 1.0, [point(0.5)], 0.01, True, True)

    def caption(strict: bool) -> str:
        console = Console(record=True, width=200)
        console.print(blindspot_table(BlindspotResult([row], 0.01, 0.0, strict=strict)))
        return " ".join(console.export_text().split())

    assert "strict tests, no tolerance" in caption(True)
    assert "tolerance max(" not in caption(True)
    assert "tolerance max(0.0, 0.01 × |gold|)" in caption(False)


# --- the summary at 80 and 120 columns: the quickstart's own run ------------------------------


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory: pytest.TempPathFactory) -> JobResult:
    """What `evalstress quickstart --limit 2` runs: the lexical metrics on the blind-spot suite."""
    out = tmp_path_factory.mktemp("quickstart") / "run"
    settings = RunSettings.resolve({"evaluators": LEXICAL_DEFAULT, "suite": "blindspot",
                                    "limit": 2, "out": out, "no_cache": True, "quiet": True,
                                    "workers": 1}, face="quickstart")
    return run_job(build_job(settings))


def _summary_at(done: JobResult, width: int) -> list[str]:
    console = Console(record=True, width=width)
    print_summary(console, done.run, done.analyses["blindspot"])
    return console.export_text().splitlines()


QUICKSTART_LABELS = ("bleu/bleu", "chrf/chrf", "rouge/rouge1", "rouge/rouge2", "rouge/rougeL")


def test_at_80_columns_every_name_is_whole_and_no_line_is_wider(
        quickstart_run: JobResult) -> None:
    """An 80-column terminal got the eight-column table squeezed until names were cut
    (`rouge/ro…`, `noised-…`) and rouge1, rouge2 and rougeL could not be told apart."""
    lines = _summary_at(quickstart_run, 80)
    assert max(len(line) for line in lines) <= 80
    perturbations = [p.name for p in quickstart_run.run.plan.suite.perturbations]
    assert "noised-punctuation" in perturbations and len(perturbations) == 8
    # each evaluator aspect heads its own tests, and each of them names its perturbation whole
    headings = [i for i, line in enumerate(lines) if line.strip() in QUICKSTART_LABELS]
    assert [lines[i].strip() for i in headings] == list(QUICKSTART_LABELS)
    for start, end in zip(headings, [*headings[1:], len(lines)], strict=True):
        names = [line.split()[0] for line in lines[start + 1:end] if line.split()]
        assert [n for n in names if n in perturbations] == perturbations, lines[start]


def test_at_120_columns_the_tests_stay_one_table_a_row_each(quickstart_run: JobResult) -> None:
    lines = _summary_at(quickstart_run, 120)
    assert max(len(line) for line in lines) <= 120
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines
            if line.startswith("│") and line.split("│")[1].strip()]
    perturbations = [p.name for p in quickstart_run.run.plan.suite.perturbations]
    assert [row[:2] for row in rows] == [[label, name] for label in QUICKSTART_LABELS
                                         for name in perturbations]
    assert not any(line.strip() in QUICKSTART_LABELS for line in lines)  # no per-aspect headings


def test_the_discernment_units_name_their_task_and_show_d_ew() -> None:
    """One perturbation on two tasks gave two identical-looking rows (no task column), and a
    lexical metric's D^EW was '–' on every row."""
    from tests.analyses.conftest import table_from

    originals = [4.0, 5.0, 4.0, 5.0, 3.0, 4.0]
    worse = [2.0, 3.0, 3.0, 2.0, 2.0, 3.0]  # every pair drops: one-sided exact p = 1/64
    parts = []
    for task in ("summarization", "translation"):
        part = table_from(originals, {("char-deletion", "minor"): worse}, evaluator="bleu",
                          aspect="bleu")
        part["task"] = task
        parts.append(part)
    result = discernment_analysis(pd.concat(parts, ignore_index=True), expert_weights="builtin")
    units = discernment_tables(result)[1]
    column = {c.header: list(c.cells) for c in units.columns}
    assert column["task"] == ["summarization", "translation"]
    d = math.log(1 / 64) / math.log(0.05)  # D = log_0.05(p) = 1.39
    assert column["D^EW"] == column["D"] == [f"[green]{d:.2f}[/]"] * 2
