"""The LLM-written perturbations' summary in a terminal: whole names at every width."""

from rich.console import Console

from evalstress.report.generation import print_generation

BLOCK = {
    "generator": {"model": "fake", "temperature": 0.7},
    "perturbations": {
        "rewriting-and-insertion": {"planned": 4, "accepted": 3, "acceptance_rate": 0.75,
                                    "not_applicable": 0, "asks": 5, "reasks": 1,
                                    "rejections": {"too-long": 2}},
        "uncommon-phrase": {"planned": 2, "accepted": 2, "acceptance_rate": 1.0,
                            "not_applicable": 0, "asks": 2, "reasks": 0, "rejections": {}},
    },
}


def printed(width: int) -> list[str]:
    console = Console(record=True, width=width)
    print_generation(console, BLOCK)
    return console.export_text().splitlines()


def test_at_80_columns_each_perturbation_is_named_whole_with_its_figures_named() -> None:
    lines = printed(80)
    assert max(len(line) for line in lines) <= 80
    assert "  rewriting-and-insertion" in lines and "  uncommon-phrase" in lines
    text = " ".join(" ".join(lines).split())
    assert "planned: 4; accepted: 3; rate: 75%" in text
    assert "rejected answers (top reasons): too-long 2" in text


def test_a_wide_console_keeps_the_table() -> None:
    lines = printed(140)
    assert any("rewriting-and-insertion" in line and "75%" in line for line in lines)
