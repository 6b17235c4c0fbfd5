"""Reading a request body and writing responses over raw ASGI ``receive``/``send``."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import msgspec

from ...eager import Waiting, first_step, resume
from ...jsonrpc import RequestId, error_response
from ...wire import encode
from . import sse
from .admission import Hold, Refusal
from .headers import status_for
from .timers import FixedDelayTimers

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
HeaderList = list[tuple[bytes, bytes]]
Headers = Iterable[tuple[bytes, bytes]]

JSON_HEADERS: HeaderList = [(b"content-type", b"application/json")]
SSE_HEADERS: HeaderList = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


class BodyTooLarge(Exception):
    """The body is longer than the limit (413)."""


class BodyTimeout(Exception):
    """The body did not arrive whole in time (408)."""


class Disconnected(Exception):
    """The client went away before the body arrived whole."""


class OverBudget(Exception):
    """The body would take the bytes held by every body in flight over their budget."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class _Body:
    """A request body as it arrives: at most ``limit`` bytes, each held in ``hold``."""

    __slots__ = ("hold", "limit", "parts", "size")

    def __init__(self, limit: int, hold: Hold) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.limit = limit
        self.hold = hold

    def add(self, message: dict[str, Any]) -> bool:
        """Take one message from ``receive``; True once the body is whole."""
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        self.size += len(chunk)
        if self.size > self.limit:
            raise BodyTooLarge
        if self.size > self.hold.size:  # a chunked body: held as it comes
            refusal = self.hold.grow(self.size)
            if refusal is not None:
                raise OverBudget(refusal)
        self.parts.append(chunk)
        return not message.get("more_body", False)

    def whole(self) -> bytes:
        parts = self.parts
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def rest(self, receive: Receive) -> bytes:
        """Take messages from ``receive`` until the body is whole; the body."""
        while not self.add(await receive()):
            pass
        return self.whole()


if sys.version_info >= (3, 11):

    async def read_body(
        receive: Receive, limit: int, hold: Hold, within: FixedDelayTimers
    ) -> bytes:
        """The whole request body: at most ``limit`` bytes, all within ``within.delay``
        seconds (`BodyTimeout`), each byte held in ``hold`` (`OverBudget` when the budget
        cannot hold it). A body that arrived with its headers is read without arming the
        deadline."""
        body = _Body(limit, hold)
        got = first_step(receive())
        if not isinstance(got, Waiting) and body.add(got):
            return body.whole()
        task = asyncio.current_task()
        assert task is not None
        deadline = within.start(task.cancel)
        try:
            if isinstance(got, Waiting) and body.add(await resume(got.steps, got.yielded)):
                return body.whole()
            return await body.rest(receive)
        except asyncio.CancelledError:
            if within.cancel(deadline) or task.uncancel():
                raise  # a cancellation of the request, not the deadline's
            raise BodyTimeout from None
        finally:
            within.cancel(deadline)

else:

    async def read_body(
        receive: Receive, limit: int, hold: Hold, within: FixedDelayTimers
    ) -> bytes:
        """The whole request body: at most ``limit`` bytes, all within ``within.delay``
        seconds (`BodyTimeout`), each byte held in ``hold`` (`OverBudget` when the budget
        cannot hold it)."""
        try:
            return await asyncio.wait_for(_Body(limit, hold).rest(receive), within.delay)
        except asyncio.TimeoutError:
            raise BodyTimeout from None


async def watch(receive: Receive, gone: Callable[[], None]) -> None:
    """Call ``gone`` once the client disconnects (run as a task while a response is open)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone()
            return


class _Code(msgspec.Struct):
    code: Any = None


class _Probe(msgspec.Struct):
    error: _Code | None = None


_probe = msgspec.json.Decoder(_Probe)


def error_code(reply: bytes) -> int | None:
    """The JSON-RPC error code of an encoded response, None for a result."""
    try:
        found = _probe.decode(reply)
    except msgspec.DecodeError:
        return None
    code = None if found.error is None else found.error.code
    return code if type(code) is int else None


def error_body(id: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    return encode(error_response(id, code, message, data))


async def refuse(
    send: Send,
    refusal: Refusal,
    extra: Iterable[tuple[bytes, bytes]] = (),
    request_id: Any = None,
) -> None:
    """Answer a request the admission ladder refused (``request_id``: once its body is read)."""
    headers = [*refusal.response_headers(), *extra]
    await error(send, refusal.status, refusal.code, refusal.message, request_id, headers)


async def start(send: Send, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})


async def body(send: Send, data: bytes, more: bool = False) -> None:
    """Write ``data``; a large one (`sse.DRAINED_WRITE`) returns once the client has read most
    of it (an ASGI server waits for its buffer to drain before each message)."""
    if len(data) < sse.DRAINED_WRITE:
        await send({"type": "http.response.body", "body": data, "more_body": more})
        return
    await send({"type": "http.response.body", "body": data, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": more})


async def json(send: Send, status: int, data: bytes, headers: Headers = ()) -> None:
    """A whole JSON response."""
    length = (b"content-length", b"%d" % len(data))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*JSON_HEADERS, length, *headers],
        }
    )
    await body(send, data)


async def reply(send: Send, data: bytes, headers: Headers = (), *, mapped: bool = True) -> None:
    """A JSON-RPC response as a JSON body; its status follows its error code when
    ``mapped`` (2026-07-28), else 200."""
    code = error_code(data) if mapped else None
    await json(send, 200 if code is None else status_for(code), data, headers)


async def error(
    send: Send,
    status: int,
    code: int,
    message: str,
    id: RequestId | None = None,
    headers: Headers = (),
) -> None:
    """An HTTP error whose body is a JSON-RPC error response."""
    await json(send, status, error_body(id, code, message), headers)


async def empty(send: Send, status: int, headers: Headers = ()) -> None:
    await start(send, status, [(b"content-length", b"0"), *headers])
    await body(send, b"")


async def stream(
    send: Send,
    outbox: sse.Outbox,
    keepalive: float | None,
    gone: Callable[[], bool],
    head: Iterable[tuple[bytes, bytes]] | None = None,
) -> bool:
    """Write ``outbox`` as SSE events until it closes, the client leaves (``gone``) or it is
    aborted; a keep-alive comment after each ``keepalive`` seconds of silence. ``gone()``
    says whether the client left.

    With ``head`` (the response's headers), the response is started here with status 200;
    otherwise it must already be started. Returns whether the response was ended here
    (False when the client left first).
    """
    if head is not None:
        await start(send, 200, head)
    while True:
        items = await sse.next_items(outbox, keepalive)
        if gone():
            return False
        if items is None:
            await body(send, sse.KEEPALIVE, True)
            continue
        if outbox.aborted:
            await body(send, b"")
            return True
        chunk = b"".join(sse.event(data, eid) for data, _, eid in items)
        if outbox.closed and not outbox.items:
            await body(send, chunk)
            return True
        if chunk:
            await body(send, chunk, True)


class Watcher:
    """A `watch` task started on demand: `start` (idempotent; a loop callback too), then
    `stop`; or both around an ``async with`` block."""

    __slots__ = ("_gone", "_receive", "_task")

    def __init__(self, receive: Receive, gone: Callable[[], None]) -> None:
        self._receive = receive
        self._gone = gone
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(watch(self._receive, self._gone))

    async def stop(self) -> None:
        task = self._task
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    async def __aenter__(self) -> Watcher:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


__all__ = [
    "body",
    "BodyTimeout",
    "BodyTooLarge",
    "Disconnected",
    "empty",
    "error",
    "error_body",
    "error_code",
    "HeaderList",
    "Headers",
    "json",
    "JSON_HEADERS",
    "OverBudget",
    "read_body",
    "refuse",
    "Receive",
    "reply",
    "Send",
    "SSE_HEADERS",
    "start",
    "stream",
    "watch",
    "Watcher",
]
