"""What every command shares: the typer `app` the commands register on, the consoles, and the
helpers that turn a bad value into one error line (`fail`), build evaluators, open the score
cache and say when an evaluator's answers are mostly missing.

This module imports no command module and not the package `evalstress.cli`: command modules
import it, and `evalstress.cli` imports them.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from evalstress.cli.guard import GuardedGroup, debug_on, on_stop
from evalstress.cli.helpformat import WholeWordContext, name_placeholders
from evalstress.core.bars import PlainLines, RichBars, progress_for
from evalstress.core.cache import default_cache_dir
from evalstress.core.consoles import FittedConsole, print_wrapped
from evalstress.core.redact import redact
from evalstress.core.storage import StorageError
from evalstress.core.version import __version__
from evalstress.engine.outdir import OutLock, check_out_dir
from evalstress.engine.runhealth import EXIT_MOSTLY_MISSING

if TYPE_CHECKING:  # the run machinery loads with the command that uses it: --help stays light
    from evalstress.core.cache import SQLiteCache
    from evalstress.engine.runhealth import MissingShare
    from evalstress.evaluators.base import Evaluator
    from evalstress.job.settingsbase import Settings

#: the narrowest terminal that gets typer's rich help panels for a command; below it, a
#: command's help is click's two columns (option, then description wrapped beside it). The
#: rich option table keeps six columns (names, short names, --no- names, type, ...) and, at
#: 80 columns, leaves each description a column one or two words wide.
RICH_HELP_MIN_WIDTH = 120


def terminal_width() -> int:
    """The width help is laid out for: $TERMINAL_WIDTH (typer's own setting), else $COLUMNS or
    the terminal's size (80 when there is no terminal)."""
    from typer import rich_utils

    return rich_utils.MAX_WIDTH or shutil.get_terminal_size().columns


def plain_help_when_narrow(group: Any) -> None:
    """Commands of `group` (and of its subgroups) print plain two-column help when the
    terminal is narrower than RICH_HELP_MIN_WIDTH; the same text, laid out to be read at 80
    columns, with lines broken between words only. Groups keep their rich command list, which
    wraps well at any width."""
    if terminal_width() >= RICH_HELP_MIN_WIDTH:
        return
    for command in getattr(group, "commands", {}).values():
        if hasattr(command, "commands"):  # a group (typer vendors click: no isinstance)
            plain_help_when_narrow(command)
        else:
            command.rich_markup_mode = None
            command.context_class = WholeWordContext


class EvalstressGroup(GuardedGroup):
    """The command line's group: a command ends in one line on an interrupt or a storage
    error (`GuardedGroup`), and help stays readable in a narrow terminal."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        name_placeholders(self)
        plain_help_when_narrow(self)
        return super().main(*args, **kwargs)


app = typer.Typer(
    help=(
        "Stress-test the things that score generated text.\n\n"
        "evalstress damages good texts in controlled ways (truncation, dropped tokens, swapped "
        "sentences, ...), scores originals and variants with the evaluators you choose, and "
        "tells you where an evaluator fails to notice the damage.\n\n"
        "Start with `evalstress card bleu --budget small`: the card of an evaluator, where "
        "its scores can be trusted and where not (a metric, a judge, a scorer of your own). "
        "`evalstress quickstart` runs one suite on the built-in corpus; `evalstress run "
        "DATA.jsonl` runs the suites you pick on your data.\n\n"
        "Exit codes: 0 done; 1 `check` found broken expectations; 2 bad input or settings; "
        "3 outputs written but an evaluator's scores are mostly missing (`--max-missing`); "
        "4 an unexpected error (a bug: `evalstress --debug ...` shows its traceback); "
        "130 / 143 interrupted (Ctrl-C / SIGTERM)."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_show_locals=False,
    cls=EvalstressGroup,  # Ctrl-C, SIGTERM, a full disk: one clear line and a meaningful exit
    # plain help (narrow terminals) wraps to the terminal's width up to this, not click's 80
    context_settings={"max_content_width": RICH_HELP_MIN_WIDTH - 1},
)
#: standard output and standard error, each as wide as where it goes (`core.consoles`)
console = FittedConsole()
err = FittedConsole(stderr=True)


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")]
    = False,
    debug: Annotated[bool, typer.Option(
        "--debug", help="Show the traceback of an unexpected error before its one line (the "
        "exit is 4 either way). Also EVALSTRESS_DEBUG=1.")] = False,
) -> None:
    if debug:
        debug_on()
    if version:
        console.print(f"evalstress {__version__}")
        raise typer.Exit(0)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `message` as one error line on stderr; the caller raises the returned Exit."""
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(redact(message))}",  # "[llm]" is text, not markup
              soft_wrap=True)  # one line, whatever the width: a path is never cut
    return typer.Exit(code)


#: not a setting: the command's context and its --config file
NOT_SETTINGS = ("ctx", "config")

S = TypeVar("S", bound="Settings")


def given(ctx: typer.Context, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A command's parameters (its `locals()` on entry) as the flags of its settings model:
    keyed by setting (a trailing _ dropped: `map_` is `map`), None where the command line left
    the option out, so the --config file, then the model's default, decide it."""
    flags = {}
    for param in ctx.command.params:
        name = param.name
        if name is None or name in NOT_SETTINGS:
            continue
        source = ctx.get_parameter_source(name)
        left_out = source is not None and source.name in ("DEFAULT", "DEFAULT_MAP")
        flags[name.rstrip("_")] = None if left_out else parameters[name]
    return flags


def settings_of(model: type[S], flags: Mapping[str, Any], config: Path | None = None, *,
                face: str | None = None) -> S:
    """The command's settings (flags > --config > defaults); a bad one ends it (exit 2)."""
    from evalstress.core.strict import ConfigError
    from evalstress.job import SettingsError

    try:
        settings: S = model.resolve(flags, config, face=face)
    except (SettingsError, ConfigError) as exc:
        raise fail(str(exc)) from None
    return settings


def renamed(old: str, new: str) -> None:
    """The one-line notice of a command used under its old name (kept for one release)."""
    print_wrapped(err, f"`evalstress {old}` is now `evalstress {new}`; the old name goes in "
                  "the next release", lead="note:", hang=2)


def progress_bars(enabled: bool = True) -> RichBars | PlainLines:
    """Progress of each long phase on stderr: bars on a terminal, a plain line at least every
    EVALSTRESS_PROGRESS_INTERVAL seconds in a log; an interrupted command leaves no live
    display behind."""
    try:
        bars = progress_for(err, enabled=enabled)
    except ValueError as exc:
        raise fail(str(exc)) from None
    on_stop(bars.stop)
    return bars


def use_cache_dir(cache_dir: Path | None) -> None:
    """A given `cache_dir` becomes the process's cache folder (judges, model files, worker
    processes), so $EVALSTRESS_CACHE_DIR is not touched when none is given."""
    if cache_dir is not None:
        os.environ["EVALSTRESS_CACHE_DIR"] = str(cache_dir)


def score_cache(cache_dir: Path | None, no_cache: bool) -> SQLiteCache | None:
    """The score cache of a command that scores outside a run (attack, correlate, the dry run):
    see `use_cache_dir`."""

    from evalstress.engine.scoring import open_run_cache

    use_cache_dir(cache_dir)
    try:
        return open_run_cache(cache_dir, no_cache)
    except StorageError as exc:
        raise fail(str(exc)) from None


def make_evaluators(specs: list[str]) -> list[Evaluator]:
    """An evaluator per spec (`evalstress.job.build_evaluators`), labels told apart; a bad
    spec or two evaluators that still share a label end the command."""
    from evalstress.job import build_evaluators

    try:
        made = build_evaluators(specs)
    except (KeyError, ValueError, ImportError, FileNotFoundError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        raise fail(str(message)) from None
    return made


def reachable(evaluators: Sequence[Evaluator]) -> None:
    """Each evaluator that asks an endpoint can answer (`Evaluator.check_reachable`), asked
    before the command writes anything: one that cannot ends the command (exit 2); the
    evaluators are closed then."""
    try:
        for evaluator in evaluators:
            evaluator.check_reachable()
    except ValueError as exc:
        for evaluator in evaluators:
            evaluator.close()
        raise fail(str(exc.args[0] if exc.args else exc)) from None


@contextlib.contextmanager
def owned_out(out: Path, *, force: bool, inputs: Sequence[tuple[str, Path | None]] = (),
              cache_dir: Path | None = None, no_cache: bool = False) -> Iterator[Path]:
    """For a study that writes its run directory itself: refuse, before any work, an `--out`
    whose replacement would delete what evalstress did not write (or the command's inputs or
    cache), and hold its lock while the command writes it."""

    cache = (("cache folder", cache_dir or default_cache_dir()),)  # even with --no-cache
    lock = OutLock(out)
    try:
        check_out_dir(out, force=force,
                      inputs=[(what, path) for what, path in (*inputs, *cache)
                              if path is not None])
        lock.acquire()
    except StorageError as exc:
        raise fail(str(exc)) from None
    try:
        yield out
    finally:
        lock.release()


def exit_if_mostly_missing(failing: Sequence[MissingShare], max_missing: float) -> None:
    """Name each evaluator whose answers are mostly missing and exit 3 (outputs are written)."""
    from rich.markup import escape


    if not failing:
        return
    for share in failing:
        err.print(f"[bold red]error:[/] {escape(share.describe())}")
    err.print(f"[bold red]error:[/] more than {max_missing:.0%} of an evaluator's scores are "
              "missing: its results say nothing (outputs written; --max-missing 1 accepts)")
    raise typer.Exit(EXIT_MOSTLY_MISSING)


def progress_line(label: str, quiet: bool) -> Callable[[str], None]:
    """A card's progress line per method, on stderr (nothing when quiet): card, atlas and
    calibrate say each method's progress the same way."""
    def say(line: str) -> None:
        if not quiet:
            print_wrapped(err, line, lead=label, lead_style="bold", hang=2)

    return say


def next_steps(opened: Path | str | None, then: Sequence[str] = (), why: str = "", *,
               quiet: bool = False) -> None:
    """The last lines of a command that writes, on stdout: `open:` the file a reader opens
    first, and `next:` the command worth trying after it (`then`, its arguments after
    `evalstress`, quoted for a shell) with `why` in brackets. Nothing when `quiet`."""
    if quiet:
        return
    if opened is not None:
        print_wrapped(console, str(opened), lead="open:", lead_style="bold", hang=2)
    if then:
        print_wrapped(console, shlex.join(["evalstress", *then]) + (f" ({why})" if why else ""),
                      lead="next:", lead_style="bold", hang=2)
