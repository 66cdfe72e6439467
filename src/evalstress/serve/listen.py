"""The listening socket of `evalstress serve`, opened before anything is announced.

The socket is bound here rather than by uvicorn so that a port in use, a missing permission or an
unknown host stops the command with one line before the model loads and before the "Serving ..."
line (uvicorn would report it after startup and exit with its own code). Whether the address
stays on this machine is decided on the resolved address, not on the spelling of the host: a
name that resolves to 127.0.1.1 is loopback, `0.0.0.0` and `::` are every interface.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

BACKLOG = 2048  # uvicorn's default


class ListenError(Exception):
    """The address cannot be listened on; the message is one line naming HOST:PORT."""


@dataclass(frozen=True)
class ListenAddress:
    """A host as resolved for listening: the address family and the socket address to bind."""

    host: str
    port: int
    family: int
    sockaddr: tuple[Any, ...]

    @property
    def ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        address = ipaddress.ip_address(str(self.sockaddr[0]).split("%", 1)[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            return address.ipv4_mapped
        return address

    @property
    def loopback(self) -> bool:
        """True when only this machine can connect: 127.0.0.0/8 or ::1."""
        return self.ip.is_loopback

    @property
    def every_interface(self) -> bool:
        """True for 0.0.0.0 and ::, which accept connections on every network interface."""
        return self.ip.is_unspecified

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _reason(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    known = {errno.EADDRINUSE: "address in use", errno.EACCES: "permission denied",
             errno.EADDRNOTAVAIL: "not an address of this machine"}
    if exc.errno in known:
        return known[exc.errno]
    return (exc.strerror or str(exc)).lower()


def resolve(host: str, port: int) -> ListenAddress:
    """The first address `host` resolves to for listening on `port` (raises ListenError)."""
    shown = ListenAddress(host, port, 0, ())
    if not 0 <= port <= 65535:
        raise ListenError(f"cannot listen on {shown}: the port must be 0-65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        reason = _reason(exc) if isinstance(exc, OSError) else "unknown host"
        raise ListenError(f"cannot listen on {shown}: {reason}") from None
    family, _, _, _, sockaddr = infos[0]
    return ListenAddress(host, port, int(family), tuple(sockaddr))


def open_listener(address: ListenAddress) -> socket.socket:
    """A socket bound to the address and listening (raises ListenError with the reason)."""
    sock = socket.socket(address.family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart after TIME_WAIT
        sock.bind(address.sockaddr)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {address}: {_reason(exc)}") from None
    sock.setblocking(False)
    return sock
