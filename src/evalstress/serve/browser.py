"""What a web browser may do with `evalstress serve`: which pages may call it (CORS) and which
host names it answers to (DNS rebinding).

llama-cpp-python's app allows every origin with credentials, so any web page the user opens can
drive the model on 127.0.0.1 and read its answers. Here no page of another origin gets in unless
the user names its origin (`--allow-origin`): a request or preflight from any other origin gets
403 and no `access-control-allow-*` header. `allow-credentials` is never sent: the server's only
credential is a bearer key, which a page sends as an ordinary header.

A page can also reach a loopback server under its own name by pointing that name's DNS record at
127.0.0.1 (DNS rebinding); the browser then calls it same-origin. A loopback server therefore
answers only requests whose `Host` names this machine (localhost, a loopback address, or the
name it was started with).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Every origin; allowed only as a value of its own, and never with credentials.
ANY_ORIGIN = "*"
#: The methods a preflight is told the server accepts.
ALLOWED_METHODS = b"GET, POST, OPTIONS"
#: How long a browser may reuse a preflight's answer, in seconds.
PREFLIGHT_MAX_AGE = b"600"
DEFAULT_PORTS = {"http": 80, "https": 443}


class OriginError(ValueError):
    """An `--allow-origin` value that is not an origin; the message names the value."""


def normalize_origin(value: str) -> str:
    """An origin as browsers send it in the `Origin` header (`scheme://host[:port]`, lower case,
    no default port), `*`, or `null`; raises OriginError for anything else."""
    text = value.strip()
    if text in (ANY_ORIGIN, "null"):
        return text
    example = "like http://localhost:3000"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise OriginError(f"--allow-origin '{value}': not an origin ({example})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise OriginError(f"--allow-origin '{value}': an origin is http:// or https:// and a "
                          f"host ({example})")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username \
            or parts.password or text.endswith(("?", "#")):
        raise OriginError(f"--allow-origin '{value}': an origin has no path, query or user "
                          f"({example})")
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    shown_port = "" if port is None or port == DEFAULT_PORTS[scheme] else f":{port}"
    return f"{scheme}://{host}{shown_port}"


def host_name(header: str) -> str:
    """The name in a `Host` header, without its port or IPv6 brackets, in lower case."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[1:].split("]", 1)[0]
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


def is_loopback_name(name: str) -> bool:
    """True for localhost, *.localhost and loopback addresses: names no DNS record can move."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class BrowserPolicy:
    """The origins allowed to call the server, and the host names it answers to.

    `hosts` is None when any name is answered (a server other machines reach, behind a key)."""

    origins: frozenset[str] = frozenset()
    hosts: frozenset[str] | None = None

    @classmethod
    def build(cls, origins: Iterable[str], listen_host: str, loopback: bool) -> BrowserPolicy:
        """The policy for `--allow-origin` values and the address listened on (raises
        OriginError for a value that is not an origin)."""
        allowed = frozenset(normalize_origin(origin) for origin in origins)
        hosts = frozenset({host_name(listen_host)}) if loopback else None
        return cls(allowed, hosts)

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request's `Host` names this server (a request without one is not a
        browser's: browsers always send it)."""
        if self.hosts is None or host is None:
            return True
        name = host_name(host)
        return is_loopback_name(name) or name in self.hosts

    def cross_origin(self, origin: str, host: str | None) -> bool:
        """Whether a page of `origin` calls from elsewhere (not a page this server served)."""
        return host is None or origin not in (f"http://{host.strip().lower()}",
                                              f"https://{host.strip().lower()}")

    def origin_allowed(self, origin: str) -> bool:
        return ANY_ORIGIN in self.origins or origin in self.origins

    def allow_origin_header(self, origin: str) -> bytes:
        """The `access-control-allow-origin` value for an allowed origin: the origin itself when
        named, `*` when every origin is allowed."""
        return origin.encode() if origin in self.origins else ANY_ORIGIN.encode()

    def preflight_headers(self, origin: str, requested: bytes | None
                          ) -> list[tuple[bytes, bytes]]:
        """The headers that answer an allowed origin's preflight (the headers asked for are
        allowed: the key and the JSON body need `authorization` and `content-type`, and the
        OpenAI SDKs add their own)."""
        return [(b"access-control-allow-origin", self.allow_origin_header(origin)),
                (b"access-control-allow-methods", ALLOWED_METHODS),
                (b"access-control-allow-headers", requested or b"authorization, content-type"),
                (b"access-control-max-age", PREFLIGHT_MAX_AGE),
                (b"vary", b"origin")]
