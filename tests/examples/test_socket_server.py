"""examples/socket_server.py behind ``mcpline run --listen``: several clients share one board,
a post reaches another connection's listen, and a TCP client needs the listener's token."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpline import Client
from mcpline.client import ClientError

from ..proc import EXAMPLES

pytestmark = pytest.mark.posix_only(reason="a Unix socket listener, signals and killpg")

BOARD = "board://posts"
MCPLINE = str(Path(sys.executable).with_name("mcpline"))


class Listener:
    """``mcpline run examples/socket_server.py --listen ADDRESS``, and the address it bound."""

    def __init__(self, address: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [MCPLINE, "run", str(EXAMPLES / "socket_server.py"), "--listen", address],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        assert self.proc.stderr is not None
        self.startup = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "listening on" not in self.startup:
            line = self.proc.stderr.readline().decode()
            if not line:
                break
            self.startup += line
        if "listening on" not in self.startup:
            self.stop()
            raise AssertionError(f"the listener did not start: {self.startup}")
        self.address = self.startup.split("listening on", 1)[1].split()[0]

    def stop(self) -> tuple[int, bytes]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait(10)
        assert self.proc.stdout is not None
        return code, self.proc.stdout.read()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A private token directory for the listener and its clients."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    out = {k: v for k, v in os.environ.items() if k != "MCPLINE_TOKEN"}
    out["XDG_RUNTIME_DIR"] = str(runtime)
    return out


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # A Unix socket path has room for about 107 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="mcpl-") as d:
        yield Path(d)


@pytest.fixture
def listening() -> Iterator[list[Listener]]:
    started: list[Listener] = []
    yield started
    for s in started:
        code, stdout = s.stop()
        assert code == 0
        assert stdout == b"", "a socket server wrote to its stdout"


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 60)

    return asyncio.run(bounded())


def posts(read: dict[str, Any]) -> list[dict[str, str]]:
    (entry,) = read["contents"]
    return list(json.loads(entry["text"])["posts"])


async def two_clients_share_the_board(address: str) -> None:
    alice = Client.connect(address, client_info={"name": "alice", "version": "1"})
    bob = Client.connect(address, client_info={"name": "bob", "version": "1"})
    async with alice, bob:
        assert (await alice.discover()).server_info["name"] == "board"
        watch = alice.listen(tools=False, prompts=False, resources=False, resource_uris=[BOARD])
        async with watch:
            ack = await anext(watch)
            assert ack.params["notifications"] == {"resourceSubscriptions": [BOARD]}
            first = await bob.call_tool("post", {"text": "hello from bob"})
            assert first["structuredContent"] == {"result": 1}
            update = await anext(watch)  # bob's post, seen on alice's connection
            assert update.method == "notifications/resources/updated"
            assert update.params["uri"] == BOARD
        await alice.call_tool("post", {"text": "hi bob"})
        seen_by_bob = posts(await bob.read_resource(BOARD))
    assert seen_by_bob == [
        {"author": "bob", "text": "hello from bob"},
        {"author": "alice", "text": "hi bob"},
    ]


def test_unix_socket_clients_share_one_board(
    short_dir: Path, env: dict[str, str], listening: list[Listener]
) -> None:
    sock = short_dir / "s.sock"
    listening.append(Listener(f"unix:{sock}", env))
    assert sock.stat().st_mode & 0o777 == 0o600
    run(two_clients_share_the_board(f"unix:{sock}"))


def test_tcp_clients_find_the_token_and_others_are_refused(
    env: dict[str, str], listening: list[Listener], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = Listener("tcp:127.0.0.1:0", env)
    listening.append(server)
    assert server.address.startswith("tcp:127.0.0.1:")
    # The same user's clients read the token from the listener's file.
    monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])
    monkeypatch.delenv("MCPLINE_TOKEN", raising=False)
    run(two_clients_share_the_board(server.address))

    async def intruder() -> None:
        async with Client.connect(
            server.address, token="not-the-token-at-all", max_restarts=0
        ) as client:
            await client.call_tool("post", {"text": "spam"})

    with pytest.raises(ClientError, match="token"):
        run(intruder())

    async def count() -> int:
        async with Client.connect(server.address) as client:
            return len(posts(await client.read_resource(BOARD)))

    assert run(count()) == 2  # the intruder's post never ran
