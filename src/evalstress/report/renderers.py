"""Where the report finds how to show each analysis: one registry per surface, keyed by the
analysis name, so adding an analysis means registering its renderers, not editing a dispatch.

- `TERMINAL`: `fn(result) -> list of rich tables`, from the analysis' result object (the
  terminal after a run); built-in ones in `report.terminal`.
- `SECTIONS`: `fn(data, context) -> HTML`, from the analysis' JSON form in results.json (the
  report rebuilt from a run directory); built-in ones in `report.sections`,
  `report.adversarial` and `report.bias`.

A plugin analysis registers its own through the entry point groups below; an analysis without
a renderer shows its notes in the terminal and its JSON in the report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalstress.core.registry import Registry

if TYPE_CHECKING:
    from rich.table import Table

    from evalstress.analyses.outcomes import Outcome


@dataclass(frozen=True)
class SectionContext:
    """What every report section may draw on besides its own data: the run's test outcomes,
    the short evaluator labels, and the plotters (score curves, D bars)."""

    found: Sequence[Outcome]
    short: Mapping[str, str]
    curves: Callable[..., str]
    bars: Callable[..., str]


TerminalRenderer = Callable[[Any], "list[Table]"]
SectionRenderer = Callable[[Mapping[str, Any], SectionContext], str]

TERMINAL: Registry[TerminalRenderer] = Registry(
    "terminal renderer", builtin=("evalstress.report.terminal", "evalstress.report.bias"),
    group="evalstress.terminal_renderers")
SECTIONS: Registry[SectionRenderer] = Registry(
    "report section", builtin=("evalstress.report.sections", "evalstress.report.adversarial",
                               "evalstress.report.bias"),
    group="evalstress.report_sections")

#: decorators: `@terminal_tables("discernment")`, `@report_section("discernment")`
terminal_tables = TERMINAL.register
report_section = SECTIONS.register

__all__ = ["SECTIONS", "TERMINAL", "SectionContext", "report_section", "terminal_tables"]
