"""The stdio framing over Unix sockets and TCP: `mcpline run FILE --listen ADDRESS`, several
clients at once, half-close, reconnect after the server comes back; who may connect (the
first-bytes gate, the TCP token) and the listener's limits."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from mcpline.addresses import auth_line, token_path
from mcpline.client import Client, ConnectionLost

from ..proc import EXAMPLES, FIXTURES, meta

pytestmark = pytest.mark.posix_only(reason="Unix socket listeners, signals and killpg")

QUICKSTART = EXAMPLES / "quickstart.py"
TOUCH_SERVER = FIXTURES / "socket_server.py"
T = TypeVar("T")
MCPLINE = str(Path(sys.executable).with_name("mcpline"))


class Listening:
    """A `mcpline run --listen` process and the address it bound."""

    def __init__(
        self,
        address: str,
        *options: str,
        target: Path = QUICKSTART,
        env: dict[str, str] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            [MCPLINE, "run", str(target), "--listen", address, *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 15
        line = b""
        self.startup = b""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            self.startup += line
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

    def stderr_after_stop(self) -> str:
        self.stop()
        assert self.proc.stderr is not None
        return (self.startup + self.proc.stderr.read()).decode()


@pytest.fixture(autouse=True)
def token_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A private token directory shared by the servers and clients of one test."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("MCPLINE_TOKEN", raising=False)
    return runtime / "mcpline"


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


def run(coro: Coroutine[Any, Any, T], timeout: float = 40.0) -> T:
    async def bounded() -> T:
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
            s.sendall(b"{garbage\n" + json.dumps(req).encode() + b"\n")
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


# --- who may connect ----------------------------------------------------------------------


def _line(rid: int, method: str, params: dict[str, object] | None = None) -> bytes:
    msg = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {"_meta": meta(), **(params or {})},
    }
    return json.dumps(msg).encode() + b"\n"


def _touch(rid: int, path: Path) -> bytes:
    return _line(rid, "tools/call", {"name": "touch", "arguments": {"path": str(path)}})


def _connect(address: str, timeout: float = 20.0) -> socket.socket:
    kind, _, rest = address.partition(":")
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(rest)
        return s
    host, _, port = rest.rpartition(":")
    return socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)


def _everything_until_closed(s: socket.socket) -> bytes:
    """What the server writes before it closes (a reset counts as closed); times out if open."""
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def _reply(s: socket.socket) -> dict[str, object]:
    f = s.makefile("rb")
    while True:
        line = f.readline()
        assert line, "the server closed the connection"
        msg = json.loads(line)
        if "id" in msg:
            return msg  # type: ignore[no-any-return]


def _token(address: str) -> str:
    host, _, port = address.removeprefix("tcp:").rpartition(":")
    return token_path(host.strip("[]"), int(port)).read_text().strip()


BROWSER_POST = (
    b"POST / HTTP/1.1\r\n"
    b"Host: 127.0.0.1:8765\r\n"
    b"Origin: http://evil.example\r\n"
    b"Content-Type: text/plain;charset=UTF-8\r\n"
    b"Content-Length: %d\r\n\r\n"
)
TLS_CLIENT_HELLO = bytes.fromhex("160301020001000200fc0303") + os.urandom(32)


@pytest.mark.parametrize("kind", ["unix", "tcp", "tcp-no-auth"])
def test_http_and_tls_first_bytes_are_closed_with_nothing_run(
    kind: str, short_tmp: Path, servers: list[Listening]
) -> None:
    address = f"unix:{short_tmp / 'b.sock'}" if kind == "unix" else "tcp:127.0.0.1:0"
    options = ("--no-auth",) if kind == "tcp-no-auth" else ()
    srv = Listening(address, *options, target=TOUCH_SERVER)
    servers.append(srv)
    marker = short_tmp / "ran"
    body = _touch(1, marker)
    for first in (BROWSER_POST % len(body) + body, TLS_CLIENT_HELLO + b"\n" + body):
        with _connect(srv.address) as s:
            s.sendall(first)
            assert _everything_until_closed(s) == b""
    # The server is alive and serves a real client; the smuggled call never ran.
    proof = short_tmp / "proof"
    with _connect(srv.address) as s:
        s.sendall((auth_line(_token(srv.address)) if kind == "tcp" else b"") + _touch(2, proof))
        assert _reply(s)["id"] == 2
    assert proof.exists() and not marker.exists()
    err = srv.stderr_after_stop()
    assert err.count("not JSON-RPC") == 2, err
    if kind == "tcp-no-auth":
        assert "WARNING" in err and "no authentication" in err


def test_tcp_runs_nothing_without_the_right_token(
    short_tmp: Path, servers: list[Listening]
) -> None:
    srv = Listening("tcp:127.0.0.1:0", target=TOUCH_SERVER)
    servers.append(srv)
    token = _token(srv.address)
    assert len(token) >= 40
    file = token_path("127.0.0.1", int(srv.address.rsplit(":", 1)[1]))
    assert file.stat().st_mode & 0o777 == 0o600 and file.parent.stat().st_mode & 0o777 == 0o700
    marker = short_tmp / "ran"
    for first in (b"", auth_line("x" * len(token)), auth_line(token[:-1] + "?")):
        with _connect(srv.address) as s:
            s.sendall(first + _touch(1, marker))
            assert _everything_until_closed(s) == b""
    with _connect(srv.address) as s:
        s.sendall(auth_line(token) + _touch(2, short_tmp / "proof"))
        assert _reply(s)["id"] == 2
    assert (short_tmp / "proof").exists() and not marker.exists()
    err = srv.stderr_after_stop()
    assert err.count("wrong token") == 2 and "not the notifications/mcpline/authenticate" in err
    assert not any(token_dir_files())


def token_dir_files() -> list[Path]:
    from mcpline.addresses import token_dir

    return list(token_dir().glob("*")) if token_dir().exists() else []


def test_the_client_finds_the_token_in_the_file_the_env_and_token_file(
    short_tmp: Path, servers: list[Listening], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The default token file, found by the CLI and the library with nothing given.
    srv = Listening("tcp:127.0.0.1:0")
    servers.append(srv)
    call = [MCPLINE, "call", "add", "--args", '{"a": 1, "b": 2}', "--server", srv.address]
    proc = subprocess.run(call, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["structuredContent"] == {"result": 3.0}
    srv.stop()
    assert not token_dir_files(), "the token file outlived its server"

    # A token of our own: the server reads it from --token-file (or $MCPLINE_TOKEN) ...
    secret = tmp_path / "secret"
    secret.write_text("our-own-token-0123456789\n")
    secret.chmod(0o600)
    srv = Listening("tcp:127.0.0.1:0", "--token-file", str(secret))
    servers.append(srv)
    by_env = Listening("tcp:127.0.0.1:0", env={"MCPLINE_TOKEN": "env-token-0123456789"})
    servers.append(by_env)
    assert _token(by_env.address) == "env-token-0123456789"
    # ... and a client that cannot see the server's token directory is given it.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(elsewhere))
    call[-1] = srv.address
    proc = subprocess.run(call, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no token was found" in proc.stderr
    proc = subprocess.run(
        [*call, "--token-file", str(secret)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr

    async def main() -> None:
        async with Client.connect(srv.address, token="our-own-token-0123456789") as c:
            assert (await _use_client(c))[1] == 1001.0
        monkeypatch.setenv("MCPLINE_TOKEN", "env-token-0123456789")
        async with Client.connect(by_env.address) as c:
            assert (await _use_client(c))[1] == 1001.0

    run(main())


async def _use_client(c: Client) -> tuple[str, float, bool]:
    d = await c.discover()
    ok = await c.call_tool("add", {"a": 1, "b": 1000})
    bad = await c.call_tool("divide", {"a": 1, "b": 0})
    return d.era, ok["structuredContent"]["result"], bad["isError"]


def test_loopback_spellings_bind_and_connect(servers: list[Listening]) -> None:
    srv = Listening("tcp:127.1:0")
    servers.append(srv)
    assert srv.address.startswith("tcp:127.0.0.1:")
    port = srv.address.rsplit(":", 1)[1]

    async def main() -> None:
        for address in (f"tcp:127.1:{port}", f"tcp:localhost:{port}", srv.address):
            async with Client.connect(address, max_restarts=0) as c:
                assert (await _use_client(c))[1] == 1001.0

    run(main())
    assert "not loopback" not in srv.stderr_after_stop()


# --- limits -------------------------------------------------------------------------------


def test_connection_limit(short_tmp: Path, servers: list[Listening]) -> None:
    srv = Listening(f"unix:{short_tmp / 'l.sock'}", "--max-connections", "2")
    servers.append(srv)
    first, second = _connect(srv.address), _connect(srv.address)
    for i, s in enumerate((first, second)):
        s.sendall(_line(i, "tools/list"))
        assert _reply(s)["id"] == i
    with _connect(srv.address) as third:
        assert _everything_until_closed(third) == b""
        third.close()
    first.close()
    deadline = time.monotonic() + 20
    while True:  # the server notices the closed connection, then has a free slot again
        with _connect(srv.address) as s:
            try:
                s.sendall(_line(9, "tools/list"))
                assert _reply(s)["id"] == 9
                break
            except (AssertionError, ConnectionError):
                assert time.monotonic() < deadline, "no slot came free"
                time.sleep(0.2)
    second.close()
    assert "refused a connection" in srv.stderr_after_stop()


def test_connections_at_the_gate_have_a_deadline_and_an_allowance(
    short_tmp: Path, servers: list[Listening]
) -> None:
    srv = Listening(f"unix:{short_tmp / 'g.sock'}", "--auth-timeout", "1", "--max-pending", "2")
    servers.append(srv)
    first = _connect(srv.address)
    second = _connect(srv.address)
    served = _connect(srv.address)
    try:
        served.sendall(_line(1, "tools/list"))  # past the gate: no longer counted there
        assert _reply(served)["id"] == 1
        third = _connect(srv.address)  # the allowance (2) is full: the oldest makes room
        assert _everything_until_closed(first) == b""
        started = time.monotonic()
        assert _everything_until_closed(second) == b""  # its first line is overdue
        assert _everything_until_closed(third) == b""
        assert time.monotonic() - started < 15
        served.sendall(_line(2, "tools/list"))
        assert _reply(served)["id"] == 2
    finally:
        for s in (first, second, served):
            s.close()
    err = srv.stderr_after_stop()
    assert "closed the oldest connection still at the gate" in err
    assert "no JSON-RPC within 1 s" in err


@pytest.mark.parametrize(("option", "value"), [("--max-pending", "0"), ("--auth-timeout", "0")])
def test_gate_limits_must_be_positive(option: str, value: str, short_tmp: Path) -> None:
    error = _one_line_error(
        [MCPLINE, "run", str(QUICKSTART), "--listen", f"unix:{short_tmp / 'p.sock'}", option, value]
    )
    assert "must be" in error


def test_idle_connections_are_closed_but_not_a_pending_listen(
    short_tmp: Path, servers: list[Listening]
) -> None:
    srv = Listening(f"unix:{short_tmp / 'i.sock'}", "--idle-timeout", "1")
    servers.append(srv)
    silent = _connect(srv.address)
    answered = _connect(srv.address)
    listening = _connect(srv.address)
    try:
        answered.sendall(_line(1, "tools/list"))
        assert _reply(answered)["id"] == 1
        listening.sendall(
            _line(2, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        )
        ack = json.loads(listening.makefile("rb").readline())
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        started = time.monotonic()
        assert _everything_until_closed(silent) == b""
        assert _everything_until_closed(answered) == b""
        time.sleep(max(0.0, 3.0 - (time.monotonic() - started)))
        # Three idle timeouts later the connection with a listen open still serves.
        listening.sendall(_line(3, "tools/list"))
        assert _reply(listening)["id"] == 3
    finally:
        for s in (silent, answered, listening):
            s.close()


@pytest.mark.parametrize(
    ("options", "size"), [((), 5 * 1024 * 1024), (("--max-line-bytes", "2000"), 3000)]
)
def test_oversized_lines_get_the_socket_limit(
    options: tuple[str, ...], size: int, short_tmp: Path, servers: list[Listening]
) -> None:
    srv = Listening(f"unix:{short_tmp / 'o.sock'}", *options)
    servers.append(srv)
    limit = int(options[1]) if options else 4 * 1024 * 1024
    with _connect(srv.address) as s:
        s.sendall(_line(7, "tools/list", {"pad": "x" * size}) + _line(8, "tools/list"))
        f = s.makefile("rb")
        error = json.loads(f.readline())
        assert error["id"] == 7 and error["error"]["code"] == -32700
        assert f"{limit}-byte line limit" in error["error"]["message"]
        assert json.loads(f.readline())["result"]["tools"][0]["name"] == "add"


# --- bad paths ----------------------------------------------------------------------------


def _one_line_error(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, (proc.returncode, proc.stderr)
    assert lines[0].startswith("mcpline"), lines[0]
    return lines[0]


def test_bad_socket_paths_are_one_line_errors(short_tmp: Path) -> None:
    dangling = short_tmp / "dangling.sock"
    dangling.symlink_to(short_tmp / "missing")
    listen = [MCPLINE, "run", str(QUICKSTART), "--listen"]
    assert "symbolic link" in _one_line_error([*listen, f"unix:{dangling}"])
    assert dangling.is_symlink() and not (short_tmp / "missing").exists()
    missing_dir = short_tmp / "no" / "such" / "dir.sock"
    assert "No such file or directory" in _one_line_error([*listen, f"unix:{missing_dir}"])
    if os.geteuid() != 0:  # root may create sockets anywhere
        locked = short_tmp / "locked"
        locked.mkdir(mode=0o500)
        assert "Permission denied" in _one_line_error([*listen, f"unix:{locked / 's.sock'}"])
    assert "--max-connections: not for stdio (only for http, tcp, unix)" in _one_line_error(
        [*listen, "stdio", "--max-connections", "3"]
    )
    assert "not for unix (only for tcp)" in _one_line_error(
        [*listen, f"unix:{short_tmp / 'x'}", "--no-auth"]
    )
    # The client, too, says in one line that nobody listens there.
    assert "dangling.sock" in _one_line_error(
        [MCPLINE, "tools", "--server", f"unix:{dangling}", "--timeout", "5"]
    )
