"""HTTP transports of the LLM client: a lean aiohttp POST, or the official openai SDK.

Both send one chat-completion request and return the raw body, or raise `TransportError` with a
kind the client's retry loop understands (rate-limit, server, client, timeout, connection,
malformed). The aiohttp path builds the request itself: about a quarter of the CPU per call of
the SDK's generic request machinery, which made the judge client-bound at high concurrency. The
SDK path is kept for gateways that need its behaviour (`EVALSTRESS_LLM_TRANSPORT=openai`).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import socket
import time
from collections.abc import Mapping
from typing import Any

from evalstress.core.redact import redact, server_excerpt
from evalstress.core.userfile import parse_json

TRANSPORTS = ("aiohttp", "openai")


class TransportError(Exception):
    def __init__(self, kind: str, message: str, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(redact(message))  # a server may echo the key it was sent
        self.kind, self.status, self.retry_after = kind, status, retry_after


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms`, `Retry-After` seconds or an HTTP date."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def status_kind(status: int) -> str:
    if status == 429:
        return "rate-limit"
    return "server" if status >= 500 or status in (408, 409) else "client"


def error_message(body: bytes | Mapping[str, Any] | None, fallback: str = "") -> str:
    """An excerpt of the server's own error message from an OpenAI-style error body, else of
    `fallback`: redacted (also in base64 or hex), one line, cut short (`server_excerpt`)."""
    data: Any = body
    if isinstance(body, bytes | bytearray):
        try:
            data = parse_json(body, "the error body")  # too deep: a ValueError too
        except ValueError:
            return server_excerpt(body[:4096].decode("utf-8", "replace")) or \
                server_excerpt(fallback)
    if isinstance(data, Mapping):
        inner = data.get("error", data)
        if isinstance(inner, Mapping) and "message" in inner:
            return server_excerpt(str(inner["message"]))
    return server_excerpt(fallback)


def connection_failure(exc: BaseException, base_url: str) -> str | None:
    """What really happened when a connection could not be made, or None when it was made.

    Found anywhere in the exception's chain (the SDK's aiohttp adapter reports a refused
    connection as a connect *timeout*): a refused connection, an unknown host name, another
    socket error while connecting."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    connect_error: BaseException | None = None
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, ConnectionRefusedError):
            return (f"connection refused by {base_url} (nothing listens there: is the server "
                    "running, and is the port right?)")
        if isinstance(item, socket.gaierror):
            return f"could not connect to {base_url}: host name not found ({item.strerror})"
        if any(c.__name__ in ("ClientConnectorError", "ConnectError")
               for c in type(item).__mro__):
            connect_error = item
        todo += [item.__cause__, item.__context__, getattr(item, "os_error", None)]
    if connect_error is not None:
        return f"could not connect to {base_url}: {connect_error}"
    return None


def choose_transport(requested: str | None = None) -> str:
    """aiohttp when installed, unless the caller or EVALSTRESS_LLM_TRANSPORT asks for openai."""
    name = requested or os.environ.get("EVALSTRESS_LLM_TRANSPORT") or ""
    if name and name not in TRANSPORTS:
        raise ValueError(f"unknown LLM transport '{name}': choose {' or '.join(TRANSPORTS)}")
    if name:
        return name
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return "openai"
    return "aiohttp"


class AiohttpTransport:
    """POST /chat/completions over one aiohttp session (keep-alive pool) per endpoint."""

    def __init__(self, base_url: str, api_key: str, connections: int, timeout: float):
        import aiohttp

        self.base_url = base_url
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": f"Bearer {api_key}",
                        "Content-Type": "application/json", "Accept": "application/json"}
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections, limit_per_host=connections),
            timeout=aiohttp.ClientTimeout(total=timeout), skip_auto_headers=("User-Agent",))

    async def post(self, body: Mapping[str, Any], timeout: float) -> bytes:
        import aiohttp

        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            response = await self.session.post(self.url, data=payload, headers=self.headers,
                                               timeout=aiohttp.ClientTimeout(total=timeout))
            try:
                data = await response.read()
            finally:
                # synchronous: no await lies between reading an answer and caching it, so a
                # Ctrl-C never loses an answer the server already gave
                response.release()
            if response.status >= 400:
                status = response.status
                raise TransportError(
                    status_kind(status),
                    f"HTTP {status} from {self.base_url}: "
                    f"{error_message(data, response.reason or '')}", status,
                    parse_retry_after(response.headers) if status == 429 else None)
            return data
        except TimeoutError as exc:
            refused = connection_failure(exc, self.base_url)
            if refused is not None:
                raise TransportError("connection", refused) from None
            raise TransportError("timeout", f"no answer from {self.base_url} within "
                                 f"{timeout:.1f}s") from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportError("connection", f"{self.base_url}: the body was cut short "
                                 f"({type(exc).__name__}: {server_excerpt(str(exc))})") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise TransportError("connection", connection_failure(exc, self.base_url)
                                 or f"{self.base_url}: {type(exc).__name__}: "
                                 f"{server_excerpt(str(exc))}") from None

    async def aclose(self) -> None:
        await self.session.close()


class OpenAITransport:
    """The official SDK's generic POST: its auth, URLs and error types."""

    def __init__(self, base_url: str, api_key: str, connections: int, timeout: float):
        import openai

        self.base_url = base_url
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                                         timeout=timeout,
                                         http_client=_http_client(connections, timeout))

    async def post(self, body: Mapping[str, Any], timeout: float) -> bytes:
        import openai

        try:
            raw = await self.client.post("/chat/completions", cast_to=_response_type(),
                                         body=dict(body), options={"timeout": timeout})
            return bytes(raw.content)
        except openai.RateLimitError as exc:
            raise TransportError("rate-limit", f"HTTP 429 from {self.base_url}: "
                                 f"{_sdk_message(exc)}", 429,
                                 parse_retry_after(exc.response.headers)) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            raise TransportError(status_kind(status), f"HTTP {status} from {self.base_url}: "
                                 f"{_sdk_message(exc)}", status) from None
        except openai.APITimeoutError as exc:
            refused = connection_failure(exc, self.base_url)  # a refusal dressed as a timeout
            if refused is not None:
                raise TransportError("connection", refused) from None
            raise TransportError("timeout", f"no answer from {self.base_url} within "
                                 f"{timeout:.1f}s") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise TransportError("connection", connection_failure(exc, self.base_url)
                                 or f"{self.base_url}: {type(cause).__name__}: "
                                 f"{server_excerpt(str(cause))}") from None
        except openai.APIError as exc:
            raise TransportError("malformed", f"{self.base_url}: "
                                 f"{server_excerpt(str(exc))}") from None

    async def aclose(self) -> None:
        await self.client.close()


def make_transport(name: str, base_url: str, api_key: str, connections: int,
                   timeout: float) -> AiohttpTransport | OpenAITransport:
    cls = AiohttpTransport if name == "aiohttp" else OpenAITransport
    return cls(base_url, api_key, connections, timeout)


def _response_type() -> Any:
    """The raw-response class of the installed openai (httpx2 in new releases, httpx before)."""
    try:
        import httpx2

        return httpx2.Response
    except ImportError:
        import httpx

        return httpx.Response


def _http_client(connections: int, timeout: float) -> Any:
    """aiohttp under the SDK when installed (less CPU per call than httpx's pool), else httpx."""
    import openai

    try:
        import httpx2 as httpx_mod
    except ImportError:
        import httpx as httpx_mod  # type: ignore[no-redef]
    limits = httpx_mod.Limits(max_connections=connections, max_keepalive_connections=connections)
    try:
        import aiohttp  # noqa: F401

        return openai.DefaultAioHttpClient(limits=limits, timeout=timeout)
    except (ImportError, RuntimeError):
        return openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout)


def _sdk_message(exc: Any) -> str:
    return error_message(getattr(exc, "body", None), str(getattr(exc, "message", exc)))


__all__ = ["TRANSPORTS", "AiohttpTransport", "OpenAITransport", "TransportError",
           "choose_transport", "connection_failure", "make_transport", "parse_retry_after"]

_ = asyncio  # the transports run inside the client's event loop
