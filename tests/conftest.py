"""Shared fixtures: servers whose every stdout line is schema-checked.

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

from .memory import memory_server
from .proc import EXAMPLES, ServerProcess, python_server

# A plugin of its own (not a hook imported here), so that it cannot shadow or be shadowed by
# a hook of the same name in this file: the slow tests first, for the parallel workers.
pytest_plugins = ("tests.schedule",)

DRIVERS: dict[str, Callable[..., ServerProcess]] = {
    "process": python_server,
    "memory": memory_server,
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
