"""An endpoint asked once, before any work, whether it can answer: a missing key, a refused
key, a server that is not there or a model it does not serve is one error line then, not
hundreds of failed requests and a run that ends in missing scores.

The check (`check_client`) costs no chat call: a key is required outright for hosts known to
need one (`KEY_HOSTS`), then `GET {base_url}/models` is asked with a short timeout. Its answer
says whether the server is there (connection refused, unknown host, no answer), whether it takes
the key (401 or 403) and, when it lists several models, whether the model is among them (a
server that lists one model answers any name, as llama.cpp does; `serves` allows Ollama's tags
and a gateway's wildcard routes). A server that does not list
models (404, a body that is no list) is taken at its word: the run finds out. An endpoint that
answered is not asked again in this process (a card's methods share one check).
"""

from __future__ import annotations

import socket
import urllib.error
from typing import Any
from urllib.parse import urlsplit

from evalstress.core.redact import read_key, redact
from evalstress.llm.identity import served_models
from evalstress.llm.transport import connection_failure

#: hosts whose API answers nothing without a key: asking them without one is refused at once
KEY_HOSTS = ("api.openai.com",)
#: seconds the check waits for `GET /models`
PROBE_TIMEOUT = 5.0
#: model names an error lists at most
SHOWN_MODELS = 8

#: (base_url, model, key variable) of the endpoints that answered in this process
_answered: set[tuple[str, str, str]] = set()


def forget_answers() -> None:
    """Ask every endpoint again: a test's fake server may reuse the port of an earlier one."""
    _answered.clear()


class EndpointError(ValueError):
    """An endpoint that cannot answer; the message is the command's whole error line."""


def check_client(client: Any, who: str) -> None:
    """Check every endpoint of an `LLMClient` (nothing for an in-process model); `who` names
    the evaluator or generator in the error."""
    if getattr(client, "backend", None) is not None:
        return
    for endpoint in client.pool.endpoints:
        check_endpoint(endpoint.base_url, client.model, client.api_key_env, who=who)


def check_endpoint(base_url: str, model: str, api_key_env: str, *, who: str,
                   timeout: float = PROBE_TIMEOUT) -> None:
    """Raise EndpointError when `base_url` cannot answer for `model` with the key in
    `api_key_env`; return when it can, or when its server does not say."""
    try:
        key = read_key(api_key_env) or ""
    except ValueError as exc:  # a control character inside the key: said without the key
        raise EndpointError(f"{who}: {exc}") from None
    host = (urlsplit(base_url).hostname or "").lower()
    if not key and host in KEY_HOSTS:
        raise EndpointError(f"{who}: {base_url} needs an API key: set ${api_key_env} (or "
                            "name the variable that holds it with api_key_env=NAME)")
    if (base_url, model, api_key_env) in _answered:
        return
    try:
        ids = [served.id for served in served_models(base_url, api_key_env, timeout)]
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (401, 403):
            raise EndpointError(_refused_key(who, base_url, exc.code, key, api_key_env)) \
                from None
        ids = None  # no list of models here: the run finds out
    except (OSError, ValueError) as exc:
        failure = _unreachable(exc, base_url, timeout)
        if failure is None:
            ids = None
        else:
            raise EndpointError(redact(f"{who}: {failure}")) from None
    if ids and len(ids) > 1 and not serves(ids, model):
        shown = ", ".join(sorted(ids)[:SHOWN_MODELS])
        more = f" and {len(ids) - SHOWN_MODELS} more" if len(ids) > SHOWN_MODELS else ""
        raise EndpointError(redact(f"{who}: {base_url} serves no model '{model}' (it lists "
                                   f"{shown}{more}): check model="))
    _answered.add((base_url, model, api_key_env))


def serves(ids: list[str], model: str) -> bool:
    """Whether a server listing `ids` answers `model`: listed, listed with a tag (Ollama's
    `llama3:latest` answers `llama3`), or behind a wildcard route (a gateway's `openai/*`)."""
    return (not model or model in ids or any(i.startswith(f"{model}:") for i in ids)
            or any("*" in i for i in ids))


def _refused_key(who: str, base_url: str, status: int, key: str, api_key_env: str) -> str:
    if not key:
        return (f"{who}: {base_url} asks for an API key (HTTP {status}): set ${api_key_env} "
                "(or name the variable that holds it with api_key_env=NAME)")
    return (f"{who}: {base_url} refused the API key in ${api_key_env} (HTTP {status}): check "
            "the key, or name another variable with api_key_env=NAME")


def _unreachable(exc: BaseException, base_url: str, timeout: float) -> str | None:
    """Why the server could not be reached, or None when it was (it answered something that
    is no list of models)."""
    failure = connection_failure(exc, base_url)
    if failure is not None:
        return failure
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, TimeoutError | socket.timeout):
        return f"no answer from {base_url} within {timeout:g} s (is the server up?)"
    if isinstance(exc, urllib.error.URLError):
        return f"could not connect to {base_url}: {reason}"
    return None
