"""Every JSON-RPC envelope rule, and id recovery, without any process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpline import jsonrpc
from mcpline.errors import JsonRpcError
from mcpline.jsonrpc import (
    MISSING,
    Invalid,
    Notification,
    Request,
    Response,
    parse,
    recover_id,
    scan_envelope,
    trailing_id,
)


def raw(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def invalid(line: bytes) -> Invalid:
    msg = parse(line)
    assert isinstance(msg, Invalid), msg
    return msg


def test_request_notification_response() -> None:
    req = parse(raw({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"a": 1}}))
    assert req == Request(1, "m", {"a": 1})
    assert parse(raw({"jsonrpc": "2.0", "id": "x", "method": "m"})) == Request("x", "m", MISSING)
    note = parse(raw({"jsonrpc": "2.0", "method": "n"}))
    assert note == Notification("n", MISSING)
    assert parse(raw({"jsonrpc": "2.0", "id": 3, "result": {}})) == Response(3, result={})
    err = parse(raw({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}}))
    assert isinstance(err, Response) and err.is_error and err.id is None


@pytest.mark.parametrize(
    ("line", "code", "rid"),
    [
        (b"{", -32700, None),
        (b"NaN", -32700, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":[Infinity]}', -32700, 1),
        (b'{"jsonrpc":"2.0","id":"q","method":"m","params":[-Infinity]}', -32700, "q"),
        (b'{"jsonrpc":"2.0","id":2,"method":"\xff"}', -32700, 2),
        (b'{"jsonrpc":"2.0","id":3,"method":"m"} trailing', -32700, 3),
        (b"[]", -32600, None),
        (raw([{"jsonrpc": "2.0", "id": 1, "method": "m"}]), -32600, None),
        (b'"s"', -32600, None),
        (b"1", -32600, None),
        (b"null", -32600, None),
        (b"false", -32600, None),
        (raw({"jsonrpc": "1.0", "id": 4, "method": "m"}), -32600, 4),
        (raw({"id": 5, "method": "m"}), -32600, 5),
        (raw({"jsonrpc": "2.0", "id": 6, "method": 1}), -32600, 6),
        (raw({"jsonrpc": "2.0", "id": 7, "method": ["m"]}), -32600, 7),
        (raw({"jsonrpc": "2.0", "id": None, "method": "m"}), -32600, None),
        (raw({"jsonrpc": "2.0", "id": True, "method": "m"}), -32600, None),
        (raw({"jsonrpc": "2.0", "id": 1.0, "method": "m"}), -32600, None),
        (raw({"jsonrpc": "2.0", "id": {}, "method": "m"}), -32600, None),
        (raw({"jsonrpc": "2.0", "id": 8}), -32600, 8),
        (raw({"jsonrpc": "2.0", "id": 1.5}), -32600, None),
        (b"{}", -32600, None),
    ],
)
def test_error_rows(line: bytes, code: int, rid: Any) -> None:
    reply = invalid(line).reply
    assert reply is not None and reply["error"]["code"] == code
    if rid is None:
        assert "id" not in reply
    else:
        assert reply["id"] == rid and type(reply["id"]) is type(rid)


@pytest.mark.parametrize(
    "line",
    [
        raw({"jsonrpc": "1.0", "method": "n"}),
        raw({"method": "n"}),
        raw({"jsonrpc": "2.0", "method": 5}),
        b'{"jsonrpc":"2.0","method":"n","params":{"a":NaN}}',
        b'{"jsonrpc":"2.0","method":"n","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
    ],
)
def test_broken_notifications_are_never_answered(line: bytes) -> None:
    assert invalid(line).reply is None


def test_bad_response_ids_are_ignored_not_answered() -> None:
    assert invalid(raw({"jsonrpc": "2.0", "id": True, "result": {}})).reply is None


def test_too_deep_request_keeps_its_id() -> None:
    deep = b"[" * 10_000 + b"]" * 10_000
    reply = invalid(b'{"jsonrpc":"2.0","id":"d","method":"m","params":' + deep + b"}").reply
    assert reply == {
        "jsonrpc": "2.0",
        "id": "d",
        "error": {"code": -32700, "message": "Parse error: JSON nested too deeply to process"},
    }
    reply = invalid(b'{"params":' + deep + b',"method":"m","jsonrpc":"2.0","id":12}').reply
    assert reply is not None and reply["id"] == 12


def test_scan_envelope() -> None:
    env = scan_envelope(b'{"a":[1,{"id":9}],"method":"m" , "id" : "x\\"y"}')
    assert (env.id, env.has_id, env.has_method, env.complete) == ('x"y', True, True, True)
    assert scan_envelope(b'{"method":"m","params":{"s":"}{]["}}').complete
    assert not scan_envelope(b'{"method":"m","params":{').complete
    assert scan_envelope(b'{"id":null}').has_id and scan_envelope(b'{"id":null}').id is None
    assert scan_envelope(b"[1]").complete is False


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":42,"method":"x","params":{"t":"aaa', 42),
        (b'{"id":"abc","method":"x","params":"', "abc"),
        (b'{"method":"x","params":{"id":5},"id":6,', 6),  # nested id ignored
        (b'{"params":{"id":5,"x":"', None),
        (b'{"id":4', None),  # the number may be cut short
        (b'{"id":"unterminated', None),
        (b'{"id":true,"method":"x"', None),
        (b'{"id":1.5,"method":"x"', None),
        (b"garbage", None),
    ],
)
def test_recover_id_from_a_prefix(data: bytes, expected: Any) -> None:
    assert recover_id(data) == expected


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (b'xxxx"},"id":7}', 7),
        (b'xxxx"} , "id" : "s\\\\" }  ', "s\\"),
        (b'xxxx"}, "id":"q\\"x"}', 'q"x'),
        (b'{"id":-3}', -3),
        (b'xx"},"params":{"id":3}}', None),  # id of a nested object
        (b'xx","xid":3}', None),
        (b'xx","id":3.5}', None),
        (b'xx","id":true}', None),
        (b'xx","id":3', None),
        (b"", None),
    ],
)
def test_trailing_id(tail: bytes, expected: Any) -> None:
    assert trailing_id(tail) == expected


def test_recover_id_uses_the_suffix_when_the_prefix_has_none() -> None:
    assert recover_id(b'{"method":"m","params":"aaaa', b'aaaa"},"id":"late"}') == "late"
    assert recover_id(b'{"id":1,"params":"a', b'a"},"id":2}') == 1


def test_builders() -> None:
    assert jsonrpc.request(1, "m") == {"jsonrpc": "2.0", "id": 1, "method": "m"}
    assert jsonrpc.notification("n", {}) == {"jsonrpc": "2.0", "method": "n", "params": {}}
    assert jsonrpc.error_response(None, -32600, "x") == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "x"},
    }
    assert jsonrpc.error_response("i", 1, "m", {"d": 1})["error"]["data"] == {"d": 1}
    assert jsonrpc.result_response(1, {}) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    err = JsonRpcError(-32602, "bad", None)
    assert err.to_error() == {"code": -32602, "message": "bad"}
