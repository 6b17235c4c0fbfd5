"""The ``mcp_client`` fixture of `mcpline.testing` under each way users run async tests:
pytest-asyncio in its default strict mode (``@pytest.mark.asyncio``) and in auto mode
(unmarked), anyio's plugin (``@pytest.mark.anyio``) with and without pytest-asyncio
installed. Each suite below runs in a pytest of its own, and the server counts its
connections: each test connects exactly once (no plugin runs the fixture twice)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = '''
import os
from contextlib import asynccontextmanager

import pytest
from mcpline import Server

pytest_plugins = ["mcpline.testing"]


@asynccontextmanager
async def counted(server):
    with open(os.environ["CONNECTIONS"], "a") as f:
        f.write("1")
    yield


@pytest.fixture
def mcp_server() -> Server:
    server = Server("t", lifespan=counted)

    @server.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return server
'''

BODY = """
    result = await mcp_client.call_tool("add", {"a": 2, "b": 3})
    assert result["structuredContent"] == {"result": 5}
"""

SUITES = {
    "asyncio-strict": ("@pytest.mark.asyncio", ["-o", "asyncio_mode=strict"]),
    "asyncio-auto": ("", ["-o", "asyncio_mode=auto"]),
    "anyio-beside-asyncio-strict": ("@pytest.mark.anyio", ["-o", "asyncio_mode=strict"]),
    "anyio-alone": ("@pytest.mark.anyio", ["-p", "no:asyncio"]),
}


@pytest.mark.parametrize("suite", list(SUITES))
def test_mcp_client_connects_once_per_test(tmp_path: Path, suite: str) -> None:
    mark, options = SUITES[suite]
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    tests = "\n\n".join(f"{mark}\nasync def test_{i}(mcp_client):{BODY}" for i in range(3))
    (tmp_path / "test_it.py").write_text(f"import pytest\n\n{tests}\n", encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nanyio_backend = asyncio\nasyncio_default_fixture_loop_scope = function\n",
        encoding="utf-8",
    )
    connections = tmp_path / "connections"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-W",
            "error::pytest.PytestUnraisableExceptionWarning",
            *options,
        ],
        cwd=tmp_path,
        env={**__import__("os").environ, "CONNECTIONS": str(connections)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout, done.stdout
    assert connections.read_text() == "111"  # one connection per test, never two


def test_without_a_plugin_for_it_the_fixture_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_it.py").write_text("def test_sync(mcp_client):\n    pass\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:asyncio"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "needs an async test run by pytest-asyncio" in done.stdout + done.stderr
