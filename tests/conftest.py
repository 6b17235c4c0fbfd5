"""Shared fixtures: servers whose every stdout line is schema-checked, and a real redis-server
(provisioned by `tests.redis_server`) for the notification bus tests.

`spawn` starts a real server process (`tests.proc`) by default; a test, class or module
marked ``@pytest.mark.driver("memory")`` gets the in-process driver (`tests.memory`) with the
same interface and the same line checks instead (the closest marker wins, so one test of a
memory module can go back to a process with ``@pytest.mark.driver("process")``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpline import _platform

from .memory import MemoryServer
from .proc import EXAMPLES, ServerProcess, python_server
from .redis_server import RedisServer, running_redis

PLATFORM_MARKS = {
    "posix_only": not _platform.WINDOWS,
    "linux_only": _platform.NAME == "linux",
}
"""Each platform marker (registered in pyproject.toml) and whether it runs here."""


UNIT_TESTS = (
    "tests/protocol/",
    "tests/test_jsonrpc.py",
    "tests/test_wire.py",
    "tests/test_inbound.py",
    "tests/test_memory.py",
    "tests/server/test_core_unit.py",
    "tests/client/test_session_unit.py",
)
"""Test files that start no process and open no socket: with the in-memory driver's tests,
the ``fast`` tier (``make test-fast``)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the ``redis_server`` fixture needs Linux (it provisions Debian's
    redis-server); the unit tests and the tests on the in-memory driver are marked ``fast``."""
    linux = pytest.mark.linux_only(reason="provisions redis-server from Debian packages")
    for item in items:
        if "redis_server" in getattr(item, "fixturenames", ()):
            item.add_marker(linux)
        if item.nodeid.startswith(UNIT_TESTS) or (
            item.get_closest_marker("driver") is not None and driver_of(item) == "memory"
        ):
            item.add_marker(pytest.mark.fast)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests marked ``posix_only`` / ``linux_only`` elsewhere; each mark needs a reason."""
    for name, runs_here in PLATFORM_MARKS.items():
        for mark in item.iter_markers(name):
            reason = mark.kwargs.get("reason")
            if not reason:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} needs reason=...")
            if not runs_here:
                pytest.skip(f"{name} ({_platform.NAME}): {reason}")


# A plugin of its own (not a hook imported here), so that it cannot shadow or be shadowed by
# a hook of the same name in this file: the slow tests first, for the parallel workers.
pytest_plugins = ("tests.schedule",)

DRIVERS: dict[str, Callable[..., ServerProcess]] = {
    "process": python_server,
    "memory": MemoryServer,
}


def driver_of(node: pytest.Item) -> str:
    marker = node.get_closest_marker("driver")
    name = marker.args[0] if marker else "process"
    if name not in DRIVERS:
        raise pytest.UsageError(f"{node.nodeid}: unknown driver {name!r} (known: {list(DRIVERS)})")
    return str(name)


@pytest.fixture
def spawn(request: pytest.FixtureRequest) -> Iterator[Callable[..., ServerProcess]]:
    """Start servers; at teardown each is stopped and its stdout must be pure and valid."""
    make = DRIVERS[driver_of(request.node)]
    started: list[ServerProcess] = []

    def start(script: str | Path, *args: str, **kw: Any) -> ServerProcess:
        p = make(script, *args, **kw)
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
