"""A modern listen for a resource of npm ``@modelcontextprotocol/server-everything`` (legacy
only, ``resources: {subscribe: true}``) through ``mcpline bridge --http``: the bridge honours
the subscription, subscribes upstream, and the server's update reaches the listen (issue 27,
item 9a: a boolean ``subscribe: true`` once read as "not offered")."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from ..transports.http_util import modern_headers, request_body, send
from . import everything_npm
from .util import bridge_http, connection, path_of

pytestmark = pytest.mark.timeout(180)

URI = "demo://resource/static/document/architecture.md"


def listen(url: str, holder: list[Any], acknowledged: threading.Event) -> list[dict[str, Any]]:
    """Open a listen for ``URI``; its messages up to the first resource update."""
    conn = connection(url, timeout=60)
    holder.append(conn)
    body = request_body(
        "L-1", "subscriptions/listen", {"notifications": {"resourceSubscriptions": [URI]}}
    )
    conn.request("POST", path_of(url), body=body, headers=modern_headers("subscriptions/listen"))
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    out: list[dict[str, Any]] = []
    for raw in iter(resp.readline, b""):
        line = raw.decode().strip()
        if line.startswith("data: "):
            out.append(json.loads(line[6:]))
            acknowledged.set()
            if out[-1].get("method") == "notifications/resources/updated":
                break
    return out


def toggle_updates(url: str) -> dict[str, Any]:
    conn = connection(url, timeout=60)
    try:
        params = {"name": "toggle-subscriber-updates", "arguments": {}}
        reply = send(
            conn,
            request_body(2, "tools/call", params),
            modern_headers("tools/call", "toggle-subscriber-updates"),
            path=path_of(url),
        )
        message: dict[str, Any] = reply.messages[-1]
        return message
    finally:
        conn.close()


def test_a_modern_listen_gets_updates_from_a_legacy_only_server() -> None:
    holder: list[Any] = []

    acknowledged = threading.Event()

    async def main(url: str) -> list[dict[str, Any]]:
        task = asyncio.ensure_future(asyncio.to_thread(listen, url, holder, acknowledged))
        assert await asyncio.to_thread(acknowledged.wait, 60)
        # The server then sends an update for every subscribed URI at once and every 5 s.
        result = await asyncio.to_thread(toggle_updates, url)
        assert "Started" in result["result"]["content"][0]["text"], result
        return await asyncio.wait_for(task, 60)

    with bridge_http(*everything_npm.command("stdio"), options=["--pool", "1"]) as (url, _):
        try:
            got = asyncio.run(main(url))
        finally:
            for conn in holder:
                conn.close()
    ack = got[0]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"]["resourceSubscriptions"] == [URI]
    updated = got[-1]
    assert updated["method"] == "notifications/resources/updated"
    assert updated["params"]["uri"] == URI
    assert updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L-1"
