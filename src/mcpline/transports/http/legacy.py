"""2025-11-25 (and 2025-06-18, 2025-03-26) Streamable HTTP: sessions on the same endpoint.

``initialize`` mints a random ``Mcp-Session-Id``. The `Session` is the engine's peer for every
POST that carries it, so the legacy era finds its session in ``scoped``. Each request POST
gets an SSE stream of its own (its notifications, the server's requests for input, then its
reply); the client answers those requests and sends notifications by POST (202). A GET opens
the session's own stream (list changes, resource updates); DELETE ends the session. Event
ids are ``<stream>.<n>``: a client whose stream broke (or was closed by the server, see
``ctx.close_sse_stream``) reconnects with GET and ``Last-Event-ID`` and gets the rest.
A disconnect is not a cancellation here: legacy clients send ``notifications/cancelled``.

Sessions live in one process: behind several workers or replicas they need sticky routing.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections import OrderedDict, deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ...jsonrpc import Notification, Request, RequestId, Response, duplicate_id_reply, is_valid_id
from ...server.engine import FINAL, Exchange, Phase
from ...server.legacy import SESSION_KEY
from ...server.outbound import Kind
from ...server.peer import PeerState
from ...spec import CANCELLED, INITIALIZE, INTERNAL_ERROR, INVALID_REQUEST, LEGACY_SSE_PRIMING_FROM
from ...wire import encode
from . import admission, respond, sse
from .headers import LAST_EVENT_ID, SESSION_ID, Headers, accepts
from .modern import HttpBinding

if TYPE_CHECKING:
    from .app import HttpApp

log = logging.getLogger("mcpline.server")

STANDALONE = 0
"""The number of a session's own (GET) stream."""
KEPT_STREAMS = 16
"""Unread finished request streams a session keeps for resumption (the oldest go first)."""
KEPT_FACTOR = 4
"""...and at most this many times ``replay_bytes`` of them in all."""


class SessionStream:
    """The events of one request POST (or of the session's GET stream), kept for resumption:
    at most ``keep_bytes`` of them, the newest."""

    __slots__ = (
        "number",
        "seq",
        "history",
        "kept",
        "keep_bytes",
        "outbox",
        "finished",
        "reply",
        "read",
    )

    def __init__(self, number: int, keep_bytes: int) -> None:
        self.number = number
        self.seq = 0
        self.history: deque[tuple[int, bytes, Kind]] = deque()
        self.kept = 0
        self.keep_bytes = keep_bytes
        self.outbox: sse.Outbox | None = None
        """The response writing this stream now, if any."""
        self.finished = False
        self.reply: bytes | None = None
        self.read = number != STANDALONE
        """Whether events are kept: a request's always, the session's own stream's once a
        GET has read it (nobody could resume it before)."""

    def event_id(self, seq: int) -> str:
        return f"{self.number}.{seq}"

    def put(self, data: bytes, kind: Kind) -> bool:
        """Record one message and write it if a response is attached."""
        self.seq += 1
        if self.read:
            self.history.append((self.seq, data, kind))
            self.kept += len(data)
            while self.kept > self.keep_bytes and len(self.history) > 1:
                self.kept -= len(self.history.popleft()[1])
        if kind is Kind.REPLY:
            self.reply = data
        if self.outbox is not None:
            return self.outbox.put(data, kind, self.event_id(self.seq))
        return True

    def attach(self, outbox: sse.Outbox, after: int) -> None:
        """Write into ``outbox`` from now on, after replaying the kept events past ``after``."""
        for seq, data, kind in self.history:
            if seq > after:
                outbox.put(data, kind, self.event_id(seq))
        self.outbox = outbox
        self.read = True
        if self.finished:
            outbox.close()

    def detach(self) -> None:
        """Let the response go (closed by the server or gone); events are still kept."""
        if self.outbox is not None:
            self.outbox.close()
            self.outbox = None

    def finish(self) -> None:
        self.finished = True
        if self.outbox is not None:
            self.outbox.close()


class Session(PeerState):
    """One legacy session: the `mcpline.server.engine.Peer` of all its POSTs."""

    def __init__(self, app: HttpApp, session_id: str, principal: Any, client: str = "") -> None:
        super().__init__(f"http session {session_id[:8]}…")
        self.id = session_id
        self.client = client
        """Whose session this is, for the per-client share (`admission.client_key`)."""
        self.principal = principal
        self.inflight: dict[RequestId, Exchange] = {}
        self.streams: OrderedDict[int, SessionStream] = OrderedDict()
        self.standalone = SessionStream(STANDALONE, app.replay_bytes)
        self._of: dict[Exchange, SessionStream] = {}
        self._numbers = itertools.count(1)
        self._app = app
        self.last_active = self.loop.time()

    @property
    def version(self) -> str | None:
        """The negotiated revision, once ``initialize`` was accepted."""
        legacy = self.scoped.get(SESSION_KEY)
        return None if legacy is None else str(legacy.version)

    def touch(self) -> None:
        self.last_active = self.loop.time()

    def busy(self) -> bool:
        """In flight, or a response (the GET stream included) is open."""
        return bool(self.inflight) or any(
            s.outbox is not None for s in (self.standalone, *self.streams.values())
        )

    # --- Peer ----------------------------------------------------------------------------

    def deliver(self, exchange: Exchange, message: dict[str, Any], data: bytes, kind: Kind) -> bool:
        stream = self._of.get(exchange)
        return stream is not None and stream.put(data, kind)

    def send(self, data: bytes, kind: Kind) -> bool:
        return not self.closing.is_set() and self.standalone.put(data, kind)

    def phase_changed(self, exchange: Exchange, old: Phase) -> None:
        if exchange.phase in FINAL:
            if self.inflight.get(exchange.id) is exchange:
                del self.inflight[exchange.id]
            stream = self._of.pop(exchange, None)
            if stream is not None:
                stream.finish()
                self._prune()
            self.touch()

    # --- requests and streams -------------------------------------------------------------

    def open_stream(self, exchange: Exchange) -> SessionStream:
        number = next(self._numbers)
        stream = SessionStream(number, self._app.replay_bytes)
        self.streams[number] = stream
        self._of[exchange] = stream
        self.inflight[exchange.id] = exchange
        self._prune()
        return stream

    def forget(self, stream: SessionStream) -> None:
        """A stream read to its end: nothing of it will be asked for again."""
        if self.streams.get(stream.number) is stream:
            del self.streams[stream.number]

    def _prune(self) -> None:
        """Drop the oldest unread finished streams past `KEPT_STREAMS` or the byte bound."""
        done = [s for s in self.streams.values() if s.finished and s.outbox is None]
        total = sum(s.kept for s in done)
        limit = KEPT_FACTOR * self._app.replay_bytes
        for stream in done:
            if len(done) <= KEPT_STREAMS and total <= limit:
                break
            del self.streams[stream.number]
            done = done[1:]
            total -= stream.kept

    def stream(self, number: int) -> SessionStream | None:
        return self.standalone if number == STANDALONE else self.streams.get(number)

    def cancel(self, request_id: Any) -> None:
        exchange = self.inflight.get(request_id) if is_valid_id(request_id) else None
        if exchange is not None and type(exchange.id) is type(request_id):
            exchange.cancel()

    async def close(self) -> None:
        """End the session: close hooks, in-flight requests cancelled, streams ended."""
        if self.closing.is_set():
            return
        self.closing.set()
        await self.run_close_hooks()
        for exchange in list(self.inflight.values()):
            exchange.cancel()
        for stream in (self.standalone, *self.streams.values()):
            stream.finish()
        self._app.engine.peers.discard(self)


class SessionsFull(Exception):
    """No room for a new session: ``refusal`` is the answer."""

    def __init__(self, refusal: admission.Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class Evictable(Protocol):
    """What `make_room` reads of a session."""

    client: str
    last_active: float

    def busy(self) -> bool: ...


E = TypeVar("E", bound=Evictable)


def make_room(
    sessions: Sequence[E],
    client: str,
    now: float,
    *,
    limit: int,
    per_client: int,
    evictable_after: float,
) -> E | admission.Refusal | None:
    """What a new session of ``client`` needs among the open ``sessions``: None (there is
    room), the session to end first, or the refusal. A client at ``per_client`` sessions
    gives up its own least recently used idle one (429 when all are busy); a full server
    gives up the least recently used session idle for ``evictable_after`` seconds (503 when
    there is none): a newcomer never ends another client's session in use or recently used."""
    mine = [s for s in sessions if s.client == client]
    if len(mine) >= per_client:
        idle = [s for s in mine if not s.busy()]
        if idle:
            return min(idle, key=_last_active)
        return admission.over_share(
            "sessions open", len(mine), per_client, "max_sessions_per_client", client=True
        )
    if len(sessions) >= limit:
        stale = [s for s in sessions if not s.busy() and now - s.last_active >= evictable_after]
        if stale:
            return min(stale, key=_last_active)
        return admission.over_share(
            "sessions open", len(sessions), limit, "max_sessions", client=False
        )
    return None


def _last_active(session: Evictable) -> float:
    return session.last_active


class Sessions:
    """The legacy sessions of one app: at most ``limit``, and ``per_client`` of one client,
    each closed after ``idle_timeout`` seconds without a request or an open stream; room for
    a new one is made by `make_room`. ``rate``: new sessions a client may open per second
    (None: no bound; the bridge sets one, as each of its sessions is a process)."""

    def __init__(
        self,
        app: HttpApp,
        limit: int,
        idle_timeout: float,
        *,
        per_client: int = 16,
        evictable_after: float = 600.0,
        rate: float | None = None,
    ) -> None:
        self._app = app
        self.rate = None if rate is None else admission.RateLimit(rate, per_client)
        """New sessions per client and second (a burst of ``per_client``), when bounded."""
        self.limit = limit
        self.per_client = per_client
        self.idle_timeout = idle_timeout
        self.evictable_after = evictable_after
        self.open: dict[str, Session] = {}

    async def new(self, principal: Any, client: str = "") -> Session:
        """A candidate session (kept by `keep` once its initialize is accepted); raises
        `SessionsFull` when the client opens sessions faster than ``rate`` or `make_room`
        refuses."""
        now = asyncio.get_running_loop().time()
        room = make_room(
            list(self.open.values()),
            client,
            now,
            limit=self.limit,
            per_client=self.per_client,
            evictable_after=self.evictable_after,
        )
        if isinstance(room, admission.Refusal):
            raise SessionsFull(room)
        if self.rate is not None and (fast := self.rate.take(client, now)) is not None:
            raise SessionsFull(fast)
        if room is not None:
            log.info("%s ended to make room for a new session", room.name)
            await self.end(room)
        session = Session(self._app, secrets.token_urlsafe(32), principal, client)
        self._app.engine.peers.add(session)
        return session

    def keep(self, session: Session) -> None:
        self.open[session.id] = session

    def drop(self, session: Session) -> None:
        if self.open.get(session.id) is session:
            del self.open[session.id]

    async def end(self, session: Session) -> None:
        self.drop(session)
        await session.close()

    async def expire(self) -> None:
        """Close sessions idle for longer than ``idle_timeout``; runs until cancelled."""
        period = max(0.05, min(self.idle_timeout / 4, 30.0))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            for session in list(self.open.values()):
                if not session.busy() and now - session.last_active > self.idle_timeout:
                    try:
                        await self.end(session)
                    except Exception:
                        log.exception("closing the idle session %s failed", session.name)

    async def close_all(self) -> None:
        for session in list(self.open.values()):
            await self.end(session)


def _not_found(session_id: str) -> str:
    return (
        f"Session not found: no 2025-11-25 session {session_id[:12]!r} here (it ended, expired "
        "or belongs to another server process). Legacy sessions are bound to the process that "
        "created them: behind a load balancer or several workers they need sticky routing. "
        "Send initialize for a new session, or speak MCP 2026-07-28, which needs none."
    )


MISSING_SESSION = (
    "Bad Request: missing Mcp-Session-Id header; send initialize first (MCP 2025-11-25), "
    "or send MCP-Protocol-Version: 2026-07-28 with params._meta (MCP 2026-07-28)"
)


async def find(
    app: HttpApp,
    headers: Headers,
    principal: Any,
    send: respond.Send,
    rid: RequestId | None,
    extra: respond.HeaderList,
) -> Session | None:
    """The session a request names; None after answering 400, 403 or 404 for it."""
    session_id = headers.get(SESSION_ID)
    if session_id is None:
        await respond.error(send, 400, INVALID_REQUEST, MISSING_SESSION, rid, extra)
        return None
    session = app.sessions.open.get(session_id)
    if session is None:
        await respond.error(send, 404, INVALID_REQUEST, _not_found(session_id), rid, extra)
        return None
    if session.principal != principal:
        await respond.error(
            send,
            403,
            INVALID_REQUEST,
            "Forbidden: this session was opened with another bearer token",
            rid,
            extra,
        )
        return None
    session.touch()
    return session


async def post(
    app: HttpApp,
    message: Request | Notification | Response,
    headers: Headers,
    principal: Any,
    client: str,
    receive: respond.Receive,
    send: respond.Send,
    extra: respond.HeaderList,
) -> None:
    """One legacy POST: a request gets its stream, anything else 202. ``initialize`` opens
    a session (unless it names one that is open: that one refuses a second handshake).
    ``extra``: the response headers every answer carries (CORS)."""
    named = headers.get(SESSION_ID)
    if (
        isinstance(message, Request)
        and message.method == INITIALIZE
        and (named is None or named not in app.sessions.open)
    ):
        try:
            session = await app.sessions.new(principal, client)
        except SessionsFull as full:
            refused = full.refusal
            answer = [*refused.response_headers(), *extra]
            await respond.error(
                send, refused.status, refused.code, refused.message, message.id, answer
            )
            return
        await _request(app, session, message, headers, principal, receive, send, extra, new=True)
        return
    rid = message.id if isinstance(message, Request) else None
    found = await find(app, headers, principal, send, rid, extra)
    if found is None:
        return
    if isinstance(message, Request):
        await _request(app, found, message, headers, principal, receive, send, extra, new=False)
        return
    if isinstance(message, Response):
        app.engine.response(found, message)
    elif message.method == CANCELLED:
        params = message.params
        if isinstance(params, dict):
            found.cancel(params.get("requestId"))
    else:
        app.engine.notification(found, message)
    await respond.empty(send, 202, extra)


async def _request(
    app: HttpApp,
    session: Session,
    request: Request,
    headers: Headers,
    principal: Any,
    receive: respond.Receive,
    send: respond.Send,
    extra: respond.HeaderList,
    *,
    new: bool,
) -> None:
    if request.id in session.inflight:
        await respond.json(send, 400, encode(duplicate_id_reply(request.id)), extra)
        return
    if len(session.inflight) >= app.server.options.max_in_flight:
        why = f"Server busy: {len(session.inflight)} requests of this session are in flight"
        await respond.error(send, 503, INTERNAL_ERROR, why, request.id, extra)
        return
    holder: list[SessionStream] = []

    def interrupt() -> None:
        if holder:
            holder[0].detach()

    binding = HttpBinding(app, headers, modern_only=False, principal=principal, close=interrupt)
    exchange = Exchange(request, session, binding)
    stream = session.open_stream(exchange)
    holder.append(stream)
    app.engine.start(exchange)
    if new:
        if session.version is None:  # initialize refused: no session
            await session.close()
        else:
            app.sessions.keep(session)
    if session.version is not None:
        extra = [*extra, (SESSION_ID.encode(), session.id.encode())]
    if not exchange.open and stream.reply is not None and stream.seq == 1:
        session.forget(stream)
        await respond.reply(send, stream.reply, extra, mapped=False)
        return
    await _stream(app, session, stream, 0, receive, send, extra, prime=True)


async def _stream(
    app: HttpApp,
    session: Session,
    stream: SessionStream,
    after: int,
    receive: respond.Receive,
    send: respond.Send,
    extra: respond.Headers,
    *,
    prime: bool,
) -> None:
    """Write ``stream`` as this response, from the event past ``after``, until it ends, the
    server lets it go, or the client leaves (which leaves the stream to a resumption)."""
    outbox = sse.Outbox(app.server.options.max_outbound_bytes, budget=app.outbound)
    gone = asyncio.Event()

    def disconnected() -> None:
        gone.set()
        if stream.outbox is outbox:
            stream.detach()
        outbox.ready.set()

    await respond.start(send, 200, [*respond.SSE_HEADERS, *extra])
    version = session.version
    if prime and version is not None and version >= LEGACY_SSE_PRIMING_FROM:
        await respond.body(send, sse.priming(stream.event_id(0), app.retry_ms), True)
    stream.attach(outbox, after)
    try:
        async with respond.Watcher(receive, disconnected):
            ended = await respond.stream(send, outbox, app.keepalive, gone.is_set)
        if ended and stream.finished and not outbox.aborted:
            session.forget(stream)
    finally:
        if stream.outbox is outbox:
            stream.detach()
        outbox.release()
        session.touch()


async def get(
    app: HttpApp,
    headers: Headers,
    principal: Any,
    receive: respond.Receive,
    send: respond.Send,
    extra: respond.HeaderList,
) -> None:
    """The session's own stream, or the rest of a stream named by ``Last-Event-ID``."""
    if not accepts(headers.get("accept"), "text/event-stream"):
        why = "Not Acceptable: GET needs Accept: text/event-stream"
        await respond.error(send, 406, INVALID_REQUEST, why, None, extra)
        return
    session = await find(app, headers, principal, send, None, extra)
    if session is None:
        return
    extra = [*extra, (SESSION_ID.encode(), session.id.encode())]
    last = headers.get(LAST_EVENT_ID)
    if last is None:
        stream, after = session.standalone, session.standalone.seq
    else:
        parsed = parse_event_id(last)
        found = None if parsed is None else session.stream(parsed[0])
        if parsed is None or found is None:
            why = f"Bad Request: Last-Event-ID {last[:40]!r} names no stream kept by this session"
            await respond.error(send, 400, INVALID_REQUEST, why, None, extra)
            return
        stream, after = found, parsed[1]
    if stream.outbox is not None:
        await respond.error(
            send, 409, INVALID_REQUEST, "Conflict: this stream is already being read", None, extra
        )
        return
    await _stream(app, session, stream, after, receive, send, extra, prime=False)


EVENT_ID_DIGITS = 18
"""Digits allowed in each part of a ``Last-Event-ID`` (``STREAM.SEQ``): more than any id this
server gives, and far below what ``int()`` refuses."""


def parse_event_id(value: str) -> tuple[int, int] | None:
    """``(stream, seq)`` from a ``Last-Event-ID`` value, or None when it is not one of ours
    (any other shape, or a part longer than `EVENT_ID_DIGITS`)."""
    number, _, seq = value.strip().partition(".")
    for part in (number, seq):
        if not (part.isascii() and part.isdigit() and len(part) <= EVENT_ID_DIGITS):
            return None
    return int(number), int(seq)


async def delete(
    app: HttpApp, headers: Headers, principal: Any, send: respond.Send, extra: respond.HeaderList
) -> None:
    session = await find(app, headers, principal, send, None, extra)
    if session is not None:
        await app.sessions.end(session)
        await respond.empty(send, 204, extra)


__all__ = [
    "delete",
    "EVENT_ID_DIGITS",
    "Evictable",
    "find",
    "get",
    "KEPT_FACTOR",
    "KEPT_STREAMS",
    "make_room",
    "MISSING_SESSION",
    "parse_event_id",
    "post",
    "Session",
    "Sessions",
    "SessionsFull",
    "SessionStream",
    "STANDALONE",
]
