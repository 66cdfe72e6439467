"""`evalstress list`: the registered perturbations, evaluators and suites."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalstress.cli.common import app, console, fail
from evalstress.cli.helpformat import wrap_words
from evalstress.core.consoles import print_wrapped
from evalstress.core.wording import plural

if TYPE_CHECKING:  # the registries load when something is listed: --help stays light
    from evalstress.evaluators.base import Evaluator


def evaluator_info(cls: type[Evaluator]) -> dict[str, Any]:
    """What `list evaluators` says of one evaluator: its printable form with the defaults and
    each declared parameter's kind, default, help and whether it enters the signature."""
    from evalstress.evaluators.base import printable_form

    params = {key: {"kind": param.kind.expects, "default": param.shown_default,
                    "help": param.help, "signed": param.signed}
              for key, param in (cls.PARAMS or {}).items()}
    return {"description": cls.description, "level": cls.level,
            "signature": printable_form(cls), "params": params}


#: how far an item's lines sit under its name
INDENT = 4


def print_entry(name: str, about: str, lines: Sequence[str], *, dim: int = 0) -> None:
    """One listed item: its name and a note on one line, then each of `lines` indented under
    it (the first `dim` of them dimmed), wrapped to the terminal between words only, a line's
    continuation two columns deeper: a table's narrow columns would cut names and words."""
    print_wrapped(console, about, lead=name + " ", lead_style="bold", style="dim", hang=INDENT)
    for number, line in enumerate(lines):
        parts = wrap_words(line, max(console.width - INDENT - 2, 20))
        for indent, part in zip([INDENT] + [INDENT + 2] * len(parts), parts, strict=False):
            console.print(" " * indent + part, style="dim" if number < dim else None,
                          markup=False, highlight=False, soft_wrap=True)
    console.print()


@app.command("list")
def list_command(
    what: Annotated[str, typer.Argument(help="perturbations, evaluators or suites")]
    = "perturbations",
    names: Annotated[list[str] | None, typer.Argument(
        help="Only these perturbations or evaluators, e.g. `list evaluators python`: its "
        "contract and parameters.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Perturbations as the markdown catalogue table.")] = False,
) -> None:
    """List registered perturbations (with metadata), evaluators or suites.

    Names after the kind list only those: `evalstress list evaluators python` shows what a
    scorer of your own must look like."""
    from evalstress.core.strict import ConfigError, check_names
    from evalstress.evaluators.base import registry as evaluator_registry
    from evalstress.perturb.base import registry as perturbation_registry
    from evalstress.suites import builtin_suites, load_suite

    def chosen(kind: str, known: dict[str, Any]) -> dict[str, Any]:
        """The registry, or the named entries of it (an unknown name: one line, exit 2)."""
        if not names:
            return known
        try:
            check_names(kind, names, known, where="evalstress list")
        except ConfigError as exc:
            raise fail(str(exc)) from None
        return {name: known[name] for name in names}

    if names and not what.startswith(("pert", "eval")):
        raise fail(f"evalstress list {what}: names can follow perturbations or evaluators only")
    if what.startswith("pert"):
        rows = [cls.info() for cls in chosen("perturbation", perturbation_registry()).values()]
        if markdown:
            from evalstress.perturb.catalogue import catalogue_markdown

            typer.echo(catalogue_markdown(), nl=False)
            return
        if as_json:
            console.print_json(json.dumps(rows))
            return
        console.print("[bold]Perturbations[/]\n")
        for row in rows:
            grid = f"{row['severity_param']}: {', '.join(map(str, row['grid']))}"
            print_entry(row["name"], f"{row['family']}, {row['level']} level, {row['method']}",
                        [row["description"], f"grid: {grid}",
                         f"damages: {', '.join(row['damages'])}",
                         f"preserves: {', '.join(row['preserves'])}"])
    elif what.startswith("eval"):
        evals = chosen("evaluator", evaluator_registry())
        if as_json:
            console.print_json(json.dumps({n: evaluator_info(c) for n, c in evals.items()}))
            return
        console.print("[bold]Evaluators[/] (parameters: name = default (kind))\n")
        for name, cls in evals.items():
            info = evaluator_info(cls)
            shown = [f"{key} = {p['default']} ({p['kind']})" for key, p in info["params"].items()]
            print_entry(name, f"{cls.level} level",
                        [info["signature"], cls.description,
                         *(shown or ["(its constructor's keywords)"])], dim=1)
    elif what.startswith("suite"):
        for name in builtin_suites():
            s = load_suite(name)
            console.print(f"[bold]{name}[/]: {s.description} "
                          f"({plural(len(s.perturbations), 'perturbation')}, {plural(len(s.seeds), 'seed')})")
    else:
        raise fail(f"cannot list '{what}': choose perturbations, evaluators or suites")
