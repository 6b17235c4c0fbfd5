"""A bus and a shared nonce ledger given after construction (``server.bus``,
``server.nonce_ledger``; `mcpline.server.scale.attach.attach` for ``--bus URL``/
``$MCPLINE_BUS_URL``), and ``mcpline run FILE --bus URL`` over stdio against a real
redis-server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from mcpline import Server
from mcpline.protocol.state import MemoryNonceLedger
from mcpline.server.scale.attach import (
    BUS_ENV,
    attach,
    attach_from_env,
    check_url,
    missing,
)
from mcpline.server.scale.bus import Change
from mcpline.server.scale.redis_bus import RedisBus, RedisNonceLedger

from ..proc import FIXTURES, ServerProcess
from ..redis_server import RedisServer
from .test_bus import RecordingBus

MCPLINE = str(Path(sys.executable).parent / "mcpline")
URL = "redis://127.0.0.1:6399/0"


def test_a_bus_set_before_serving_is_as_the_constructor() -> None:
    server = Server("late")
    assert server.bus is None
    bus = RecordingBus()
    server.bus = bus
    assert server.bus is bus
    server.add_tool(lambda: "x", name="x", description="x")
    assert bus.published == [Change("list_changed", "tools")]

    async def main() -> None:
        async with server.runtime.services.running():
            assert bus.deliver is not None and bus.scope == "late"
            with pytest.raises(RuntimeError, match="while it serves"):
                server.bus = None
            with pytest.raises(RuntimeError, match="while it serves"):
                server.nonce_ledger = None
        assert bus.closed == 1

    asyncio.run(main())
    server.bus = None  # stopped: may change again
    assert server.bus is None


def test_a_nonce_ledger_set_replaces_the_default() -> None:
    server = Server("s")
    assert isinstance(server.nonce_ledger, MemoryNonceLedger)
    ledger = MemoryNonceLedger()
    server.nonce_ledger = ledger
    assert server.nonce_ledger is ledger
    server.nonce_ledger = None
    assert server.nonce_ledger is None
    assert Server("t", state_single_use=False).nonce_ledger is None


def test_attach_gives_what_is_missing_and_keeps_what_the_file_set() -> None:
    plain = Server("plain")
    assert missing(plain) == ["bus", "ledger"]
    done = attach(plain, URL)
    assert done.bus and done.ledger
    assert isinstance(plain.bus, RedisBus) and plain.bus.url == URL
    assert isinstance(plain.nonce_ledger, RedisNonceLedger) and plain.nonce_ledger.url == URL
    assert missing(plain) == []

    own = RecordingBus()
    with_bus = Server("own", bus=own)
    done = attach(with_bus, URL)
    assert not done.bus and done.ledger and with_bus.bus is own
    assert missing(with_bus) == []

    ledger = RedisNonceLedger("redis://elsewhere:6379/1")
    with_ledger = Server("ledger", state_single_use=ledger)
    assert missing(with_ledger) == ["bus"]
    done = attach(with_ledger, URL)
    assert done.bus and not done.ledger and with_ledger.nonce_ledger is ledger

    reusable = Server("reusable", state_single_use=False)  # no ledger, by choice: kept
    assert missing(reusable) == ["bus"]
    assert not attach(reusable, URL).ledger and reusable.nonce_ledger is None


def test_attach_from_env() -> None:
    server = Server("env")
    assert attach_from_env(server, {}) is None and server.bus is None
    assert attach_from_env(server, {BUS_ENV: ""}) is None and server.bus is None
    done = attach_from_env(server, {BUS_ENV: URL})
    assert done is not None and done.bus and isinstance(server.bus, RedisBus)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:6379", "expected redis://"),
        ("127.0.0.1:6379", "expected redis://"),
        ("redis://127.0.0.1:port/0", "Port could not be cast"),
        ("redis://user:hunter2@127.0.0.1:port/0", "***"),
    ],
)
def test_check_url_refuses_what_is_no_redis_url(url: str, message: str) -> None:
    with pytest.raises(ValueError, match="bad bus URL") as caught:
        check_url(url)
    assert message in str(caught.value) and "hunter2" not in str(caught.value)
    with pytest.raises(ValueError):
        attach(Server("s"), url)


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0", "rediss://h:6380/2", "unix:///tmp/redis.sock"]
)
def test_check_url_takes_redis_urls(url: str) -> None:
    assert check_url(url) == url


def test_a_bad_bus_url_is_a_one_line_usage_error() -> None:
    for args in (["--bus", "ftp://x"], ["--http", "127.0.0.1:0", "--bus", "ftp://x"]):
        proc = subprocess.run(
            [MCPLINE, "run", str(FIXTURES / "scaleout_server.py"), *args],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "bad bus URL" in proc.stderr, proc.stderr
        assert proc.stdout == ""


def tool_text(p: ServerProcess, name: str) -> str:
    reply = p.call(name, {})
    assert "result" in reply and not reply["result"].get("isError"), reply
    text: str = reply["result"]["content"][0]["text"]
    return text


def test_mcpline_run_bus_over_stdio(redis_server: RedisServer) -> None:
    p = ServerProcess(
        [MCPLINE, "run", str(FIXTURES / "scaleout_server.py"), "--bus", redis_server.url]
    )
    try:
        shared = tool_text(p, "scale_out")
        assert '"bus":"RedisBus"' in shared and '"ledger":"RedisNonceLedger"' in shared
        assert '"connected":true' in shared
    finally:
        p.stop()
    assert not p.problems, p.problems


def test_a_file_with_its_own_bus_keeps_it(redis_server: RedisServer) -> None:
    env = {"MCPLINE_TEST_REDIS_URL": redis_server.url, "MCPLINE_TEST_CHANNEL": "own"}
    argv = [MCPLINE, "run", str(FIXTURES / "bus_server.py"), "--bus", redis_server.url]
    p = ServerProcess(argv, env=env)
    try:
        assert '"connected":true' in tool_text(p, "bus_state")
    finally:
        p.stop()
    assert not p.problems, p.problems
    assert "has its own bus, which it keeps" in p.stderr
