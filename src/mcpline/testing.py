"""Testing your own server with pytest, in memory (no process, no pipe).

Enable the plugin and name your server in ``conftest.py``::

    pytest_plugins = ["mcpline.testing"]

    @pytest.fixture
    def mcp_server() -> Server:
        from myproject.server import server
        return server

Then ask for ``mcp_client`` in async tests run by anyio's pytest plugin, marked
``@pytest.mark.anyio``, or by pytest-asyncio in its auto mode, unmarked (docs/testing.md
says why strict mode needs the anyio mark, and why not both)::

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


@pytest.fixture
async def mcp_client(mcp_server: Server) -> AsyncIterator[Client]:
    """A client connected in memory to ``mcp_server``, closed after the test."""
    async with Client.memory(mcp_server, timeout=TEST_TIMEOUT, max_timeout=TEST_TIMEOUT) as c:
        yield c


__all__ = ["TEST_TIMEOUT", "mcp_client", "mcp_server"]
