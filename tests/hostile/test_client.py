"""The client against hostile servers (docs/security.md, "stdio servers and the client" and
"The OAuth client"): redirects to another origin, a server that floods it and never reads, a
server that leaves a double-forked grandchild, URI template values with NUL, and where the
authorization prompt goes. Real processes on loopback, each bounded in time."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

MCPLINE = str(Path(sys.executable).with_name("mcpline"))
SECRET = "sekrit-4f1c9"


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Records every request it gets (the headers and the body) and answers 404."""

    received: list[bytes]

    def _any(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(size) if size else b""
        self.received.append(bytes(self.requestline, "latin-1") + bytes(self.headers) + body)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _any

    def log_message(self, *args: object) -> None:
        pass


class _Redirector(http.server.BaseHTTPRequestHandler):
    """Answers everything with a redirect (``status``) to ``target``, reading nothing."""

    status = 307
    target = ""

    def _any(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        if size:
            self.rfile.read(size)
        self.send_response(self.status)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _any

    def log_message(self, *args: object) -> None:
        pass


def _serve(handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.HTTPServer:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return srv


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[bytes]]]:
    received: list[bytes] = []
    handler = type("Recorder", (_Recorder,), {"received": received})
    srv = _serve(handler)
    yield f"http://127.0.0.1:{srv.server_address[1]}/mcp", received
    srv.shutdown()
    srv.server_close()


def _redirector(target: str, status: int) -> http.server.HTTPServer:
    return _serve(type("Redirector", (_Redirector,), {"status": status, "target": target}))


def _cli(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MCPLINE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


# --- M9: redirects to another origin -------------------------------------------------------


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_to_another_port_gets_neither_headers_nor_body(
    status: int, recorder: tuple[str, list[bytes]]
) -> None:
    target, received = recorder
    redirector = _redirector(target, status)
    try:
        port = redirector.server_address[1]
        proc = _cli(
            "call",
            "add",
            "--args",
            f'{{"a": 1, "b": 2, "note": "{SECRET}-body"}}',
            "--header",
            f"X-Api-Key: {SECRET}",
            "--server",
            f"http://127.0.0.1:{port}/mcp",
            "--timeout",
            "20",
        )
    finally:
        redirector.shutdown()
        redirector.server_close()
    assert proc.returncode != 0
    assert "another origin" in proc.stderr and target.rsplit("/", 1)[0] in proc.stderr
    assert received == [], "the other origin was contacted"
    assert SECRET not in proc.stdout + proc.stderr


def test_when_allowed_a_cross_origin_hop_carries_no_user_header(
    recorder: tuple[str, list[bytes]],
) -> None:
    target, received = recorder
    redirector = _redirector(target, 303)
    try:
        port = redirector.server_address[1]
        proc = _cli(
            "call",
            "add",
            "--args",
            f'{{"note": "{SECRET}-body"}}',
            "--header",
            f"X-Api-Key: {SECRET}",
            "--server",
            f"http://127.0.0.1:{port}/mcp",
            "--follow-cross-origin-redirects",
            "--era",
            "modern",
            "--timeout",
            "20",
        )
    finally:
        redirector.shutdown()
        redirector.server_close()
    assert proc.returncode != 0  # the recorder answers 404
    assert received, "the allowed redirect was not followed"
    assert all(r.startswith(b"GET ") and SECRET.encode() not in r for r in received), received


def test_the_cross_origin_flag_is_for_http_servers_only() -> None:
    proc = _cli("call", "add", "--follow-cross-origin-redirects", "--", sys.executable, "-V")
    assert proc.returncode == 2
    assert "--follow-cross-origin-redirects needs an http(s) server" in proc.stderr


# --- M10: a server that floods the client and never reads ------------------------------------

FLOOD_SERVER = r"""
import json, os, sys, time
out = sys.stdout.buffer
def send(msg):
    out.write(json.dumps(msg).encode() + b"\n"); out.flush()
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif "id" in msg and "method" in msg:
        break  # the client's request: from now on nothing more is read
batch = b"".join(
    b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n for n in range(1000))
started, n = time.monotonic(), 0
try:
    while time.monotonic() - started < 60:
        out.write(batch.replace(b'"id":', b'"id":%d' % n))
        n += 1
except (BrokenPipeError, OSError):
    pass
"""


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@pytest.mark.posix_only(reason="RSS from /proc")
def test_a_server_that_floods_and_never_reads_fails_the_client_with_bounded_memory(
    tmp_path: Path,
) -> None:
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc for the RSS")
    script = tmp_path / "flood.py"
    script.write_text(FLOOD_SERVER)
    proc = subprocess.Popen(
        [MCPLINE, "call", "add", "--era", "legacy", "--timeout", "120", "--"]
        + [sys.executable, str(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        peak = max(peak, _rss(proc.pid))
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode not in (0, None), "the client was still running after 30 s"
    assert "max_outbound_bytes=16777216" in err and "has not read" in err, err[-2000:]
    assert peak < 200 * 2**20, f"peak RSS {peak / 2**20:.0f} MiB"


# --- L: control characters in URI template values -----------------------------------------

TEMPLATE_SERVER = """
import sys
from mcpline import Server
server = Server("files")
SEEN = sys.argv[1]

@server.resource("file:///{name}", mime_type="text/plain")
def read(name: str) -> str:
    with open(SEEN, "a") as f:
        f.write(repr(name) + "\\n")
    return "content of " + name

if __name__ == "__main__":
    server.run()
"""


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_nul_and_control_characters_never_reach_a_template_variable(
    era: str, tmp_path: Path
) -> None:
    import asyncio

    from mcpline.client import Client, ServerError

    script = tmp_path / "files.py"
    script.write_text(TEMPLATE_SERVER)
    seen = tmp_path / "seen"

    async def main() -> list[int]:
        codes = []
        async with Client.stdio(sys.executable, [str(script), str(seen)], era=era) as c:
            ok = await c.read_resource("file:///notes")
            assert ok["contents"][0]["text"] == "content of notes"
            for uri in ("file:///a%00b", "file:///a%0Ab", "file:///%1B%5B2J", "file:///x%7F"):
                with pytest.raises(ServerError) as err:
                    await c.read_resource(uri)
                assert "not found" in str(err.value).lower()
                codes.append(err.value.code)
        return codes

    codes = asyncio.run(asyncio.wait_for(main(), 30))
    assert set(codes) == {-32602 if era == "modern" else -32002}
    assert seen.read_text() == "'notes'\n"  # the handler saw the clean URI only


# --- L: the authorization prompt ------------------------------------------------------------

PROMPT = """
import asyncio
from mcpline.client.oauth import browser_redirect, loopback_redirect_uri
from mcpline.errors import AuthError
try:
    asyncio.run(browser_redirect("https://as.example/authorize?x=1", loopback_redirect_uri(),
                                 timeout=0.5))
except AuthError as exc:
    print("mcpline:", exc, file=__import__("sys").stderr)
"""


def test_the_authorization_prompt_goes_to_stderr_never_stdout() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROMPT],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "BROWSER": "true"},  # a "browser" that opens nothing
    )
    assert proc.stdout == ""
    assert "Open this URL to authorize: https://as.example/authorize?x=1" in proc.stderr
    assert "no authorization within" in proc.stderr


# --- L: a double-forked grandchild of a stdio server --------------------------------------

DAEMONIZING_SERVER = """
import os, sys, time
from mcpline import Server

PIDFILE = sys.argv[1]
if os.fork() == 0:  # the classic daemon: fork, setsid, fork again, the middle one exits
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        with open(PIDFILE + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(PIDFILE + ".tmp", PIDFILE)
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.wait()

server = Server("daemonizing")

@server.tool(description="Answers pong.")
def ping() -> str:
    return "pong"

if __name__ == "__main__":
    server.run()
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.posix_only(reason="fork and setsid")
def test_a_double_forked_grandchild_is_ended_with_the_server(tmp_path: Path) -> None:
    import asyncio

    from mcpline.client import Client

    if not os.path.isdir("/proc/self"):
        pytest.skip("finding a re-parented descendant needs /proc (or psutil)")
    script = tmp_path / "daemonizing.py"
    script.write_text(DAEMONIZING_SERVER)
    pidfile = tmp_path / "grandchild.pid"

    async def main() -> int:
        async with Client.stdio(
            sys.executable, [str(script), str(pidfile)], close_grace=1.0, term_grace=1.0
        ) as c:
            assert (await c.call_tool("ping", {}))["content"][0]["text"] == "pong"
            for _ in range(200):
                if pidfile.exists():
                    break
                await asyncio.sleep(0.05)
            pid = int(pidfile.read_text())
            assert _alive(pid)
            with open(f"/proc/{pid}/stat") as f:  # re-parented: not below the server
                assert int(f.read().rsplit(")", 1)[1].split()[1]) != c.pid
        return pid

    pid = asyncio.run(asyncio.wait_for(main(), 30))
    try:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the grandchild outlived the client's shutdown"
    finally:
        if _alive(pid):
            os.kill(pid, 9)
