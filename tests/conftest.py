"""Shared fixtures: real server processes whose every stdout line is schema-checked."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import wirecheck
from .proc import EXAMPLES, ServerProcess, python_server


def pytest_sessionstart(session: pytest.Session) -> None:
    if wirecheck.schema_dir() is None and os.environ.get("CI"):
        raise pytest.UsageError(
            "the official MCP schemas are missing "
            "(shared/spec beside the repo or MCPLINE_SCHEMA_DIR)"
        )


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
