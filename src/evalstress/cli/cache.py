"""`evalstress cache stats|merge|explain`: look into the score and LLM response caches."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import app, console, fail, make_evaluators
from evalstress.cli.options import (
    CacheDirOption,
    JudgeSpecOption,
    TextReferencesOption,
    TextTaskOption,
)
from evalstress.core.cache import default_cache_dir
from evalstress.core.userfile import read_json

cache_app = typer.Typer(help="Inspect the score and LLM response caches.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("stats")
def cache_stats(
    cache_dir: CacheDirOption = None,
) -> None:
    """Entries per namespace in the score cache and the LLM response cache, with file sizes."""
    from rich.table import Table

    from evalstress.engine.scoring import open_cache
    from evalstress.llm.cache import ResponseCache

    folder = cache_dir or default_cache_dir()
    table = Table(title=f"Caches in {folder}")
    for column in ("file", "namespace", "entries", "size"):
        table.add_column(column)
    for name in ("scores.sqlite", "llm.sqlite"):
        path = folder / name
        if not path.exists():
            table.add_row(name, "-", "0", "absent")
            continue
        store = open_cache(path) if name == "scores.sqlite" else ResponseCache(path).store
        try:
            spaces = store.namespaces() or {"-": 0}
        finally:
            store.close()
        # measured after opening: opening converts a cache of the older, larger layout
        size = sum(p.stat().st_size for p in folder.glob(name + "*"))
        for i, (space, count) in enumerate(spaces.items()):
            table.add_row(name if i == 0 else "", space, str(count),
                          f"{size / 1e6:.2f} MB" if i == 0 else "")
    console.print(table)


@cache_app.command("merge")
def cache_merge(
    sources: Annotated[list[Path], typer.Argument(help="Cache folders of the shards.")],
    cache_dir: CacheDirOption = None,
) -> None:
    """Merge the caches of sharded runs, so one unsharded run reuses every shard's scores.

    Run `evalstress run DATA --shard i/N --cache-dir cache-i` on each machine, then
    `evalstress cache merge cache-0 ... --cache-dir cache` and `evalstress run DATA --cache-dir
    cache`: that last run scores nothing a shard scored and analyses the whole dataset.
    Corpus-level evaluators (MAUVE) score whole sets, so the last run computes them.
    """
    from evalstress.engine.scoring import open_cache
    from evalstress.llm.cache import ResponseCache

    target = cache_dir or default_cache_dir()
    stores = {"scores.sqlite": open_cache(target / "scores.sqlite"),
              "llm.sqlite": ResponseCache(target / "llm.sqlite").store}
    for source in sources:
        if not source.is_dir():
            raise fail(f"{source}: not a cache folder")
        for name, store in stores.items():
            path = source / name
            if path.exists():
                added = store.merge_from(path)
                console.print(f"{path}: {added} new entries")
    console.print(f"Merged into {target}")


@cache_app.command("explain")
def cache_explain(
    request: Annotated[Path | None, typer.Argument(
        help="JSON file with base_url, model, messages, params, sample (a stored request).")]
    = None,
    evaluator: JudgeSpecOption = None,
    text: Annotated[str | None, typer.Option(help="Text to judge (with -e).")] = None,
    source: Annotated[str, typer.Option(help="Source of the text (with -e).")] = "",
    reference: TextReferencesOption = None,
    task: TextTaskOption = "open-ended",
    aspect: Annotated[str | None, typer.Option(help="Aspect (with -e; default: the first).")]
    = None,
    sample: Annotated[int, typer.Option(help="Sample index.")] = 0,
    cache_dir: CacheDirOption = None,
) -> None:
    """Why is a request not cached? Shows its key and the nearest stored requests, field by field.

    Example: `evalstress cache explain -e 'judge:model=m,base_url=http://127.0.0.1:8080/v1'
    --text "The cat sat." --task summarization --source "..."`
    """
    from evalstress.evaluators.base import ScoreRequest
    from evalstress.evaluators.judge import JudgeEvaluator
    from evalstress.llm.cache import ResponseCache, explain, key_parts

    if request is not None:
        try:
            raw = read_json(request, "a request (JSON)")
            parts = key_parts(raw["base_url"], raw["model"], raw["messages"],
                              raw.get("params", {}), raw.get("sample", sample))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise fail(f"{request}: need a JSON object with base_url, model, messages "
                        f"(params, sample optional): {exc}") from None
    elif evaluator and text is not None:
        judge = make_evaluators([evaluator])[0]
        if not isinstance(judge, JudgeEvaluator):
            raise fail(f"'{evaluator}' is not an LLM judge")
        req = ScoreRequest(text, source, tuple(reference or ()), task)
        name = aspect or judge.aspects[0]
        params = judge.sample_params(sample)
        parts = judge.client.parts(judge.messages(req, name), params, sample)
        judge.close()
    else:
        raise fail("give a request JSON file, or -e JUDGE_SPEC --text TEXT")
    cache = ResponseCache((cache_dir or default_cache_dir()) / "llm.sqlite")
    try:
        result = explain(cache, parts)
    finally:
        cache.close()
    if result.hit:
        console.print(f"[green]hit[/]: {result.key}")
        return
    console.print(f"[yellow]miss[/]: {result.key}")
    if not result.nearest:
        console.print("The response cache is empty.")
    for key, diffs in result.nearest:
        console.print(f"nearest stored {key[:16]}... differs in {len(diffs)} field(s):")
        for d in diffs:
            console.print(f"  {d.field}: wanted {d.wanted!r}, stored {d.stored!r}")
