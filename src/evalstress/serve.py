"""`evalstress serve`: the shipped SmolLM2 GGUF (or any GGUF) behind an OpenAI-compatible URL.

For users who want an HTTP endpoint rather than the in-process `model=local` (another tool, a
notebook kernel that should not hold the model, several runs sharing one server). It runs
llama-cpp-python's own server (FastAPI + uvicorn), which speaks `/v1/chat/completions` with
logprobs, GBNF `grammar` and JSON `response_format`, and lists the model at `/v1/models`.

The served id is the GGUF's path unless `--alias` names it; evalstress keys cached answers of a
loopback server by that id (by the file's hash when the id is a path on this machine), so
restarting the server on another port keeps the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstress.core.extras import require
from evalstress.llm.local import DEFAULT_CONTEXT, resolve_gguf


@dataclass
class ServeSettings:
    model: str = "local"
    host: str = "127.0.0.1"
    port: int = 8080
    n_ctx: int = DEFAULT_CONTEXT
    alias: str | None = None
    threads: int | None = None
    logprobs: bool = True  # keeps every position's logits (n_ctx x vocabulary floats)

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"


def build_app(settings: ServeSettings) -> tuple[Any, Path]:
    """The llama-cpp-python server app for the settings, and the GGUF it serves."""
    require("evalstress serve", "llm-local", ["llama_cpp", "fastapi", "uvicorn",
                                               "sse_starlette", "pydantic_settings"])
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    path = resolve_gguf(settings.model)
    options: dict[str, Any] = {"model": str(path), "n_ctx": int(settings.n_ctx),
                               "logits_all": bool(settings.logprobs), "verbose": False}
    if settings.alias:
        options["model_alias"] = settings.alias
    if settings.threads:
        options["n_threads"] = options["n_threads_batch"] = int(settings.threads)
    server = ServerSettings(host=settings.host, port=int(settings.port))
    return create_app(server_settings=server, model_settings=[ModelSettings(**options)]), path


def serve(settings: ServeSettings, announce: Any = print) -> None:
    """Serve until interrupted."""
    app, path = build_app(settings)
    import uvicorn

    served = settings.alias or str(path)
    announce(f"Serving {path.name} at {settings.base_url} (model id: {served})")
    announce(f"Judge with: -e 'judge:model={settings.alias or 'local-server'},"
             f"base_url={settings.base_url},form=score-only,constrain=grammar'")
    uvicorn.run(app, host=settings.host, port=int(settings.port), log_level="warning")
