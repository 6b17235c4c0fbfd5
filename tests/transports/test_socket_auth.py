"""The sans-I/O gate of socket listeners and the spellings of loopback hosts."""

from __future__ import annotations

import json

import pytest

from mcpline.addresses import AUTH_METHOD, auth_line, canonical_host, is_loopback
from mcpline.transports.auth import MAX_FIRST_LINE, Gate, Verdict

TOKEN = "t" * 43
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
HTTP_POST = (
    b"POST / HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 41\r\n\r\n" + PING
)
TLS_HELLO = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])


@pytest.mark.parametrize("token", [None, TOKEN])
@pytest.mark.parametrize("first", [HTTP_POST, TLS_HELLO, b"  \r\n\tGET / HTTP/1.1\r\n", b"["])
def test_anything_but_json_rpc_is_refused(token: str | None, first: bytes) -> None:
    gate = Gate(token)
    assert gate.feed(first) == b""
    assert gate.verdict is Verdict.REJECT and "not JSON-RPC" in gate.reason
    assert gate.feed(PING) == b""  # nothing passes afterwards either


def _fed(gate: Gate, data: bytes) -> tuple[bytes, Verdict]:
    """What ``gate`` passes of ``data``, and its verdict afterwards."""
    return gate.feed(data), gate.verdict


def test_without_a_token_json_passes_whole_once_the_first_byte_is_seen() -> None:
    gate = Gate(None)
    assert _fed(gate, b" \r\n") == (b"", Verdict.WAIT)
    assert _fed(gate, b"{") == (b" \r\n{", Verdict.OPEN)
    assert gate.feed(PING) == PING


def test_the_right_token_opens_and_the_auth_line_is_consumed() -> None:
    gate = Gate(TOKEN)
    data = b"\r\n" + auth_line(TOKEN) + PING
    out = b"".join(gate.feed(data[i : i + 1]) for i in range(len(data)))  # byte by byte
    assert gate.verdict is Verdict.OPEN and out == PING


def _note(**fields: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n"


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (auth_line("w" * 43), "wrong token"),
        (auth_line(TOKEN[:-1]), "wrong token"),
        (PING, "not the notifications/mcpline/authenticate"),
        (_note(id=1, method=AUTH_METHOD, params={"token": TOKEN}), "not the"),
        (_note(method=AUTH_METHOD), "no token"),
        (_note(method=AUTH_METHOD, params={"token": 7}), "no token"),
        (b"{not json\n", "not JSON"),
    ],
)
def test_a_wrong_or_missing_token_is_refused(first: bytes, why: str) -> None:
    gate = Gate(TOKEN)
    assert gate.feed(first + PING) == b""
    assert gate.verdict is Verdict.REJECT and why in gate.reason


def test_the_first_line_is_bounded() -> None:
    gate = Gate(TOKEN)
    assert gate.feed(b'{"x":"' + b"a" * MAX_FIRST_LINE) == b""
    assert gate.verdict is Verdict.REJECT
    blank = Gate(None)
    blank.feed(b" " * (MAX_FIRST_LINE + 1))
    assert blank.verdict is Verdict.REJECT


@pytest.mark.parametrize(
    "host",
    [
        "127.1",
        "127.0.0.1",
        "127.9.9.9",
        "0177.0.0.1",
        "::1",
        "[::1]",
        "localhost",
        "LOCALHOST",
        "localhost.",
        "0:0:0:0:0:0:0:1",
        "::ffff:127.0.0.1",
    ],
)
def test_loopback_spellings(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "10.0.0.1", "::ffff:10.0.0.1", "example.com", "localhost.example"]
)
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_canonical_host() -> None:
    assert canonical_host("127.1") == "127.0.0.1"
    assert canonical_host("0177.0.0.1") == "127.0.0.1"
    assert canonical_host("[0:0:0:0:0:0:0:1]") == "::1"
    assert canonical_host("LocalHost.") == "localhost"
    assert canonical_host("cafe") == "cafe"
