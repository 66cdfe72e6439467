"""Is anything listening at the Ray address a run was given? Asked before any work.

`ray.init(address=...)` waits a long time for a cluster that is not there (it retries the
connection instead of failing), so a mistyped `--ray-address`, or a cluster that was stopped,
would leave a run hanging with nothing said. A TCP connect with a short timeout to the
address's host and port answers the question in a moment, without importing Ray.

The address is read as Ray reads it: `ray://host[:port]` (Ray Client, port 10001 by default),
`host:port` (the cluster's GCS), `auto` (the RAY_ADDRESS variable, else the cluster the last
`ray start` on this machine wrote to Ray's temp folder), `local` (a new Ray on this machine:
nothing to ask). An address of another form is left to Ray, whose own error is quick.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

#: seconds a connect may take before the address counts as one where nothing listens
CONNECT_TIMEOUT = 3.0
#: Ray Client's port when a ray:// address names none
CLIENT_PORT = 10001


class RayAddressError(ValueError):
    """Nothing answers at the Ray address: the one-line reason, naming the option and the
    address."""


def ray_temp_folder() -> Path:
    """Where `ray start` records the cluster it started (RAY_TMPDIR, else /tmp/ray)."""
    root = os.environ.get("RAY_TMPDIR") or ("/tmp" if sys.platform != "win32"
                                            else tempfile.gettempdir())
    return Path(root) / "ray"


def resolve_auto() -> str | None:
    """What `auto` means to Ray here: RAY_ADDRESS, else the address of the last cluster `ray
    start` started on this machine (None: neither; Ray then looks for one itself)."""
    named = os.environ.get("RAY_ADDRESS", "").strip()
    if named and named != "auto":
        return named
    try:
        recorded = (ray_temp_folder() / "ray_current_cluster").read_text().strip()
    except OSError:
        return None
    return recorded or None


def host_port(address: str) -> tuple[str, int] | None:
    """The (host, port) a Ray address connects to, None for a form Ray reads otherwise."""
    rest = address
    default: int | None = None
    if "://" in address:
        scheme, _, rest = address.partition("://")
        if scheme != "ray":
            return None
        default = CLIENT_PORT
    rest = rest.split("/", 1)[0]
    if rest.startswith("["):  # [IPv6]:port
        host, _, tail = rest[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ""
    else:
        host, sep, port_text = rest.rpartition(":")
        if not sep:
            host, port_text = rest, ""
    if not host:
        return None
    if not port_text:
        return (host, default) if default is not None else None
    try:
        port = int(port_text)
    except ValueError:
        return None
    return (host, port) if 0 < port < 65536 else None


def ray_running_here() -> bool:
    """Whether this process already joined a Ray (the address is then not used)."""
    ray = sys.modules.get("ray")
    is_initialized = getattr(ray, "is_initialized", None)
    return bool(callable(is_initialized) and is_initialized())


def check_ray_address(address: str | None, option: str = "--ray-address",
                      timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise RayAddressError when nothing listens at the address the Ray backend would join:
    `address` (named by `option`), else the RAY_ADDRESS variable. No address (Ray starts on
    this machine), `local`, a Ray already joined by this process, or a form this check does
    not read: nothing to ask."""
    given = address or os.environ.get("RAY_ADDRESS", "").strip()
    if not given or given == "local" or ray_running_here():
        return
    target = resolve_auto() if given == "auto" else given
    if target is None:
        return
    where = host_port(target)
    if where is None:
        return
    shown = (f"{option} {given}" if address else f"RAY_ADDRESS={given}") + (
        f" ({target})" if target != given else "")
    host, port = where
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except socket.gaierror:
        reason = f"no host named {host}"
    except TimeoutError:
        reason = f"no answer from {host}:{port} within {timeout:g} s"
    except OSError as exc:
        reason = f"nothing listens at {host}:{port} ({exc.strerror or exc})"
    raise RayAddressError(
        f"{shown}: {reason}; start the cluster (`ray start --head`) or name the "
        "address of one that runs")
