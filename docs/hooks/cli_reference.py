"""mkdocs hook: the command-line reference, generated from the typer app `evalstress.cli.app`.

The page `reference/cli.md` holds a `<!-- cli -->` marker; this hook replaces it with every
command and subcommand of the app (usage, help, options with types and defaults), read from the
click command typer builds, so the page follows the code whatever module a command lives in.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- cli -->"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(param: Any) -> str:
    if param.required or param.default is None or callable(param.default):
        return ""
    value = param.default
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) if value else ""
    return f"`{value}`"


def _names(param: Any) -> str:
    if param.param_type_name == "argument":
        return f"`{getattr(param, 'metavar', None) or param.name}`"
    names = [*param.opts, *param.secondary_opts]
    return ", ".join(f"`{n}`" for n in names)


def command_markdown(command: Any, path: list[str], level: int = 2) -> list[str]:
    """The section of one command (and of its subcommands, one level deeper)."""
    from evalstress.cli.helpformat import placeholder

    name = " ".join(path)
    out = [f"{'#' * level} {name}", ""]
    ctx = command.context_class(command, info_name=name)
    usage = " ".join(command.collect_usage_pieces(ctx))
    out += ["```text", f"{name} {usage}".rstrip(), "```", ""]
    help_text = (command.help or "").strip()
    if help_text:
        out += [help_text.replace("\b\n", ""), ""]
    params = [p for p in command.params if not getattr(p, "hidden", False)
              and p.name not in ("help",)]
    if params:
        out += ["| argument or option | type | default | what it does |",
                "| --- | --- | --- | --- |"]
        for param in params:
            shown = getattr(param, "display_type", None)
            kind = str(shown(ctx) if callable(shown) else "").strip("<>")
            kind = placeholder(param) or kind  # as --help names values: TEXT, N, NUMBER, PATH
            if getattr(param, "is_flag", False):
                kind = "flag"
            out.append(f"| {_names(param)} | {_cell(kind)} | {_default(param)} | "
                       f"{_cell(getattr(param, 'help', '') or '')} |")
        out.append("")
    if hasattr(command, "list_commands"):  # a group (typer vendors click: no isinstance)
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is not None and not getattr(sub, "hidden", False):
                out += command_markdown(sub, [*path, sub_name], min(level + 1, 4))
    return out


def cli_markdown() -> str:
    """Markdown for every command of `evalstress.cli.app`."""
    import typer

    from evalstress.cli import app

    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="evalstress")
    lines: list[str] = []
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        if command is not None and not getattr(command, "hidden", False):
            lines += command_markdown(command, ["evalstress", name])
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri == "reference/cli.md":
        return markdown.replace(MARKER, cli_markdown())
    return markdown
