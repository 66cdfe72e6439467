"""`evalstress list`: the registered perturbations, evaluators and suites."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from evalstress.cli.common import app, console, fail
from evalstress.core.wording import plural
from evalstress.evaluators.base import Evaluator, printable_form
from evalstress.evaluators.base import registry as evaluator_registry
from evalstress.perturb.base import registry as perturbation_registry
from evalstress.suites import builtin_suites, load_suite


def evaluator_info(cls: type[Evaluator]) -> dict[str, Any]:
    """What `list evaluators` says of one evaluator: its printable form with the defaults and
    each declared parameter's kind, default, help and whether it enters the signature."""
    params = {key: {"kind": param.kind.expects, "default": param.shown_default,
                    "help": param.help, "signed": param.signed}
              for key, param in (cls.PARAMS or {}).items()}
    return {"description": cls.description, "level": cls.level,
            "signature": printable_form(cls), "params": params}


@app.command("list")
def list_command(
    what: Annotated[str, typer.Argument(help="perturbations, evaluators or suites")]
    = "perturbations",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Perturbations as the markdown catalogue table.")] = False,
) -> None:
    """List registered perturbations (with metadata), evaluators or suites."""
    if what.startswith("pert"):
        rows = [cls.info() for cls in perturbation_registry().values()]
        if markdown:
            from evalstress.perturb.catalogue import catalogue_markdown

            typer.echo(catalogue_markdown(), nl=False)
            return
        if as_json:
            console.print_json(json.dumps(rows))
            return
        table = Table(title="Perturbations", show_lines=False)
        for column in ("name", "family", "level", "method", "grid", "damages", "preserves",
                       "description"):
            table.add_column(column, overflow="fold")
        for row in rows:
            grid = f"{row['severity_param']}: {', '.join(map(str, row['grid']))}"
            table.add_row(row["name"], row["family"], row["level"], row["method"], grid,
                          ", ".join(row["damages"]), ", ".join(row["preserves"]),
                          row["description"])
        console.print(table)
    elif what.startswith("eval"):
        evals = evaluator_registry()
        if as_json:
            console.print_json(json.dumps({n: evaluator_info(c) for n, c in evals.items()}))
            return
        table = Table(title="Evaluators", show_lines=True)
        table.add_column("name", overflow="fold")
        table.add_column("level")
        table.add_column("parameters: name = default (kind)", overflow="fold")
        table.add_column("description", overflow="fold")
        for name, cls in evals.items():
            info = evaluator_info(cls)
            shown = "\n".join(f"{key} = {p['default']} ({p['kind']})"
                              for key, p in info["params"].items())
            table.add_row(f"{name}\n[dim]{escape(info['signature'])}[/]", cls.level,
                          escape(shown or "(its constructor's keywords)"), cls.description)
        console.print(table)
    elif what.startswith("suite"):
        for name in builtin_suites():
            s = load_suite(name)
            console.print(f"[bold]{name}[/]: {s.description} "
                          f"({plural(len(s.perturbations), 'perturbation')}, {plural(len(s.seeds), 'seed')})")
    else:
        raise fail(f"cannot list '{what}': choose perturbations, evaluators or suites")
