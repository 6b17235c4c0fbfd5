"""What the hostile suites share: the servers a test started, stopped whatever happens."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..transports.http_util import HttpServer


@pytest.fixture
def stopped() -> Iterator[list[HttpServer]]:
    """Servers to stop at the end of the test, whatever happens."""
    servers: list[HttpServer] = []
    yield servers
    for server in servers:
        server.stop()
