"""The rungs of the HTTP admission ladder, as pure functions, and the body budget: alone,
then in the app called in process (declared and chunked bodies over the budget)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from mcpline import Server
from mcpline.spec import INTERNAL_ERROR, INVALID_REQUEST
from mcpline.transports.http import HttpApp, admission
from mcpline.transports.http.admission import BodyBudget, Refusal
from mcpline.transports.http.legacy import make_room
from mcpline.transports.http.security import Gatekeeper

from ..proc import MODERN, meta


def test_header_size_refuses_over_the_limit_only() -> None:
    assert admission.header_size(100, 100) is None
    refusal = admission.header_size(101, 100)
    assert refusal is not None
    assert (refusal.status, refusal.code) == (431, INVALID_REQUEST)
    assert "100 bytes" in refusal.message


LOOPBACK = ("127.0.0.1", 8000)


def test_origin_is_checked_only_when_sent() -> None:
    gate = Gatekeeper(["https://app.example"])
    assert admission.origin(gate, None, LOOPBACK) is None
    assert admission.origin(gate, "https://app.example", LOOPBACK) is None
    assert admission.origin(gate, "http://127.0.0.1:8000", LOOPBACK) is None  # its own
    refusal = admission.origin(gate, "https://evil.example" + "x" * 200, LOOPBACK)
    assert refusal is not None and refusal.status == 403
    assert len(refusal.message) < 160  # the echoed value is cut


def test_host_on_a_loopback_bind_must_be_a_loopback_name() -> None:
    gate = Gatekeeper((), ["mcp.example"])
    assert admission.host(gate, "localhost:8000", LOOPBACK) is None
    assert admission.host(gate, "mcp.example", LOOPBACK) is None
    refusal = admission.host(gate, "rebound.example", LOOPBACK)
    assert refusal is not None and refusal.status == 421
    refusal = admission.host(gate, None, LOOPBACK)
    assert refusal is not None and refusal.status == 421


def test_method_405_names_what_the_endpoint_takes() -> None:
    assert admission.method("DELETE", b"POST") is None
    refusal = admission.method("PUT", b"POST")
    assert refusal is not None and refusal.status == 405
    assert dict(refusal.headers)[b"allow"] == b"POST"
    legacy = admission.not_allowed(b"GET, POST, DELETE")
    assert "Mcp-Session-Id" in legacy.message


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("application/json", None),
        ("application/json; charset=utf-8", None),
        ("text/plain", 415),
        (None, 415),
    ],
)
def test_content_type(value: str | None, status: int | None) -> None:
    refusal = admission.content_type(value)
    assert (None if refusal is None else refusal.status) == status


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("application/json, text/event-stream", None),
        ("*/*", None),
        ("application/json", 406),
        (None, 406),
    ],
)
def test_accept(value: str | None, status: int | None) -> None:
    refusal = admission.accept(value)
    assert (None if refusal is None else refusal.status) == status


@pytest.mark.parametrize(
    ("value", "length"),
    [("12", 12), (" 7 ", 7), ("0", 0), (None, None), ("-1", None), ("1e3", None), ("٣", None)],
)
def test_declared_length(value: str | None, length: int | None) -> None:
    assert admission.declared_length(value) == length


def test_body_size_413_closes_the_connection() -> None:
    assert admission.body_size(10, 10) is None
    refusal = admission.body_size(11, 10)
    assert refusal is not None and refusal.status == 413 and refusal.close
    assert (b"connection", b"close") in refusal.response_headers()


def test_over_budget_is_a_503_with_retry_after_that_closes() -> None:
    assert admission.over_budget(60, 40, 100) is None
    refusal = admission.over_budget(61, 40, 100)
    assert refusal is not None
    assert (refusal.status, refusal.code) == (503, INTERNAL_ERROR)
    headers = dict(refusal.response_headers())
    assert headers[b"retry-after"] == str(admission.RETRY_AFTER_SECONDS).encode()
    assert headers[b"connection"] == b"close"
    assert "max_body_total_bytes" in refusal.message


def test_connection_limit_counts_the_new_connection() -> None:
    assert admission.connection_limit(8, 8) is None
    refusal = admission.connection_limit(9, 8)
    assert refusal is not None and refusal.status == 503 and refusal.close
    assert "max_connections" in refusal.message


def test_holds_grow_until_the_budget_and_release_everything() -> None:
    budget = BodyBudget(100)
    first, second = budget.hold(), budget.hold()
    assert first.grow(60) is None
    assert first.grow(30) is None  # never shrinks
    assert budget.held == 60
    refused = second.grow(41)
    assert isinstance(refused, Refusal) and refused.status == 503
    assert (second.size, budget.held) == (0, 60)  # a refusal holds nothing
    assert second.grow(40) is None
    assert budget.held == 100
    first.release()
    first.release()  # again is harmless
    assert budget.held == 40
    assert second.grow(100) is None  # grows by the difference only
    second.release()
    assert budget.held == 0


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_body_total_bytes"):
        BodyBudget(0)


# --- the budget in the app, called in process ---------------------------------------------


def _app(**options: Any) -> HttpApp:
    server = Server("budget")

    @server.tool
    def echo(text: str) -> str:
        """Return ``text``."""
        return text

    return server.http_app(**options)


def _call(text: str) -> bytes:
    params = {"name": "echo", "arguments": {"text": text}, "_meta": meta()}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return json.dumps(body).encode()


class Upload:
    """One POST whose body the test hands over chunk by chunk."""

    def __init__(self, app: HttpApp, length: int | None = None) -> None:
        self.messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.read = 0
        """Chunks the app has taken."""
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = b""
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "host": "127.0.0.1:8000",
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        if length is not None:
            headers["content-length"] = str(length)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "path": "/mcp",
            "root_path": "",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5555),
        }
        self.task = asyncio.ensure_future(app(scope, self.receive, self.send))

    async def receive(self) -> dict[str, Any]:
        message = await self.messages.get()
        self.read += 1
        return message

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = dict(message.get("headers", []))
        else:
            self.body += message.get("body", b"")

    async def give(self, chunk: bytes, more: bool = True) -> None:
        await self.put({"type": "http.request", "body": chunk, "more_body": more})

    async def leave(self) -> None:
        await self.put({"type": "http.disconnect"})

    async def put(self, message: dict[str, Any]) -> None:
        await self.messages.put(message)
        for _ in range(20):
            await asyncio.sleep(0)


def test_a_declared_length_over_the_budget_is_refused_before_reading() -> None:
    async def go() -> None:
        body = _call("a" * 700)
        app = _app(max_body_bytes=len(body), max_body_total_bytes=len(body) * 3 // 2)
        first = Upload(app, len(body))
        await asyncio.sleep(0.01)
        assert app.bodies.held == len(body)  # held from Content-Length, before any byte
        second = Upload(app, len(body))
        await asyncio.wait_for(second.task, 5)
        assert second.status == 503 and second.read == 0
        assert second.headers[b"retry-after"] == b"1"
        assert second.headers[b"connection"] == b"close"
        assert json.loads(second.body)["error"]["code"] == INTERNAL_ERROR
        await first.give(body, more=False)
        await asyncio.wait_for(first.task, 5)
        assert first.status == 200
        assert app.bodies.held == 0
        await app.shutdown()

    asyncio.run(go())


def test_a_chunked_body_is_refused_once_it_would_pass_the_budget() -> None:
    async def go() -> None:
        body = _call("b" * 700)
        size = len(body)
        app = _app(max_body_bytes=size, max_body_total_bytes=size * 3 // 2)
        first, second = Upload(app), Upload(app)
        await first.give(body[: size - 100])
        assert app.bodies.held == size - 100
        await second.give(body[:300])
        assert app.bodies.held == size + 200
        await second.give(body[300 : size - 100])  # over the budget: refused while streaming
        await asyncio.wait_for(second.task, 5)
        assert second.status == 503 and second.headers[b"connection"] == b"close"
        assert app.bodies.held == size - 100  # the refused body holds nothing any more
        await first.give(body[size - 100 :], more=False)
        await asyncio.wait_for(first.task, 5)
        assert first.status == 200
        assert app.bodies.held == 0
        await app.shutdown()

    asyncio.run(go())


def test_a_body_that_leaves_releases_what_it_held() -> None:
    async def go() -> None:
        app = _app(max_body_bytes=1000)
        upload = Upload(app, 900)
        await upload.give(b"{" * 300)
        assert app.bodies.held == 900
        await upload.leave()
        await asyncio.wait_for(upload.task, 5)
        assert upload.status == 0  # nobody to answer
        assert app.bodies.held == 0
        await app.shutdown()

    asyncio.run(go())


# --- per-client shares (issue "safe to expose", M6/M7) -------------------------------------


def test_client_key_is_the_principal_else_the_remote_host() -> None:
    assert admission.client_key("abc", ("10.0.0.1", 5000)) == "principal abc"
    assert admission.client_key(None, ("10.0.0.1", 5000)) == "address 10.0.0.1"
    assert admission.client_key(None, ["::1", 1]) == "address ::1"
    assert admission.client_key("", None) == admission.client_key(None, ()) == "address ?"


def test_shares_refuse_a_client_over_its_share_and_serve_the_others() -> None:
    shares = admission.Shares(total=5, per_client=3, listens_per_client=1)
    assert all(shares.admit("a", listen=False) is None for _ in range(3))
    refused = shares.admit("a", listen=False)
    assert refused is not None and refused.status == 429
    assert (b"retry-after", b"1") in refused.headers
    assert "max_requests_per_client" in refused.message and "3 requests" in refused.message
    assert shares.admit("b", listen=True) is None
    listen = shares.admit("b", listen=True)
    assert listen is not None and listen.status == 429
    assert "max_listens_per_client" in listen.message
    assert shares.admit("b", listen=False) is None  # a call still fits beside the listen
    full = shares.admit("c", listen=False)  # 5 in progress: the server's total
    assert full is not None and full.status == 503 and "max_requests" in full.message
    assert shares.in_progress == 5 and shares.requests == {"a": 3, "b": 2}
    shares.release("b", listen=True)
    assert shares.listens == {} and shares.admit("c", listen=False) is None
    for _ in range(3):
        shares.release("a", listen=False)
    shares.release("b", listen=False)
    shares.release("c", listen=False)
    assert shares.in_progress == 0 and shares.requests == {} and shares.listens == {}


def test_shares_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_listens_per_client"):
        admission.Shares(1, 1, 0)


@dataclass
class FakeSession:
    client: str
    last_active: float
    in_use: bool = False

    def busy(self) -> bool:
        return self.in_use


def room(sessions: list[FakeSession], client: str, now: float = 1000.0) -> object:
    return make_room(sessions, client, now, limit=4, per_client=2, evictable_after=600.0)


def test_room_is_free_below_both_limits() -> None:
    assert room([FakeSession("a", 0.0)], "a") is None
    assert room([FakeSession("a", 0.0), FakeSession("b", 990.0)], "c") is None


def test_a_client_at_its_share_ends_its_own_least_recently_used_idle_session() -> None:
    older, newer = FakeSession("a", 10.0), FakeSession("a", 20.0)
    others = [FakeSession("b", 0.0)]  # older than both, but another client's
    assert room([newer, older, *others], "a") is older
    older.in_use = True
    assert room([newer, older, *others], "a") is newer
    newer.in_use = True
    refused = room([newer, older, *others], "a")
    assert isinstance(refused, admission.Refusal) and refused.status == 429
    assert "max_sessions_per_client" in refused.message


def test_a_full_server_ends_only_a_session_idle_long_enough() -> None:
    recent = [FakeSession(c, 900.0) for c in "abcd"]  # used 100 s ago
    refused = room(recent, "e")
    assert isinstance(refused, admission.Refusal) and refused.status == 503
    assert (b"retry-after", b"1") in refused.headers and "max_sessions" in refused.message
    stale, staler = FakeSession("b", 300.0), FakeSession("c", 100.0)
    assert room([recent[0], stale, staler, recent[3]], "e") is staler
    staler.in_use = True  # busy: never ended, however old
    assert room([recent[0], stale, staler, recent[3]], "e") is stale


def test_a_rate_limit_gives_a_burst_then_its_rate_per_client() -> None:
    limit = admission.RateLimit(rate=2.0, burst=3)
    assert all(limit.take("a", 0.0) is None for _ in range(3))
    refused = limit.take("a", 0.0)
    assert refused is not None and refused.status == 429
    assert (b"retry-after", b"1") in refused.headers and "faster than 2" in refused.message
    assert limit.take("b", 0.0) is None  # another client has its own bucket
    assert limit.take("a", 0.5) is None  # one token back after 1/rate seconds
    assert limit.take("a", 0.5) is not None
    assert all(limit.take("a", 100.0) is None for _ in range(3))  # never more than the burst
    assert limit.take("a", 100.0) is not None


def test_a_rate_limit_keeps_a_bounded_number_of_clients() -> None:
    limit = admission.RateLimit(rate=1.0, burst=2, max_clients=3)
    for n in range(10):
        assert limit.take(f"c{n}", float(n)) is None
        assert len(limit.buckets) <= 3
    with pytest.raises(ValueError):
        admission.RateLimit(rate=0, burst=1)
