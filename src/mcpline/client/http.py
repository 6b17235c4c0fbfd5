"""Streamable HTTP as a client transport: one POST per message, answers as JSON or SSE.

``Client.http(url)`` (or ``Client(HttpServer(url))``) runs the client's session engine over
HTTP. The session hands each outgoing message to `HttpChannel.send` (its
`mcpline.client.session.Channel` method); the channel POSTs it and feeds the response
body, or each SSE ``data`` payload, back through a pipeline of its own per stream
(`Session.new_inbound`), so the session's line limit bounds every event.

Both eras of the binding (the specification's 2026-07-28 page basic/transports/streamable-http
and the 2025-11-25 page basic/transports, "Streamable HTTP"):

* a request with modern ``_meta`` is sent statelessly with ``MCP-Protocol-Version``,
  ``Mcp-Method``, ``Mcp-Name`` and the tool's ``Mcp-Param-*`` headers; cancelling it closes
  its stream (no ``notifications/cancelled`` is posted);
* ``initialize`` starts a legacy session: ``Mcp-Session-Id`` and the agreed
  ``MCP-Protocol-Version`` go on every later message, the server's requests arriving on a
  stream are answered by POST, a GET stream carries unsolicited messages, a stream that
  ends before its answer is resumed by GET with ``Last-Event-ID`` after ``retry``, a 404
  ends the session (the client starts a new one) and closing sends DELETE.

httpx2 is imported when the first connection opens, so a stdio client never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urljoin, urlsplit, urlunsplit

import msgspec

from .. import jsonrpc
from ..addresses import ENDPOINT_HINT, refused
from ..errors import ConnectionLost, NothingListening, ProtocolError
from ..inbound import Inbound
from ..jsonrpc import RequestId
from ..protocol.headers import HeaderParam, name_header, param_headers
from ..protocol.meta import has_modern_meta
from ..spec import (
    CANCELLED,
    INITIALIZE,
    INITIALIZED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    LISTEN,
    PROTOCOL_VERSION_KEY,
    TOOLS_CALL,
)
from .session import Session

if TYPE_CHECKING:
    import httpx2

    from .oauth import OAuth

log = logging.getLogger("mcpline.client")

ACCEPT = "application/json, text/event-stream"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
MAX_ERROR_BODY = 64 * 1024
"""How much of an error response is read (to find a JSON-RPC error in it)."""
MAX_RESUMES = 5
"""Reconnections (GET + ``Last-Event-ID``) of one legacy response stream before giving up."""
DEFAULT_RETRY = 1.0
"""Seconds before a reconnection when the server sent no ``retry`` field."""
_NEWLINES = bytes.maketrans(b"\r\n", b"  ")
_TRANSIENT = frozenset({502, 503, 504})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
POST_COST = 8 * 1024
"""What one message posted but not yet accepted counts towards ``max_outbound_bytes`` besides
its size (the task and the request that carry it)."""


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port spelled out where it is the default."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def _origin_label(url: str) -> str:
    scheme, host, port = _origin(url)
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


class CrossOriginRedirect(ProtocolError):
    """The server redirected a request to another origin, which the client does not follow
    (it would carry the user's headers or the request's body there)."""


@dataclass(frozen=True)
class Hop:
    """The next request of a redirect: its method, URL, and whether it keeps the body and
    the user's headers (which it never does on another origin)."""

    verb: str
    url: str
    body: bool
    same_origin: bool


def next_hop(
    origin_url: str, verb: str, url: str, status: int, location: str, *, cross_origin: bool
) -> Hop:
    """Where a redirect (``status`` with ``location``, relative to ``url``) leads a ``verb``
    request first sent to ``origin_url``.

    303 (and 301/302 of anything but GET/HEAD) becomes a GET without a body; 307 and 308 keep
    the method and the body. Another origin than ``origin_url``'s is refused with
    `CrossOriginRedirect`, unless ``cross_origin`` allows it for a request without a body;
    such a hop then carries none of the user's headers.
    """
    target = urljoin(url, location)
    if status == 303 or (status in (301, 302) and verb not in ("GET", "HEAD")):
        verb, body = "GET", False
    else:
        body = verb not in ("GET", "HEAD", "DELETE")
    same = _origin(target) == _origin(origin_url)
    if not same and (not cross_origin or body):
        why = (
            "its body would go there"
            if cross_origin
            else "mcpline does not follow redirects to another origin, where your headers "
            "and the request's body would go (follow_cross_origin_redirects=True, or "
            "--follow-cross-origin-redirects, follows those without a body, your headers "
            "left out)"
        )
        raise CrossOriginRedirect(
            f"{_redacted(origin_url)} redirected a {verb} (HTTP {status}) to another origin, "
            f"{_origin_label(target)}; not followed: {why}"
        )
    return Hop(verb, target, body, same)


def _redacted(url: str) -> str:
    """``url`` without credentials, query or fragment (for labels and errors)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _content_type(response: httpx2.Response) -> str:
    """The media type of ``response`` (lower case, without parameters), or ``""``."""
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def _check_headers(headers: Mapping[str, str]) -> None:
    for name, value in headers.items():
        if not name or any(c in name for c in ":\r\n\0 ") or any(c in value for c in "\r\n\0"):
            raise ValueError(f"invalid HTTP header {name!r}")


@dataclass(frozen=True, eq=False, repr=False)
class HttpServer:
    """A server at an ``http(s)://`` MCP endpoint (the Streamable HTTP binding).

    ``headers`` go on every request; ``auth`` is an `mcpline.client.oauth.OAuth` for servers
    that want OAuth 2.1 (the repr shows neither, nor the URL's credentials or query, as they
    often hold keys). ``connect_timeout`` bounds connecting and sending a request (how long
    an answer may take is the client's ``timeout``). At most ``max_connections`` requests are
    on the wire at once (more wait their turn; listen and GET streams have connections of
    their own); at most ``max_redirects`` redirects are followed, within the URL's origin
    only: a redirect elsewhere fails the request with `CrossOriginRedirect`, unless
    ``follow_cross_origin_redirects`` allows those that re-send no body (then without
    ``headers`` or ``auth``). ``verify`` is the TLS verification (a CA bundle path, or
    False). Closing a legacy session sends DELETE, for at most ``close_grace`` seconds.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    auth: OAuth | None = field(default=None, repr=False)
    connect_timeout: float = 10.0
    max_connections: int = 32
    max_redirects: int = 5
    verify: bool | str = True
    close_grace: float = 2.0
    follow_cross_origin_redirects: bool = False

    mirrors_tool_headers: ClassVar[bool] = True
    """This binding mirrors ``x-mcp-header`` parameters, so the client drops tools whose
    annotations are invalid (streamable-http#custom-headers-from-tool-parameters)."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"not an http(s) URL: {_redacted(self.url)!r} (expected http(s)://HOST:PORT/mcp)"
            )
        _check_headers(self.headers)
        object.__setattr__(self, "headers", dict(self.headers))

    @property
    def label(self) -> str:
        return _redacted(self.url)

    def __repr__(self) -> str:
        # The URL's credentials and query, the headers and the auth state stay out.
        extra = ", auth=OAuth" if self.auth is not None else ""
        return f"HttpServer({self.label!r}{extra})"

    async def open(self, session: Session) -> HttpChannel:
        channel = HttpChannel(session, self)
        session.channel = channel
        return channel


class HttpChannel:
    """The messages of one client session over HTTP (see the module docs)."""

    def __init__(self, session: Session, server: HttpServer) -> None:
        import httpx2

        self.session = session
        self.server = server
        self.label = server.label
        self.url = server.url
        self.session_id: str | None = None
        """The legacy ``Mcp-Session-Id``, once ``initialize`` was answered with one."""
        self.agreed_version: str | None = None
        """The legacy protocol version ``initialize`` agreed on (the era's handshake sets
        it), sent as ``MCP-Protocol-Version``."""
        self.tool_headers: Mapping[str, tuple[HeaderParam, ...]] = {}
        """The ``x-mcp-header`` parameters of each listed tool, by name (the client's
        table, set when it opens the channel), mirrored into ``Mcp-Param-*`` headers."""
        self._httpx = httpx2
        self._json_headers = {
            **server.headers,
            "Content-Type": "application/json",
            "Accept": ACCEPT,
        }
        """The headers every modern request starts from."""
        self._http = self._pool(server.max_connections)
        self._long: httpx2.AsyncClient | None = None
        """Connections for streams that stay open (listen, the legacy GET stream), apart so
        that they never hold the request pool's places."""
        self._streams: dict[RequestId, asyncio.Task[None]] = {}
        self._modern: set[RequestId] = set()
        self._sends: set[asyncio.Task[None]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._get: asyncio.Task[None] | None = None
        self._closed = False
        self._posting = 0
        """Bytes of the notifications and answers posted and not yet accepted, each counted
        with `POST_COST`."""

    def _pool(self, size: int | None) -> httpx2.AsyncClient:
        import httpx2

        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(self.server.connect_timeout, read=None, pool=None),
            follow_redirects=True,  # for the OAuth metadata; MCP requests: `_follow`
            max_redirects=self.server.max_redirects,
            verify=self.server.verify,
            limits=httpx2.Limits(max_connections=size, max_keepalive_connections=size),
        )

    def _long_pool(self) -> httpx2.AsyncClient:
        if self._long is None:
            self._long = self._pool(None)
        return self._long

    # --- from the session -------------------------------------------------------------

    def send(self, msg: dict[str, Any], line: bytes) -> None:
        if self._closed:
            raise ConnectionLost(f"{self.label}: the connection is closed", retriable=False)
        method = msg.get("method")
        if method is not None and "id" in msg:
            rid = msg["id"]
            task = self._spawn(self._request(rid, method, msg.get("params"), line))
            self._streams[rid] = task
            task.add_done_callback(functools.partial(self._done, rid))
            return
        if method == CANCELLED:
            params = msg.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            stream = self._streams.get(rid) if jsonrpc.is_valid_id(rid) else None
            if stream is not None:
                stream.cancel()
            if rid in self._modern:
                return  # closing the request's stream is the modern cancellation
        cost = len(line) + POST_COST
        self._posting += cost
        send = self._spawn(self._post_message(method, line))
        self._sends.add(send)
        send.add_done_callback(functools.partial(self._posted, cost))

    def buffered(self) -> int:
        """What the notifications and answers posted and not yet accepted count (each its
        size plus `POST_COST`)."""
        return self._posting

    def abort(self) -> None:
        """Give up the posts under way."""
        for task in list(self._sends):
            task.cancel()

    async def drain(self) -> None:
        """Wait for notifications and answers posted so far (so they arrive in order)."""
        if self._sends:
            await asyncio.gather(*list(self._sends), return_exceptions=True)

    async def aclose(self, within: float | None = None) -> None:
        """Close every stream, end a legacy session (DELETE, given at most ``within`` seconds
        when set), and close the connections."""
        if self._closed:
            return
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.session_id is not None:
            with contextlib.suppress(Exception):
                grace = self.server.close_grace
                await asyncio.wait_for(
                    self._delete(), grace if within is None else min(grace, within)
                )
        await self._http.aclose()
        if self._long is not None:
            await self._long.aclose()
        self.session.connection_lost(
            ConnectionLost(f"{self.label}: the client closed the connection", retriable=False)
        )

    async def _delete(self) -> None:
        response = await self._send("DELETE", self._legacy_headers(sse=False))
        await response.aclose()

    # --- tasks ------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _posted(self, cost: int, task: asyncio.Task[None]) -> None:
        self._sends.discard(task)
        self._posting -= cost

    def _done(self, rid: RequestId, _task: object = None) -> None:
        self._streams.pop(rid, None)
        self._modern.discard(rid)

    # --- headers ----------------------------------------------------------------------

    def _legacy_headers(self, *, sse: bool) -> dict[str, str]:
        headers = dict(self.server.headers)
        headers["Accept"] = "text/event-stream" if sse else ACCEPT
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.agreed_version is not None:
            headers[VERSION_HEADER] = self.agreed_version
        return headers

    def _modern_headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        headers = dict(self._json_headers)
        headers[VERSION_HEADER] = str(params["_meta"][PROTOCOL_VERSION_KEY])
        headers["Mcp-Method"] = method
        name = name_header(method, params)
        if name is not None:
            headers["Mcp-Name"] = name
        if method == TOOLS_CALL:
            tool = params.get("name")
            spec: tuple[HeaderParam, ...] = (
                self.tool_headers.get(tool, ()) if isinstance(tool, str) else ()
            )
            if spec:
                headers.update(param_headers(spec, params.get("arguments")))
        return headers

    # --- sending ----------------------------------------------------------------------

    async def _send(
        self,
        verb: str,
        headers: dict[str, str],
        content: bytes | None = None,
        rid: RequestId | None = None,
        *,
        long: bool = False,
    ) -> httpx2.Response:
        """One HTTP exchange, streamed; with OAuth, challenges are answered and it is sent
        again with the new token (the clock of request ``rid`` stops meanwhile: the user
        may be consenting)."""
        auth = self.server.auth
        while True:
            h = headers
            generation = 0
            if auth is not None:
                h = {**headers, **(await auth.headers(self._http, self.url, verb))}
                generation = auth.generation
            http = self._long_pool() if long else self._http
            response = await self._follow(http, verb, h, content)
            if auth is not None and _origin(str(response.url)) == _origin(self.url):
                auth.received(self.url, response.headers)
                if response.status_code in (401, 403):
                    if rid is not None:
                        self.session.pause(rid)
                    try:
                        retry = await auth.challenged(
                            self._http,
                            response.status_code,
                            response.headers.get_list("www-authenticate"),
                            self.url,
                            generation,
                        )
                    finally:
                        if rid is not None:
                            self.session.resume(rid)
                    if retry:
                        await response.aclose()
                        continue
                elif response.status_code < 400:
                    auth.succeeded()
            return response

    async def _follow(
        self,
        http: httpx2.AsyncClient,
        verb: str,
        headers: dict[str, str],
        content: bytes | None,
    ) -> httpx2.Response:
        """Send, following at most ``max_redirects`` redirects by the rules of `next_hop`."""
        url = self.url
        for _ in range(self.server.max_redirects + 1):
            request = http.build_request(verb, url, headers=headers, content=content)
            response = await http.send(request, stream=True, follow_redirects=False)
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or location is None:
                return response
            await response.aclose()
            hop = next_hop(
                self.url,
                verb,
                url,
                response.status_code,
                location,
                cross_origin=self.server.follow_cross_origin_redirects,
            )
            verb, url = hop.verb, hop.url
            if not hop.body:
                content = None
                headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            if not hop.same_origin:
                headers = {k: v for k, v in headers.items() if k.lower() == "accept"}
        raise self._httpx.TooManyRedirects(
            f"more than {self.server.max_redirects} redirects", request=request
        )

    async def _post_message(self, method: str | None, line: bytes) -> None:
        """A notification or an answer to the server (legacy era): 202 expected."""
        headers = self._legacy_headers(sse=False)
        headers["Content-Type"] = "application/json"
        try:
            response = await self._send("POST", headers, line)
            await response.aclose()
        except (self._httpx.HTTPError, ProtocolError) as exc:
            log.warning("%s: could not post %s: %s", self.label, method or "an answer", exc)
            return
        if response.status_code == 404 and self.session_id is not None:
            self._session_ended()
            return
        if not 200 <= response.status_code < 300:
            log.warning(
                "%s refused %s with HTTP %d",
                self.label,
                method or "an answer",
                response.status_code,
            )
            return
        if method == INITIALIZED and self.session_id is not None and self._get is None:
            self._get = self._spawn(self._get_stream())

    async def _request(self, rid: RequestId, method: str, params: Any, line: bytes) -> None:
        session = self.session
        modern = has_modern_meta(params)
        if modern:
            self._modern.add(rid)
            headers = self._modern_headers(method, params)
        else:
            headers = self._legacy_headers(sse=False)
            headers["Content-Type"] = "application/json"
            if method == INITIALIZE:
                headers.pop(SESSION_HEADER, None)
                headers.pop(VERSION_HEADER, None)
        inbound = session.new_inbound()
        try:
            response = await self._send("POST", headers, line, rid, long=method == LISTEN)
            try:
                await self._answer(rid, method, modern, response, inbound)
            finally:
                await response.aclose()
        except asyncio.CancelledError:
            raise
        except self._httpx.TooManyRedirects:
            session.fail(
                rid,
                ProtocolError(
                    f"{self.label}: {method} was redirected more than "
                    f"{self.server.max_redirects} times (a redirect loop?)"
                ),
            )
        except self._httpx.ConnectError as exc:
            session.connection_lost(
                NothingListening(f"nothing is listening on {self.label} (connection refused)")
                if refused(exc)
                else ConnectionLost(f"cannot connect to {self.label}: {exc or type(exc).__name__}")
            )
        except self._httpx.TimeoutException as exc:
            session.fail(rid, ConnectionLost(f"{self.label}: {method}: {type(exc).__name__}"))
        except self._httpx.HTTPError as exc:
            session.fail(
                rid,
                ConnectionLost(
                    f"{self.label}: the response to {method} broke off "
                    f"({exc or type(exc).__name__})"
                ),
            )
        except ProtocolError as exc:
            session.fail(rid, exc)
        except Exception as exc:
            from ..errors import ClientError

            if not isinstance(exc, ClientError):
                log.exception("%s: %s failed", self.label, method)
                exc = ProtocolError(f"{self.label}: {method} failed: {type(exc).__name__}")
            session.fail(rid, exc)

    async def _answer(
        self,
        rid: RequestId,
        method: str,
        modern: bool,
        response: httpx2.Response,
        inbound: Inbound,
    ) -> None:
        session = self.session
        status = response.status_code
        if method == INITIALIZE and 200 <= status < 300:
            sid = response.headers.get(SESSION_HEADER)
            if sid is not None and sid.isascii() and sid.isprintable() and " " not in sid:
                self.session_id = sid
        if status == 404 and not modern and self.session_id is not None and method != INITIALIZE:
            self._session_ended()
            return
        if not 200 <= status < 300:
            await self._error_status(rid, method, response, inbound)
            return
        kind = _content_type(response)
        if kind == "application/json":
            await self._read_json(rid, response, inbound)
        elif kind == "text/event-stream":
            await self._read_events(rid, method, modern, response, inbound)
        elif status == 202 or not kind:
            raise ProtocolError(
                f"{self.label} answered {method} with HTTP {status} and no response"
            )
        else:
            raise ProtocolError(
                f"{self.label} answered {method} with HTTP {status} and Content-Type "
                f"{kind!r}, neither JSON nor an event stream"
            )
        if session.is_pending(rid):
            session.fail(
                rid,
                ConnectionLost(f"{self.label} ended the response to {method} before answering"),
            )

    async def _error_status(
        self, rid: RequestId, method: str, response: httpx2.Response, inbound: Inbound
    ) -> None:
        """An HTTP error: its JSON-RPC error if the body has one, else one made of the status."""
        status = response.status_code
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= MAX_ERROR_BODY:
                break
        error: Any = None
        try:
            msg = msgspec.json.decode(bytes(body))
            if isinstance(msg, dict) and isinstance(msg.get("error"), dict):
                error = msg["error"]
        except msgspec.DecodeError:
            pass
        if error is None:
            if status == 404:
                raise ProtocolError(
                    f"{self.label} answered HTTP 404 Not Found: no MCP endpoint at this URL "
                    f"(is the path right? {ENDPOINT_HINT})"
                )
            if status in _TRANSIENT:
                self.session.fail(
                    rid, ConnectionLost(f"{self.label} answered {method} with HTTP {status}")
                )
                return
            snippet = " ".join(bytes(body[:200]).decode("utf-8", "replace").split())
            error = {
                "code": INVALID_REQUEST if status < 500 else INTERNAL_ERROR,
                "message": f"HTTP {status} {response.reason_phrase}"
                + (f": {snippet}" if snippet else ""),
            }
        message = error.get("message")
        reply = jsonrpc.error_response(
            rid,
            error["code"] if type(error.get("code")) is int else INTERNAL_ERROR,
            message if isinstance(message, str) else f"HTTP {status}",
            error.get("data"),
        )
        for event in inbound.feed(msgspec.json.encode(reply) + b"\n"):
            self.session.dispatch(event)

    async def _read_json(self, rid: RequestId, response: httpx2.Response, inbound: Inbound) -> None:
        session = self.session
        async for chunk in response.aiter_bytes():
            for event in inbound.feed(chunk.translate(_NEWLINES)):
                session.dispatch(event)
            if not session.is_pending(rid):
                return
        for event in inbound.feed(b"\n"):
            session.dispatch(event)

    async def _read_events(
        self,
        rid: RequestId,
        method: str,
        modern: bool,
        response: httpx2.Response,
        inbound: Inbound,
    ) -> None:
        """An SSE response; a legacy one that ends before its answer is resumed by GET."""
        session = self.session
        parser = self._parser(inbound)
        resumes = 0
        while True:
            async for chunk in response.aiter_bytes():
                parser.feed(chunk)
                if not session.is_pending(rid):
                    return
            parser.eof()
            if modern or parser.last_event_id is None or resumes >= MAX_RESUMES:
                return
            resumes += 1
            retry = parser.retry_ms / 1000 if parser.retry_ms is not None else DEFAULT_RETRY
            await asyncio.sleep(retry)
            headers = self._legacy_headers(sse=True)
            headers["Last-Event-ID"] = parser.last_event_id
            await response.aclose()
            response = await self._send("GET", headers, long=True)
            kind = _content_type(response)
            if response.status_code != 200 or kind != "text/event-stream":
                raise ConnectionLost(
                    f"{self.label} could not resume the response to {method} "
                    f"(HTTP {response.status_code})"
                )
            last = parser.last_event_id
            parser = self._parser(inbound)
            parser.last_event_id = last

    def _parser(self, inbound: Inbound) -> Any:
        from .sse import SseParser

        session = self.session

        def data(piece: bytes) -> None:
            for event in inbound.feed(piece):
                session.dispatch(event)

        def end() -> None:
            for event in inbound.feed(b"\n"):
                session.dispatch(event)

        return SseParser(data, end)

    async def _get_stream(self) -> None:
        """The legacy GET stream of unsolicited messages, reconnected while the session
        lasts (stops at 405: the server offers none)."""
        last: str | None = None
        failures = 0
        while not self._closed:
            headers = self._legacy_headers(sse=True)
            if last is not None:
                headers["Last-Event-ID"] = last
            retry = DEFAULT_RETRY
            try:
                response = await self._send("GET", headers, long=True)
                try:
                    kind = _content_type(response)
                    if response.status_code == 405:
                        return
                    if response.status_code == 404:
                        self._session_ended()
                        return
                    if response.status_code != 200 or kind != "text/event-stream":
                        log.info("%s: no GET stream (HTTP %d)", self.label, response.status_code)
                        return
                    parser = self._parser(self.session.new_inbound())
                    async for chunk in response.aiter_bytes():
                        parser.feed(chunk)
                        failures = 0
                    parser.eof()
                    last = parser.last_event_id or last
                    if parser.retry_ms is not None:
                        retry = parser.retry_ms / 1000
                finally:
                    await response.aclose()
            except CrossOriginRedirect as exc:
                log.warning("%s: no GET stream: %s", self.label, exc)
                return
            except self._httpx.HTTPError as exc:
                log.info("%s: the GET stream broke (%s)", self.label, exc)
            failures += 1
            if failures > 10:
                log.warning("%s: giving up on the GET stream", self.label)
                return
            await asyncio.sleep(min(retry * failures, 30.0))

    def _session_ended(self) -> None:
        """404 to a legacy session: it is gone; the client starts a new one."""
        self.session_id = None
        self.session.connection_lost(
            ConnectionLost(f"{self.label} ended the session (HTTP 404); starting a new one")
        )


__all__ = ["CrossOriginRedirect", "HttpChannel", "HttpServer", "Hop", "next_hop"]
