"""The pieces of the connection guards alone (`mcpline.transports.http.connections`): the raw
refusal bytes, the limits, the one-line-per-interval accept() log; and the command-line
options of ``mcpline run --http`` for them. The guards against a real uvicorn are in
``tests/hostile/test_http_connections.py``."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import subprocess
import sys
from typing import Any

import pytest

from mcpline.transports.http import admission
from mcpline.transports.http.connections import (
    ACCEPT_ERROR,
    DEFAULT_MAX_CONNECTIONS,
    FD_RESERVE,
    AcceptErrors,
    ConnectionLimits,
    default_max_connections,
    head_too_large,
    head_too_slow,
    quiet_accept_errors,
    raw_response,
)
from mcpline.transports.http.serve import warn_if_exposed

from .http_util import MCPLINE, TEST_SERVER


def test_a_raw_refusal_is_a_whole_response_that_closes() -> None:
    refusal = admission.connection_limit(3, 2)
    assert refusal is not None
    raw = raw_response(refusal)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 503 Service Unavailable"
    fields = dict(line.split(b": ", 1) for line in lines[1:])
    assert fields[b"retry-after"] == b"1"
    assert fields[b"connection"] == b"close"
    assert fields[b"content-type"] == b"application/json"
    assert int(fields[b"content-length"]) == len(body)
    error = json.loads(body)["error"]
    assert "max_connections" in error["message"]


def test_head_refusals() -> None:
    slow, large = head_too_slow(2.5), head_too_large(65536)
    assert (slow.status, slow.close) == (408, True) and "2.5 s" in slow.message
    assert (large.status, large.close) == (431, True) and "65536" in large.message


@pytest.mark.parametrize(
    "limits",
    [
        {"max_connections": 0, "header_timeout": 1, "max_head_bytes": 1},
        {"max_connections": 1, "header_timeout": 0, "max_head_bytes": 1},
        {"max_connections": 1, "header_timeout": 1, "max_head_bytes": 0},
    ],
)
def test_limits_must_be_positive(limits: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="positive"):
        ConnectionLimits(**limits)


@pytest.mark.posix_only(reason="sets RLIMIT_NOFILE")
def test_the_default_connection_limit_stays_below_the_open_file_limit() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, hard))
        assert default_max_connections() == 200 - FD_RESERVE
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if soft == resource.RLIM_INFINITY or soft - FD_RESERVE >= DEFAULT_MAX_CONNECTIONS:
        assert default_max_connections() == DEFAULT_MAX_CONNECTIONS


def test_accept_errors_are_one_line_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    others: list[dict[str, Any]] = []
    handler = AcceptErrors(lambda loop, context: others.append(context), interval=60)
    failure = {"message": ACCEPT_ERROR, "exception": OSError(errno.EMFILE, "Too many open files")}
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.WARNING, logger="mcpline.server"):
            for _ in range(1000):
                handler(loop, failure)
            handler(loop, {"message": "something else"})
    finally:
        loop.close()
    records = [r for r in caplog.records if r.name == "mcpline.server"]
    assert len(records) == 1
    assert records[0].exc_info is None
    assert "Too many open files" in records[0].getMessage()
    assert handler.unlogged == 999  # counted for the next line
    assert others == [{"message": "something else"}]


def test_quiet_accept_errors_keeps_the_previous_handler() -> None:
    seen: list[str] = []
    loop = asyncio.new_event_loop()
    try:
        loop.set_exception_handler(lambda loop, context: seen.append(context["message"]))
        installed = quiet_accept_errors(loop)
        assert loop.get_exception_handler() is installed
        loop.call_exception_handler({"message": "other"})
    finally:
        loop.close()
    assert seen == ["other"]


def test_a_non_loopback_bind_warns_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    warn_if_exposed("127.0.0.1")
    warn_if_exposed("::1")
    assert capsys.readouterr().err == ""
    warn_if_exposed("0.0.0.0")
    warn_if_exposed("192.0.2.7")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert "every interface" in lines[0] and "192.0.2.7" in lines[1]
    assert all("docs/security.md" in line for line in lines)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MCPLINE, "run", str(TEST_SERVER), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--header-timeout", "3"], "--header-timeout: not for stdio"),
        (["--max-body-total", "100000000"], "--max-body-total: not for stdio"),
        (["--http", "127.0.0.1:0", "--header-timeout", "0"], "--header-timeout must be positive"),
        (["--http", "127.0.0.1:0", "--idle-timeout", "0"], "--idle-timeout must be positive"),
        (["--http", "127.0.0.1:0", "--max-connections", "0"], "--max-connections must be"),
        (["--http", "127.0.0.1:0", "--max-body-total", "10"], "max_body_total_bytes (10) must be"),
    ],
)
def test_bad_connection_options_are_usage_errors(args: list[str], message: str) -> None:
    done = _run(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_without_httptools_serving_is_a_one_line_error() -> None:
    script = (
        "import sys; sys.modules['httptools'] = None; from mcpline.cli import main; "
        "sys.argv = ['mcpline', *sys.argv[1:]]; sys.exit(main())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "run", str(TEST_SERVER), "--http", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "needs httptools: pip install 'mcpline[http]'" in done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stderr


class FakeTransport(asyncio.Transport):
    """What the guarded protocol reads of a socket's transport: its buffered bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.buffered = 0
        self.aborted = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.aborted

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.buffered += len(data)


def test_a_reader_that_takes_nothing_until_the_write_deadline_is_cut_off() -> None:
    import uvicorn
    from uvicorn.server import ServerState

    from mcpline.transports.http.connections import GuardedHttpToolsProtocol

    async def main() -> None:
        config = uvicorn.Config(lambda scope, receive, send: None, log_config=None)
        config.load()
        limits = ConnectionLimits(
            max_connections=10, header_timeout=60, max_head_bytes=65536, write_timeout=60
        )
        protocol = GuardedHttpToolsProtocol(config, ServerState(), {}, limits=limits)
        transport = FakeTransport()
        protocol.connection_made(transport)
        transport.buffered = 1_000_000
        protocol.pause_writing()
        assert protocol.stall is not None  # the deadline is set while the buffer is full
        transport.buffered = 900_000
        protocol.stalled()  # the reader took some: a new deadline, no abort
        assert not transport.aborted and protocol.stall is not None
        protocol.resume_writing()  # drained below the low-water mark: no deadline
        assert protocol.stall is None
        protocol.pause_writing()
        protocol.stalled()  # took nothing since the deadline was set
        assert transport.aborted
        protocol.connection_lost(None)

    asyncio.run(main())
