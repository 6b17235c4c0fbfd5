"""The stdio framing over Unix sockets and TCP: `mcpline run FILE --listen ADDRESS`, several
clients at once, half-close, reconnect after the server comes back."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpline.client import Client, ConnectionLost

from ..proc import EXAMPLES, meta

QUICKSTART = EXAMPLES / "quickstart.py"
MCPLINE = str(Path(sys.executable).with_name("mcpline"))


class Listening:
    """A `mcpline run --listen` process and the address it bound."""

    def __init__(self, address: str) -> None:
        self.proc = subprocess.Popen(
            [MCPLINE, "run", str(QUICKSTART), "--listen", address],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 15
        line = b""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line or b"listening on" in line:
                break
        assert b"listening on" in line, f"server did not start: {line!r}"
        self.address = line.decode().split("listening on", 1)[1].strip()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(5)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # AF_UNIX paths are limited to ~107 bytes; pytest's tmp_path can be longer.
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mcpl-") as d:
        yield Path(d)


@pytest.fixture
def servers() -> Iterator[list[Listening]]:
    started: list[Listening] = []
    yield started
    for s in started:
        s.stop()
        assert s.proc.stdout is not None
        assert s.proc.stdout.read() == b"", "a socket server wrote to its stdout"


def run(coro, timeout: float = 40.0):  # type: ignore[no-untyped-def]
    async def bounded():  # type: ignore[no-untyped-def]
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


async def _use(address: str, n: int) -> tuple[str, float, bool]:
    async with Client.connect(address) as c:
        d = await c.discover()
        ok = await c.call_tool("add", {"a": n, "b": 1000})
        bad = await c.call_tool("divide", {"a": n, "b": 0})
        return d.era, ok["structuredContent"]["result"], bad["isError"]


@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_several_clients_at_once(kind: str, short_tmp: Path, servers: list[Listening]) -> None:
    address = f"unix:{short_tmp / 's.sock'}" if kind == "unix" else "tcp:127.0.0.1:0"
    srv = Listening(address)
    servers.append(srv)
    if kind == "unix":
        assert srv.address == address
        assert os.stat(short_tmp / "s.sock").st_mode & 0o077 == 0  # owner-only socket
    else:
        assert srv.address.startswith("tcp:127.0.0.1:") and not srv.address.endswith(":0")

    async def main() -> None:
        results = await asyncio.gather(*(_use(srv.address, n) for n in range(8)))
        assert results == [("modern", float(n + 1000), True) for n in range(8)]

    run(main())


def test_each_connection_has_its_own_ids_and_half_close_flushes(
    short_tmp: Path, servers: list[Listening]
) -> None:
    srv = Listening(f"unix:{short_tmp / 'h.sock'}")
    servers.append(srv)
    path = srv.address.split(":", 1)[1]
    socks = []
    for _ in range(2):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(path)
        socks.append(s)
    try:
        for i, s in enumerate(socks):
            # Same id on both connections: ids are scoped per connection.
            req = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"_meta": meta(), "name": "add", "arguments": {"a": i, "b": 1}},
            }
            s.sendall(b"garbage\n" + json.dumps(req).encode() + b"\n")
            s.shutdown(socket.SHUT_WR)  # "close stdin"
        for i, s in enumerate(socks):
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break  # the server closed after answering
                data += chunk
            lines = [json.loads(x) for x in data.splitlines()]
            assert lines[0]["error"]["code"] == -32700 and "id" not in lines[0]
            assert lines[1]["id"] == 1 and lines[1]["result"]["structuredContent"] == {
                "result": i + 1.0
            }
    finally:
        for s in socks:
            s.close()


def test_client_reconnects_after_the_server_restarts(
    short_tmp: Path, servers: list[Listening]
) -> None:
    address = f"unix:{short_tmp / 'r.sock'}"
    first = Listening(address)
    servers.append(first)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with Client.connect(address, restart_backoff=0.05, max_restarts=2) as c:
            await c.list_tools()
            first.stop()
            second = await loop.run_in_executor(None, Listening, address)
            servers.append(second)
            # The dead connection is noticed and replaced by a new one.
            tools = await c.list_tools()
            assert [t["name"] for t in tools] == ["add", "divide"]
            assert c.restarts == 1
            second.stop()
            # Nobody listens: bounded attempts, then a clear error ...
            with pytest.raises(ConnectionLost, match="gave up after 2 restarts"):
                await c.call_tool("add", {"a": 1, "b": 2})
            third = await loop.run_in_executor(None, Listening, address)
            servers.append(third)
            # ... and a later request tries again.
            r = await c.call_tool("add", {"a": 1, "b": 2})
            assert r["structuredContent"] == {"result": 3.0}

    run(main())


def test_sigterm_stops_the_server_and_removes_the_socket(short_tmp: Path) -> None:
    path = short_tmp / "t.sock"
    srv = Listening(f"unix:{path}")
    assert path.exists()
    assert srv.stop() == 0
    assert not path.exists()


def test_refuses_to_clobber_a_regular_file(short_tmp: Path) -> None:
    path = short_tmp / "file"
    path.write_text("keep me")
    proc = subprocess.run(
        [MCPLINE, "run", str(QUICKSTART), "--listen", f"unix:{path}"],
        capture_output=True,
        timeout=20,
    )
    assert proc.returncode != 0 and b"not a socket" in proc.stderr
    assert path.read_text() == "keep me"


def test_stale_socket_file_is_replaced(short_tmp: Path, servers: list[Listening]) -> None:
    path = short_tmp / "stale.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()  # a socket file nobody listens on
    srv = Listening(f"unix:{path}")
    servers.append(srv)

    async def main() -> None:
        assert (await _use(srv.address, 1))[1] == 1001.0

    run(main())


def test_connect_to_nothing_is_a_clear_error(short_tmp: Path) -> None:
    async def main() -> None:
        async with Client.connect(
            f"unix:{short_tmp / 'none.sock'}", max_restarts=1, restart_backoff=0.01
        ) as c:
            with pytest.raises(ConnectionLost, match="none.sock"):
                await c.discover()

    run(main())
