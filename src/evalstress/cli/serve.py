"""`evalstress serve`: the shipped model behind an OpenAI-compatible URL (the server itself
is `evalstress.serve`)."""

from __future__ import annotations

from typing import Annotated

import typer

from evalstress.cli.common import (
    app,
    err,
    fail,
    next_steps,
)
from evalstress.cli.options import (
    ServedModelOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.extras import MissingExtra
from evalstress.serve import API_KEY_ENV, DEFAULT_MAX_BODY_MIB


@app.command("serve")
def serve_command(
    model: ServedModelOption = "local",
    host: Annotated[str, typer.Option(
        help="Listen address. 127.0.0.1, ::1 and localhost stay on this machine; any other "
             "address (0.0.0.0, ::, a network address) lets other machines in and needs an "
             "API key.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Listen port.")] = 8080,
    n_ctx: Annotated[int, typer.Option(help="Context window in tokens.")] = 4096,
    alias: Annotated[str | None, typer.Option(
        help="Model id to serve under (default: the file's name; its path is never shown).")]
    = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: half the cores).")]
    = None,
    logprobs: Annotated[bool, typer.Option(
        help="Keep logits for logprobs (n_ctx x vocabulary floats of memory).")] = True,
    api_key: Annotated[str | None, typer.Option(
        envvar=API_KEY_ENV, show_default=False,
        help=f"Secret every request must send as `Authorization: Bearer KEY`. Prefer the "
             f"`{API_KEY_ENV}` environment variable: a key on the command line is visible to "
             f"other users of this machine in `ps`. Required when --host is not a loopback "
             f"address.")] = None,
    allow_origin: Annotated[list[str] | None, typer.Option(
        "--allow-origin", metavar="ORIGIN", show_default=False,
        help="Let web pages of ORIGIN (scheme://host[:port], like http://localhost:3000) call "
             "the server from a browser; repeat for more. By default no page of another "
             "origin may: a browser's request from one gets 403 and no CORS header. '*' lets "
             "every page in (never with credentials).")] = None,
    max_body_mib: Annotated[float, typer.Option(
        help="Largest request body in MiB; a larger one gets 413 before it is read.")]
    = DEFAULT_MAX_BODY_MIB,
) -> None:
    """Serve the shipped model behind an OpenAI-compatible URL (llama-cpp-python's server).

    Then judge with `-e 'judge:model=NAME,base_url=http://127.0.0.1:8080/v1'`. Without a server,
    `-e judge:model=local` runs the same model inside evalstress.

    With a key (`export EVALSTRESS_SERVE_API_KEY=...` before serving), every request needs
    `Authorization: Bearer KEY`; a judge sends it with `api_key_env=EVALSTRESS_SERVE_API_KEY`
    in its spec, the variable set in its shell too. Listening beyond loopback (`--host
    0.0.0.0`) refuses to start without a key. The key is never printed.

    Web pages: no page of another origin may call the server unless `--allow-origin` names its
    origin, and on loopback it answers only to loopback host names (DNS rebinding). A body over
    `--max-body-mib` gets 413, one sent as anything but JSON 415, a malformed one 400.
    """
    from evalstress.serve import ListenError, ServeSettings, serve

    if api_key is not None:  # a .env written on Windows leaves a trailing carriage return
        api_key = api_key.strip()
    try:
        serve(ServeSettings(model, host, port, n_ctx, alias, threads, logprobs, api_key,
                            tuple(allow_origin or ()), max_body_mib),
              announce=lambda text: print_wrapped(err, text, hang=2),
              judged=lambda spec: next_steps(None, ["card", spec, "--budget", "small"],
                                             "the served judge's card"))
    except (MissingExtra, FileNotFoundError, ValueError, ListenError) as exc:
        raise fail(str(exc)) from None
