"""The table of server transports: every row loads, `Server.run` and ``mcpline run`` read it,
and a transport added as one row (with its module) is served by both, flags included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcpline import Server
from mcpline.cli import main
from mcpline.transports.table import FLAGS, TRANSPORTS, BaseTransport, Row, row_for

from ..proc import EXAMPLES
from .http_util import MCPLINE, HttpServer, modern_headers, post, request_body
from .test_http_legacy import LEGACY, headers, initialize, rpc

QUICKSTART = str(EXAMPLES / "quickstart.py")
EVERYTHING = str(EXAMPLES / "servers" / "everything.py")


class Recorder(BaseTransport[Server]):
    """A transport that records what it is asked to serve."""

    def __init__(self) -> None:
        self.served: list[tuple[str, str, dict[str, Any]]] = []

    def serve(self, server: Server, address: str, **options: Any) -> None:
        self.served.append((server.name, address, options))

    def options(self, given: dict[str, Any], address: str) -> dict[str, Any]:
        if given.get("max_connections") == 7:
            raise ValueError("seven is not served here")
        return {"limit": given.get("max_connections")}


RECORDER = Recorder()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    row = Row("rec", f"{__name__}:RECORDER", "rec:NAME", ("--max-connections",))
    TRANSPORTS["rec"] = row
    RECORDER.served.clear()
    try:
        yield RECORDER
    finally:
        del TRANSPORTS["rec"]


def test_every_row_loads_and_takes_known_flags() -> None:
    taken = set()
    for scheme, row in TRANSPORTS.items():
        assert row.scheme == scheme
        assert isinstance(row.load(), BaseTransport)
        assert set(row.flags) <= set(FLAGS), row
        assert row_for(row.form) is row
        taken |= set(row.flags)
    assert taken == set(FLAGS)


def test_an_address_no_row_serves_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="bad address 'ftp://x'.*http://HOST:PORT/mcp"):
        Server("t").run("ftp://x")


def test_one_row_adds_a_transport_to_server_run(recorder: Recorder) -> None:
    Server("t").run("rec:there", limit=3)
    assert recorder.served == [("t", "rec:there", {"limit": 3})]


def test_one_row_adds_a_transport_to_mcpline_run(recorder: Recorder) -> None:
    assert main(["run", QUICKSTART, "--listen", "rec:x", "--max-connections", "3"]) == 0
    [(name, address, options)] = recorder.served
    assert address == "rec:x" and options == {"limit": 3} and name


def test_the_rows_flags_and_options_decide_usage_errors(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, message in (
        (["--no-auth"], "--no-auth: not for rec (only for tcp)"),
        (["--max-connections", "0"], "--max-connections must be positive"),
        (["--max-connections", "7"], "seven is not served here"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(["run", QUICKSTART, "--listen", "rec:x", *argv])
        assert exc.value.code == 2
        assert message in capsys.readouterr().err
    assert recorder.served == []


def test_listen_takes_an_http_url_with_the_http_flags() -> None:
    argv = [MCPLINE, "run", EVERYTHING, "--listen", "http://127.0.0.1:0/rpc", "--max-sessions", "2"]
    server = HttpServer(argv)
    try:
        assert server.path == "/rpc"
        conn = server.connection()
        body: Any = request_body(1, "tools/list")
        conn.request("POST", "/rpc", body=body, headers=modern_headers("tools/list"))
        assert conn.getresponse().status == 200
        initialize(server)
        initialize(server)
        params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "3"}}
        third = post(server, rpc(0, "initialize", params), headers(version=None))
        assert third.status == 503 and b"max_sessions" in third.body  # --max-sessions 2
    finally:
        assert server.stop() == 0
    assert server.stdout == b""
