"""The perturbation catalogue as a markdown table, generated from the registry's metadata.

`docs/perturbations.md` is this output (`python scripts/catalogue.py` or
`evalstress list perturbations --markdown`), so the documentation cannot drift from the code.
"""

from __future__ import annotations

from evalstress.perturb.base import registry

PAPERS = {"000": "criteria confusion", "002": "blind spots", "003": "DHP"}

HEADER = """# Perturbation catalogue

Generated from the registry by `python scripts/catalogue.py` (or
`evalstress list perturbations --markdown`); do not edit by hand.

Severity grids are the defaults; override them per suite (`grid: [...]`). Paper 003 severities
`minor`/`major` resolve to the per-task k of that paper's Table 2 (summarization, dialogue,
data-to-text and open-ended use the SummEval values, or SumPubMed's with `dataset: sumpubmed`;
stories have one level, `minor` = 5, and their `major` skips); a number gives k directly. The
perturbations that paper applies at one degree only (story endings, QA's random answer) have the
severity `default`, which discernment counts in its minor and its major group alike. Paper 000's
four rule attacks also take the severity `paper`: that paper's own fixed rule (suite `criteria-
rules-paper`). `damages` and `preserves` name aspects of the hierarchy in
`criteria/aspects.yaml`.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def catalogue_markdown() -> str:
    """One row per registered perturbation: metadata, grid, aspects and source papers."""
    columns = ["name", "family", "level", "method", "severity (grid)", "damages", "preserves",
               "papers", "description"]
    lines = [HEADER, "| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for name, cls in registry().items():
        info = cls.info()
        grid = ", ".join(map(str, info["grid"]))
        papers = ", ".join(f"{p} ({PAPERS.get(p, '?')})" for p in info["papers"])
        row = [f"`{name}`", info["family"], info["level"], info["method"],
               f"{info['severity_param']}: {grid}", ", ".join(info["damages"]),
               ", ".join(info["preserves"]) or "-", papers, info["description"]]
        lines.append("| " + " | ".join(_cell(str(c)) for c in row) + " |")
    return "\n".join(lines) + "\n" + paper_rules_markdown()


PAPER_HEADER = """
## The papers' own protocols (`rule: paper`)

`--protocol paper` (or `protocol: paper` in a suite) follows each paper's own settings where
evalstress's defaults differ. Paper 002: every perturbation below from that paper takes the rule
of its public code (the `paper-summarization`, `paper-translation`, `paper-translation-ted` and
`paper-open-ended` suites carry the protocol with that code's grids), a summary's noise ratio
under such a rule counts Penn-Treebank units (a period, a comma, 's, a $ or % sign apart) as the code counted
its tokenized CNN/DM summaries, and the blind-spot
analysis averages every severity over the whole gold set (an example the perturbation could not
change counts with its gold score at noise ratio 0) and tests without tolerance. Paper 003: its
LLM-written types below take the counts its Table 2 names per task. Paper 000: its four rule
attacks run at their severity `paper` (that paper's fixed rules) unless the suite wrote their
grid. A suite whose perturbations all come from papers 000 and 003 runs its first seed only:
those papers perturb each text once. A suite may keep one perturbation's default with
`rule: default`.
"""


def paper_rules_markdown() -> str:
    """The perturbations with a paper rule, their paper and what the rule changes."""
    lines = [PAPER_HEADER, "| name | paper | under rule=paper |", "| --- | --- | --- |"]
    for name, cls in registry().items():
        rule = getattr(cls, "paper_rule", "")
        if rule:
            papers = ", ".join(cls.source_papers)
            lines.append(f"| `{name}` | {papers} | {_cell(rule)} |")
    return "\n".join(lines) + "\n"
