"""A Ray address where nothing listens is refused in one line before any work (`run`, `card`,
`atlas`: exit 2, nothing written), instead of waiting in `ray.init`; an address that answers,
`local`, or none at all goes on."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine import ray as ray_backend
from evalstress.engine.rayaddress import (
    CLIENT_PORT,
    RayAddressError,
    check_ray_address,
    host_port,
    resolve_auto,
)

runner = CliRunner(env={"COLUMNS": "1000"})


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def dead_port() -> int:
    """A port of this machine where nothing listens (bound once to find it, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def live_port() -> Iterator[int]:
    """A port where something listens for the time of the test."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


@pytest.fixture(autouse=True)
def no_ray_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No RAY_ADDRESS from the environment, Ray's temp folder empty, and `ray.init` never
    reached: a test that got that far fails at once instead of waiting on the address."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "raytmp"))

    class NoInit:
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**kwargs: Any) -> None:
            raise AssertionError(f"ray.init was reached with {kwargs}")

    monkeypatch.setattr(ray_backend, "_ray", lambda: NoInit)


def test_the_address_forms_ray_reads() -> None:
    assert host_port("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert host_port("ray://head:10002") == ("head", 10002)
    assert host_port("ray://head") == ("head", CLIENT_PORT)
    assert host_port("[::1]:6379") == ("::1", 6379)
    # forms Ray reads otherwise (or refuses quickly itself): not asked here
    assert host_port("head") is None
    assert host_port("anyscale://cluster") is None
    assert host_port("head:port") is None


def test_auto_reads_ray_address_then_the_last_ray_start(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    assert resolve_auto() is None  # neither: Ray looks for a cluster itself
    recorded = tmp_path / "raytmp" / "ray"
    recorded.mkdir(parents=True)
    (recorded / "ray_current_cluster").write_text("10.1.2.3:6379\n")
    assert resolve_auto() == "10.1.2.3:6379"
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6380")
    assert resolve_auto() == "10.9.9.9:6380"


def test_nothing_listening_is_said_with_the_option_and_the_address(dead_port: int) -> None:
    with pytest.raises(RayAddressError) as caught:
        check_ray_address(f"127.0.0.1:{dead_port}")
    assert str(caught.value).startswith(f"--ray-address 127.0.0.1:{dead_port}: nothing "
                                        f"listens at 127.0.0.1:{dead_port}")
    with pytest.raises(RayAddressError, match=f"^ray_address ray://127.0.0.1:{dead_port}: "):
        check_ray_address(f"ray://127.0.0.1:{dead_port}", "ray_address")
    with pytest.raises(RayAddressError, match=r"no host named no-such-host\.invalid"):
        check_ray_address("no-such-host.invalid:6379")


def test_the_environment_and_auto_are_checked_too(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path, dead_port: int) -> None:
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{dead_port}")
    with pytest.raises(RayAddressError, match=f"^RAY_ADDRESS=127.0.0.1:{dead_port}: "):
        check_ray_address(None)
    monkeypatch.delenv("RAY_ADDRESS")
    recorded = tmp_path / "raytmp" / "ray"
    recorded.mkdir(parents=True)
    (recorded / "ray_current_cluster").write_text(f"127.0.0.1:{dead_port}")
    with pytest.raises(RayAddressError,
                       match=rf"^--ray-address auto \(127.0.0.1:{dead_port}\): nothing listens"):
        check_ray_address("auto")


def test_an_address_that_answers_and_no_address_go_on(live_port: int) -> None:
    check_ray_address(f"127.0.0.1:{live_port}")
    check_ray_address(f"ray://127.0.0.1:{live_port}")
    check_ray_address(None)  # a Ray started on this machine for the run
    check_ray_address("local")
    check_ray_address("auto")  # no cluster recorded: Ray's own search and error


def test_joining_says_it_before_ray_init(dead_port: int) -> None:
    with pytest.raises(ray_backend.RayError, match="nothing listens"), \
            ray_backend.ray_session(f"127.0.0.1:{dead_port}"):
        pass


@pytest.mark.parametrize("command", ["run", "card", "atlas"])
def test_run_card_and_atlas_refuse_it_before_any_work(tmp_path: Path, dead_port: int,
                                                      command: str) -> None:
    out = tmp_path / "out"
    args = {"run": ["run", "--out", str(out)],
            "card": ["card", "bleu", "--budget", "small", "--out", str(out)],
            "atlas": ["atlas", "--only", "bleu", "--work", str(out), "--published",
                      str(tmp_path / "pub"), "--page", str(tmp_path / "page.md")]}[command]
    result = runner.invoke(app, [*args, "--backend", "ray", "--ray-address",
                                 f"127.0.0.1:{dead_port}"])
    assert result.exit_code == 2, result.output
    assert (f"--ray-address 127.0.0.1:{dead_port}: nothing listens at 127.0.0.1:{dead_port}"
            in one_line(result.output))
    assert not out.exists() and not (tmp_path / "pub").exists()
