"""`evalstress serve`: the shipped SmolLM2 GGUF (or any GGUF) behind an OpenAI-compatible URL.

For users who want an HTTP endpoint rather than the in-process `model=local` (another tool, a
notebook kernel that should not hold the model, several runs sharing one server). It runs
llama-cpp-python's own server (FastAPI + uvicorn), which speaks `/v1/chat/completions` with
logprobs, GBNF `grammar` and JSON `response_format`, and lists the model at `/v1/models`.

Safe by default: it listens on 127.0.0.1; an address other machines can reach needs an API key
(every request then carries `Authorization: Bearer KEY`); no web page of another origin may call
it unless `--allow-origin` names that origin, and on loopback it answers only to loopback host
names (`browser`); a body over `--max-body-mib` gets 413, one not declared as JSON 415, a
malformed one a 400 naming the field (`guard`); the socket is bound before anything is announced
(`listen`). The key is never printed: the announcement names the variable that holds it.

The served id is the GGUF's file name unless `--alias` names it (never its path: the listing
would tell any caller where the user keeps files). `/v1/models` lists it with the sha256 of the
file, by which evalstress keys cached answers of a loopback server, so restarting the server on
another port, or under another alias, keeps the cache, and a replaced file gets a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalstress.core.extras import require
from evalstress.core.strict import ConfigError
from evalstress.llm.identity import SHA256_FIELD, file_digest
from evalstress.llm.local import DEFAULT_CONTEXT, resolve_gguf
from evalstress.serve.browser import ANY_ORIGIN, BrowserPolicy, OriginError
from evalstress.serve.listen import ListenAddress, ListenError, open_listener, resolve

#: The request body limit's default, in MiB
DEFAULT_MAX_BODY_MIB = 8.0
MIN_BODY_MIB, MAX_BODY_MIB = 0.001, float(1 << 20)

#: The environment variable `evalstress serve` reads its API key from; the judge hint names it.
API_KEY_ENV = "EVALSTRESS_SERVE_API_KEY"

__all__ = ["API_KEY_ENV", "DEFAULT_MAX_BODY_MIB", "ListenError", "ServeSettings", "build_app", "serve"]


@dataclass
class ServeSettings:
    model: str = "local"
    host: str = "127.0.0.1"
    port: int = 8080
    n_ctx: int = DEFAULT_CONTEXT
    alias: str | None = None
    threads: int | None = None
    logprobs: bool = True  # keeps every position's logits (n_ctx x vocabulary floats)
    api_key: str | None = field(default=None, repr=False)  # never in a repr or a log line
    allow_origins: tuple[str, ...] = ()  # web origins whose pages may call the server
    max_body_mib: float = DEFAULT_MAX_BODY_MIB

    @property
    def max_body(self) -> int:
        """The request body limit in bytes."""
        return int(self.max_body_mib * (1 << 20))

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"


def check_api_key(key: str | None) -> None:
    """Refuse a key no client could send in an `Authorization` header (the key is not shown)."""
    if key is None:
        return
    if not key:
        raise ConfigError(f"the API key is empty: set {API_KEY_ENV} to a secret")
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        raise ConfigError(f"the API key (--api-key or ${API_KEY_ENV}) may hold only printable "
                          "ASCII characters without spaces")


def check_limits(settings: ServeSettings) -> None:
    """Refuse a body limit no request could meet, or one that is no limit."""
    if not MIN_BODY_MIB <= settings.max_body_mib <= MAX_BODY_MIB:  # NaN too
        raise ConfigError(f"--max-body-mib {settings.max_body_mib:g}: give a size from "
                          f"{MIN_BODY_MIB:g} to {MAX_BODY_MIB:.0f} MiB")


def browser_policy(settings: ServeSettings, address: ListenAddress) -> BrowserPolicy:
    """Which web pages may call the server and which host names it answers to (raises
    ConfigError for an `--allow-origin` value that is not an origin)."""
    try:
        return BrowserPolicy.build(settings.allow_origins, settings.host, address.loopback)
    except OriginError as exc:
        raise ConfigError(str(exc)) from None


def origins_warning(policy: BrowserPolicy, key: str | None) -> str | None:
    """The warning for `--allow-origin '*'` without a key: any page the user opens can then
    use the model and read its answers."""
    if ANY_ORIGIN not in policy.origins or key is not None:
        return None
    return ("warning: --allow-origin '*' lets every web page you open use the model and read "
            "its answers; name the origins you mean, or set a key")


def model_listing(served: str, digest: str) -> dict[str, Any]:
    """The `/v1/models` answer: the served name (never a path) and the file's sha256."""
    return {"object": "list", "data": [{"id": served, "object": "model", "owned_by": "me",
                                        "permissions": [], SHA256_FIELD: digest}]}


def check_exposure(address: ListenAddress, key: str | None) -> None:
    """Refuse an address other machines can reach when no key guards it."""
    if not address.loopback and key is None:
        raise ConfigError(f"{address.host} lets other machines in: set {API_KEY_ENV} or "
                          f"--api-key")


def exposure_warning(address: ListenAddress) -> str | None:
    """The warning for an address other machines can reach, or None on loopback."""
    if address.loopback:
        return None
    where = ("every network interface" if address.every_interface
             else f"{address.host}, which other machines can reach")
    return (f"warning: listening on {where} (port {address.port}): anyone who can reach it "
            f"and holds the key can use the model, and plain HTTP sends the key and the texts "
            f"unencrypted; keep 127.0.0.1 unless you mean it")


def build_app(settings: ServeSettings, policy: BrowserPolicy) -> tuple[Any, Path]:
    """The llama-cpp-python server app for the settings behind evalstress's request guard, and
    the GGUF it serves."""
    require("evalstress serve", "llm-local", ["llama_cpp", "fastapi", "uvicorn",
                                               "sse_starlette", "pydantic_settings"])
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    from evalstress.serve.grammar import GrammarCheck
    from evalstress.serve.guard import RequestGuard

    check_api_key(settings.api_key)
    path = resolve_gguf(settings.model)
    served = settings.alias or path.name
    options: dict[str, Any] = {"model": str(path), "model_alias": served,
                               "n_ctx": int(settings.n_ctx),
                               "logits_all": bool(settings.logprobs), "verbose": False}
    if settings.threads:
        options["n_threads"] = options["n_threads_batch"] = int(settings.threads)
    # the library checks the key on its model routes too; the guard checks every route
    server = ServerSettings(host=settings.host, port=int(settings.port),
                            api_key=settings.api_key)
    app = create_app(server_settings=server, model_settings=[ModelSettings(**options)])
    grammar = GrammarCheck(path)
    guard = RequestGuard(app, api_key=settings.api_key, grammar_parses=grammar.parses,
                         browser=policy, max_body=settings.max_body,
                         listing=model_listing(served, file_digest(path)),
                         vocab_size=grammar.size)
    return guard, path


def serve(settings: ServeSettings, announce: Any = print, judged: Any = None) -> None:
    """Serve until interrupted; `judged`, when given, is called with the spec of a judge that
    asks the server, once it is announced. Raises ConfigError for a missing or unusable key and
    ListenError when the address cannot be listened on, both before announcing anything."""
    check_api_key(settings.api_key)
    check_limits(settings)
    address = resolve(settings.host, int(settings.port))
    check_exposure(address, settings.api_key)
    policy = browser_policy(settings, address)
    sock = open_listener(address)
    settings = replace(settings, port=int(sock.getsockname()[1]))  # the real one for port 0
    try:
        for warning in (exposure_warning(address), origins_warning(policy, settings.api_key)):
            if warning:
                announce(warning)
        app, path = build_app(settings, policy)
        import uvicorn

        served = settings.alias or path.name
        key_note = f"; api_key_env={API_KEY_ENV}" if settings.api_key else ""
        key_spec = f",api_key_env={API_KEY_ENV}" if settings.api_key else ""
        announce(f"Serving {path.name} at {settings.base_url} (model id: {served}{key_note})")
        spec = (f"judge:model={settings.alias or 'local-server'},base_url={settings.base_url}"
                f"{key_spec},form=score-only,constrain=grammar")
        announce(f"Judge with: -e '{spec}'")
        if judged is not None:
            judged(spec)
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()
