"""Notifications are never answered, known or unknown, valid or not: proved by reply order."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..proc import FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

CORE = FIXTURES / "core_server.py"

BAD_NOTIFICATIONS = [
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
    b'{"jsonrpc":"2.0","method":"notifications/unknown","params":{"x":1}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}\n',
    b'{"jsonrpc":"1.0","method":"notifications/cancelled","params":{"requestId":1}}\n',
    b'{"method":"notifications/cancelled","params":{"requestId":1}}\n',
    b'{"jsonrpc":"2.0","method":42}\n',
    b'{"jsonrpc":"2.0","method":null,"params":[]}\n',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled"}\n',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}\n',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-sent"}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":true}}\n',
    # Notification-shaped but not decodable: NaN inside, and nesting too deep.
    b'{"jsonrpc":"2.0","method":"notifications/x","params":{"a":NaN}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/x","params":'
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}\n",
    # Responses from the client are not answered either.
    b'{"jsonrpc":"2.0","id":5,"result":{}}\n',
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"x"}}\n',
]


def test_bad_notifications_get_no_reply(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(CORE)
    for raw in BAD_NOTIFICATIONS:
        p.send_raw(raw)
    p.send(p.request_msg("server/discover", id="after"))
    first = p.read()
    assert first.get("id") == "after" and "result" in first, first
    # And once more interleaved one by one, each followed by a request.
    for i, raw in enumerate(BAD_NOTIFICATIONS):
        p.send_raw(raw)
        p.send(p.request_msg("tools/call", {"name": "echo", "arguments": {"text": str(i)}}, id=i))
        reply = p.read()
        assert reply.get("id") == i, (raw[:80], reply)
        assert reply["result"]["content"][0]["text"] == str(i)
