"""Shared fixtures: real server processes whose every stdout line is schema-checked, and a real
redis-server (provisioned by `tests.redis_server`) for the notification bus tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .proc import EXAMPLES, ServerProcess, python_server
from .redis_server import RedisServer, running_redis


@pytest.fixture
def spawn() -> Iterator[Callable[..., ServerProcess]]:
    """Start server processes; at teardown each is stopped and its stdout must be pure and valid."""
    started: list[ServerProcess] = []

    def start(script: str | Path, *args: str, **kw: Any) -> ServerProcess:
        p = python_server(script, *args, **kw)
        started.append(p)
        return p

    yield start
    failures = []
    for p in started:
        p.stop()
        failures += p.problems
    assert not failures, "server wrote invalid protocol output:\n" + "\n".join(failures[:20])


@pytest.fixture
def quickstart(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "quickstart.py")


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of its own on a free loopback port; the test fails if none can be had."""
    with running_redis() as server:
        yield server
