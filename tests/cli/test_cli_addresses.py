"""Addresses and endpoints: every bad address names the forms that work, a 404 points at
``/mcp``, and an address where nothing listens fails at once, without restarts."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest

from mcpline.client import Client, ConnectionLost

from ..client.util import QUICKSTART, run
from ..transports.http_util import MCPLINE, HttpServer
from .test_cli import cli, one_line_error

ENDPOINT = "http(s)://HOST:PORT/mcp"


def test_help_names_the_http_endpoint_form() -> None:
    proc = cli("--help")
    assert proc.returncode == 0
    assert ENDPOINT in " ".join(proc.stdout.split())
    tools = cli("tools", "--help")
    assert ENDPOINT in " ".join(tools.stdout.split())


@pytest.mark.parametrize(
    "args",
    [
        ["tools", "--server", "localhost:8000"],
        ["tools", "--server", "tcp:nope"],
        ["tools", "--server", "bogus:addr"],
    ],
)
def test_bad_addresses_name_the_http_form(args: list[str]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "bad address" in line and ENDPOINT in line, line


def test_a_bad_listen_address_names_every_served_form() -> None:
    proc = cli("run", str(QUICKSTART), "--listen", "localhost:8000")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "bad address 'localhost:8000'" in line, line
    for form in ("stdio", "unix:/path/to.sock", "tcp:HOST:PORT", "http://HOST:PORT/mcp"):
        assert form in line, line


@pytest.mark.parametrize(
    "args",
    [["run", str(QUICKSTART), "--http", "nope"], ["bridge", "--http", "nope", "--", "x"]],
)
def test_bad_http_binds_say_where_they_serve(args: list[str]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    assert "served at http://HOST:PORT/mcp" in one_line_error(proc)


def test_a_404_points_at_mcp_and_says_nothing_of_initialize() -> None:
    server = HttpServer([MCPLINE, "run", str(QUICKSTART), "--http", "127.0.0.1:0"])
    try:
        root = server.url.removesuffix("/mcp")
        for url in (root, root + "/", root + "/wrong"):
            proc = cli("tools", "--server", url)
            assert proc.returncode == 2
            line = one_line_error(proc)
            assert "HTTP 404" in line and "/mcp" in line, line
            assert "initialize" not in line
        assert cli("tools", "--server", server.url).returncode == 0
    finally:
        server.stop()


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def addresses(tmp_path: Path) -> list[str]:
    port = unused_port()
    found = [f"http://127.0.0.1:{port}/mcp", f"tcp:127.0.0.1:{port}"]
    if sys.platform != "win32":
        found.append(f"unix:{tmp_path / 'nobody.sock'}")
    return found


def test_nothing_listening_fails_at_once_in_the_cli(tmp_path: Path) -> None:
    for address in addresses(tmp_path):
        proc = cli("tools", "--server", address)
        assert proc.returncode == 2
        line = one_line_error(proc)
        assert f"nothing is listening on {address}" in line, line
        assert "restarts" not in line


def test_nothing_listening_is_not_retried_by_the_client(tmp_path: Path) -> None:
    """With a first restart a minute away, only an error without restarts ends in time."""

    async def first_error(address: str) -> ConnectionLost:
        transport = (
            Client.http(address, restart_backoff=60.0)
            if address.startswith("http")
            else Client.connect(address, restart_backoff=60.0)
        )
        async with transport as c:
            with pytest.raises(ConnectionLost) as caught:
                await asyncio.wait_for(c.discover(), 30)
            return caught.value

    for address in addresses(tmp_path):
        err = run(first_error(address))
        assert not err.retriable
        assert str(err).startswith(f"nothing is listening on {address}")
