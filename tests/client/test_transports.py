"""`Client(transport, **options)`: transport values, the sugar that builds them, the options
they leave to the client, and a transport of the host's own plugged into the seam."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpline.client import (
    Client,
    ClientOptions,
    ConnectionLost,
    SocketServer,
    StdioServer,
    Transport,
)
from mcpline.client.http import HttpServer
from mcpline.client.options import ClientKeywords, HttpKeywords, SocketKeywords, StdioKeywords
from mcpline.client.session import Channel, Session

from .util import QUICKSTART, Fake, run

DOCUMENTED = {
    "start",
    "aclose",
    "discover",
    "request",
    "list_all",
    "list_tools",
    "call_tool",
    "list_resources",
    "list_resource_templates",
    "read_resource",
    "list_prompts",
    "get_prompt",
    "complete",
    "listen",
    "description",
    "pid",
    "returncode",
    "restarts",
    "stdio",
    "connect",
    "options",
    "transport",
}


def test_the_client_shows_a_small_public_surface() -> None:
    names = [n for n in dir(Client(StdioServer("server"))) if not n.startswith("_")]
    assert len(names) < 30, names  # issue "real seams": under 30
    assert set(names) >= DOCUMENTED


def test_the_client_keywords_are_the_options_and_the_transports_fields() -> None:
    def names(typed: Any) -> set[str]:
        return set(typed.__optional_keys__)

    def fields(cls: Any, *given: str) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)} - set(given)

    assert names(ClientKeywords) == fields(ClientOptions)
    options = fields(ClientOptions)
    assert names(StdioKeywords) == options | fields(StdioServer, "command", "args")
    assert names(SocketKeywords) == options | fields(SocketServer, "address")
    assert names(HttpKeywords) == options | fields(HttpServer, "url", "headers", "auth")


def test_a_misspelt_keyword_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"Client\(\) got unexpected keyword arguments: timout"):
        Client(StdioServer("server"), timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="Client.stdio.* envv"):
        Client.stdio("server", envv={})  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="Client.connect.* tokn"):
        Client.connect("unix:/nowhere.sock", tokn="x")  # type: ignore[call-arg]


def test_options_are_checked_and_frozen() -> None:
    with pytest.raises(ValueError, match="era"):
        Client(StdioServer("server"), era="future")
    with pytest.raises(ValueError, match="log_level"):
        Client(StdioServer("server"), log_level="loud")
    client = Client(StdioServer("server"), timeout=5, elicitation_modes=["form", "url"])
    assert client.options.timeout == 5
    assert client.options.elicitation_modes == ("form", "url")
    with pytest.raises(dataclasses.FrozenInstanceError):
        client.options.timeout = 1  # type: ignore[misc]


def test_stdio_sugar_splits_transport_and_client_options() -> None:
    env = {"API_KEY": "secret-value"}
    client = Client.stdio("python", ["s.py"], env=env, cwd="/tmp", term_grace=0.5, timeout=7)
    t = client.transport
    assert isinstance(t, StdioServer)
    assert (t.command, t.args, t.cwd, t.term_grace) == ("python", ("s.py",), "/tmp", 0.5)
    assert dict(t.env or {}) == env and t.label == "python"
    env["API_KEY"] = "changed"
    assert dict(t.env or {}) == {"API_KEY": "secret-value"}  # a copy, read-only
    assert "secret-value" not in repr(t)
    assert client.options.timeout == 7
    with pytest.raises(TypeError, match="token"):
        Client.stdio("python", token="x" * 20)  # type: ignore[call-arg]  # a socket's option


def test_connect_sugar_splits_transport_and_client_options() -> None:
    client = Client.connect("tcp:127.0.0.1:9", token="t" * 20, close_grace=0.5, era="modern")
    t = client.transport
    assert t == SocketServer("tcp:127.0.0.1:9", token="t" * 20, close_grace=0.5)
    assert t.label == "tcp:127.0.0.1:9" and "tttt" not in repr(t)
    assert client.options.era == "modern"
    with pytest.raises(TypeError, match="cwd"):
        Client.connect("unix:/tmp/x.sock", cwd="/")  # type: ignore[call-arg]  # a process's option


def test_a_transport_value_is_immutable() -> None:
    t = StdioServer("python")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.command = "sh"  # type: ignore[misc]


class Counting:
    """A transport of the host's own: a stdio server, counting its connections."""

    def __init__(self, inner: StdioServer) -> None:
        self.inner = inner
        self.opened = 0

    @property
    def label(self) -> str:
        return f"counted {self.inner.label}"

    async def open(self, session: Session) -> Channel:
        self.opened += 1
        return await self.inner.open(session)


def test_a_transport_of_ones_own_plugs_in_and_is_opened_again_on_restart(
    tmp_path: Path,
) -> None:
    fake = Fake(tmp_path)
    transport = Counting(StdioServer(sys.executable, fake.argv, env=fake.env))
    checked: Transport = transport  # the Protocol is all a transport has to satisfy

    async def main() -> None:
        async with Client(checked, restart_backoff=0.01) as c:
            await c.list_tools()
            assert transport.opened == 1 and c.pid is not None
            with pytest.raises(ConnectionLost):
                await c.call_tool("die", {})
            assert (await c.call_tool("echo", {"ok": 1}))["content"]
            assert transport.opened == 2 and c.restarts == 1

    run(main())


def test_a_client_built_from_a_transport_value() -> None:
    async def main() -> None:
        async with Client(StdioServer(sys.executable, [str(QUICKSTART)]), timeout=10) as c:
            result = await c.call_tool("add", {"a": 2, "b": 3})
            assert result["structuredContent"] == {"result": 5.0}
        assert c.returncode == 0

    run(main())


@pytest.mark.parametrize("flags", ["modern", "legacy"])
def test_the_default_client_info_is_the_installed_version(tmp_path: Path, flags: str) -> None:
    fake = Fake(tmp_path, flags)

    async def main() -> None:
        async with Client.stdio(**fake.client_kwargs()) as c:
            await c.list_tools()

    run(main())
    first = next(m for m in fake.received() if "id" in m)
    if flags == "modern":
        info = first["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]
    else:
        first = next(m for m in fake.received() if m.get("method") == "initialize")
        info = first["params"]["clientInfo"]
    assert info == {"name": "mcpline", "version": importlib.metadata.version("mcpline")}
