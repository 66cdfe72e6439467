from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalstress.llm.fake_server import FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv
