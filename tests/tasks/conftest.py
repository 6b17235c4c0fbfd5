"""Fixtures of the tasks tests: a real redis-server (provisioned by `tests.redis_server`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..redis_server import RedisServer, running_redis


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of its own on a free loopback port; the test fails if none can be had."""
    with running_redis() as server:
        yield server
