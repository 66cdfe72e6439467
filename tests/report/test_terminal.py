from rich.console import Console

from evalstress.analyses.blindspot import BlindspotResult, BlindspotRow, SeverityPoint
from evalstress.report.terminal import blindspot_table


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
