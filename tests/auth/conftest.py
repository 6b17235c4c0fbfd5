"""The authorization server process every resource-server test module talks to (one per
module, on a free 127.0.0.1 port)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .rs_util import Authz


@pytest.fixture(scope="module")
def authz() -> Iterator[Authz]:
    server = Authz()
    yield server
    server.stop()
