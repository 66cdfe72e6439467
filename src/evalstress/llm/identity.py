"""What names a model server in the response cache's keys.

A remote endpoint is named by its URL: the provider behind it is part of what the answer depends
on, and the URL does not change between runs. A server on this machine (a loopback address such as
127.0.0.1, localhost or ::1) usually gets a fresh port every time it starts, so its URL would make
every restart a cache miss. It is named instead by the model it serves, learned once per client
from `GET {base_url}/models`:

- the served model id: the `model=` name when the server lists it, else the only model listed;
- the sha256 of the model's file, so a renamed copy keeps its cache and a replaced file gets a
  new one: as listed with the model (`evalstress serve` lists it in `file_sha256`, and never the
  file's path), or hashed here when the id is the path of a file on this machine (llama.cpp
  servers list the GGUF path).

A loopback server that does not answer is named by the `model=` name alone (with a warning): keys
stay stable within the run, and its answers are cached under that name.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from evalstress.core.redact import read_key, register_key_variable, server_excerpt
from evalstress.core.userfile import parse_json

_MODELS_TIMEOUT = 10.0
#: (base_url, model) of the servers whose fallback name this process has said already
_told: set[tuple[str, str]] = set()
#: The field of a `/v1/models` entry that holds the sha256 of the model's file
SHA256_FIELD = "file_sha256"
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ServedModel(NamedTuple):
    """A model a server lists: its id and, when the server tells it, its file's sha256 (as
    listed: checked where it is used)."""

    id: str
    sha256: str | None = None


def is_loopback(url: str) -> bool:
    """True for http(s) URLs on this machine: localhost, 127.0.0.0/8, ::1 (and 0.0.0.0)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


@functools.cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes, computed once per process for each (path, size, mtime)."""
    stat = os.stat(path)
    return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def model_identity(model_id: str) -> str:
    """`file-sha256:<hex>` when the id names a file here, else `model:<id>`."""
    try:
        if model_id and Path(model_id).is_file():
            return f"file-sha256:{file_digest(model_id)}"
    except OSError:
        pass
    return f"model:{model_id}"


def served_models(base_url: str, api_key_env: str = "OPENAI_API_KEY",
                  timeout: float = _MODELS_TIMEOUT) -> list[ServedModel]:
    """The models an OpenAI-compatible server lists at `GET /models` (raises OSError)."""
    request = urllib.request.Request(base_url.rstrip("/") + "/models")
    register_key_variable(api_key_env)
    key = read_key(api_key_env)  # ValueError for a key no header can carry
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        data = parse_json(answer.read(), f"{base_url}/models")  # too deep: a ValueError
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise OSError(f"{base_url}/models did not list models")
    return [ServedModel(str(item["id"]), str(item.get(SHA256_FIELD) or "") or None)
            for item in items if isinstance(item, dict) and "id" in item]


def tell_once(base_url: str, model: str, line: str) -> None:
    """Say `line` on stderr as one warning line, once per server and model in a process: a
    card builds its judge once per method, and Python's warning text (the file and source line
    of the call) tells a user nothing."""
    if (base_url, model) in _told:
        return
    _told.add((base_url, model))
    sys.stderr.write(f"warning: {line}\n")
    sys.stderr.flush()


def loopback_identity(base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY") -> str:
    """A loopback server's name in cache keys: the model it serves, never its host or port."""
    try:
        listed = served_models(base_url, api_key_env)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        tell_once(base_url, model, f"could not ask {base_url} which model it serves "
                  f"({server_excerpt(str(exc))}); its answers are cached under the model name "
                  f"'{model}' alone")
        return f"loopback:name:{model}"
    named = [entry for entry in listed if entry.id == model]
    served = named[0] if named else listed[0] if len(listed) == 1 else ServedModel(model)
    if served.sha256 is not None and _SHA256.fullmatch(served.sha256):
        return f"loopback:file-sha256:{served.sha256}"
    return f"loopback:{model_identity(served.id)}"


def group_identity(base_urls: Sequence[str], model: str,
                   api_key_env: str = "OPENAI_API_KEY") -> str:
    """The name of a group of endpoints serving one model: sorted, duplicates merged."""
    names = {loopback_identity(url, model, api_key_env) if is_loopback(url) else url.rstrip("/")
             for url in base_urls}
    return ",".join(sorted(names))
