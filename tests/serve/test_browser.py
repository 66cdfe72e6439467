"""Which origins `--allow-origin` accepts, as browsers spell them, and which host names a
loopback server answers to."""

from __future__ import annotations

import re

import pytest

from evalstress.serve.browser import BrowserPolicy, OriginError, normalize_origin


@pytest.mark.parametrize(("given", "sent"), [
    ("http://localhost:3000", "http://localhost:3000"),
    ("HTTPS://App.Example.COM/", "https://app.example.com"),
    ("https://app.example.com:443", "https://app.example.com"),
    ("http://[::1]:8000", "http://[::1]:8000"),
    ("*", "*"), ("null", "null"),
])
def test_an_origin_is_compared_as_the_browser_sends_it(given: str, sent: str) -> None:
    assert normalize_origin(given) == sent


@pytest.mark.parametrize("given", ["localhost:3000", "ftp://example.com", "http://",
                                   "https://example.com/app", "http://example.com?x=1",
                                   "http://user@example.com", "http://example.com:99999", ""])
def test_a_value_that_is_not_an_origin_is_refused_naming_it(given: str) -> None:
    with pytest.raises(OriginError, match=re.escape(f"--allow-origin '{given}':")):
        normalize_origin(given)


def test_loopback_answers_to_loopback_names_and_its_own_host_only() -> None:
    policy = BrowserPolicy.build([], "my-box", loopback=True)
    for host in ("localhost", "localhost:8080", "127.0.0.1:1", "127.8.0.1", "[::1]:80",
                 "a.localhost:9", "my-box:8080", "MY-BOX", None):
        assert policy.host_allowed(host), host
    for host in ("evil.example", "evil.example:8080", "10.0.0.5", "[fe80::1]:80",
                 "localhost.evil.example", "127.0.0.1.nip.io"):
        assert not policy.host_allowed(host), host
    # a server other machines reach (behind a key) answers to any name
    assert BrowserPolicy.build([], "0.0.0.0", loopback=False).host_allowed("gpu-box:8080")
