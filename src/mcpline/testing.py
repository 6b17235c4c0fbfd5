"""Testing your own server with pytest, in memory (no process, no pipe).

Enable the plugin and name your server in ``conftest.py``::

    pytest_plugins = ["mcpline.testing"]

    @pytest.fixture
    def mcp_server() -> Server:
        from myproject.server import server
        return server

Then ask for ``mcp_client`` in async tests run by anyio's pytest plugin, marked
``@pytest.mark.anyio``, or by pytest-asyncio, marked ``@pytest.mark.asyncio`` (strict mode)
or unmarked (auto mode); the plugin that runs the test sets the fixture up, once
(docs/testing.md)::

    @pytest.mark.anyio
    async def test_add(mcp_client: Client) -> None:
        result = await mcp_client.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"result": 5}

``mcp_client`` is ``Client.memory(mcp_server)`` (see `mcpline.client.memory`) with short
timeouts, closed after the test. What it does not cover is the process itself: test stdout
purity and start-up with ``Client.stdio`` or ``mcpline check``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .client import Client
from .server.server import Server

TEST_TIMEOUT = 10.0
"""Seconds a request may take in a test before it fails with `mcpline.RequestTimeout`."""


@pytest.fixture
def mcp_server() -> Server:
    """The server under test: override this fixture to return yours."""
    raise pytest.UsageError(
        "mcpline.testing: define a fixture named 'mcp_server' that returns your Server"
    )


async def _connected(server: Server) -> AsyncIterator[Client]:
    async with Client.memory(server, timeout=TEST_TIMEOUT, max_timeout=TEST_TIMEOUT) as c:
        yield c


@pytest.fixture
def mcp_client(request: pytest.FixtureRequest) -> Client:
    """A client connected in memory to ``mcp_server``, closed after the test: set up once, on
    the test's own event loop, by the plugin that runs the test (pytest-asyncio for a test it
    marks ``asyncio``, in strict or auto mode; else anyio, for a test marked ``anyio``)."""
    node = request.node
    if _run_by_pytest_asyncio(node):
        driver = "asyncio"
    elif node.get_closest_marker("anyio") is not None:
        driver = "anyio"
    else:
        raise pytest.UsageError(
            f"mcpline.testing: {node.name} asks for mcp_client, which needs an async test run "
            "by pytest-asyncio (@pytest.mark.asyncio, or asyncio_mode = auto) or by anyio "
            "(@pytest.mark.anyio)"
        )
    client: Client = request.getfixturevalue(f"mcp_client_on_{driver}")
    return client


@pytest.fixture
async def mcp_client_on_anyio(mcp_server: Server) -> AsyncIterator[Client]:
    """`mcp_client` for a test that anyio's plugin runs."""
    async for client in _connected(mcp_server):
        yield client


try:
    import pytest_asyncio
except ImportError:  # pytest-asyncio is not installed: anyio runs every async test

    def _run_by_pytest_asyncio(item: pytest.Item) -> bool:
        return False

else:

    def _run_by_pytest_asyncio(item: pytest.Item) -> bool:
        return pytest_asyncio.is_async_test(item)

    @pytest_asyncio.fixture
    async def mcp_client_on_asyncio(mcp_server: Server) -> AsyncIterator[Client]:
        """`mcp_client` for a test that pytest-asyncio runs (marked ``asyncio``, or any
        async test in its auto mode)."""
        async for client in _connected(mcp_server):
            yield client


__all__ = [
    "TEST_TIMEOUT",
    "mcp_client",
    "mcp_client_on_anyio",
    "mcp_server",
]
