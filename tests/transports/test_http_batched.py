"""`BatchedTransport` and `WriteBatch` alone, over transports that record what reaches them:
the writes of one loop pass leave as one write per connection, in order, at the next pass or,
after `WriteBatch.flush_later`, once the callbacks queued before have run; closing writes
them first, aborting drops them; large writes are not held. A real server writes through
them in every HTTP test (`GuardedHttpToolsProtocol`)."""

from __future__ import annotations

import asyncio
import functools
import socket
from typing import Any

import pytest

from mcpline.transports.http.batched import HOLD_BYTES, BatchedTransport, WriteBatch

pytestmark = pytest.mark.anyio


class Recording(asyncio.Transport):
    """A transport that keeps what is done to it."""

    def __init__(self) -> None:
        super().__init__({"peername": ("127.0.0.1", 5)})
        self.writes: list[bytes] = []
        self.events: list[str] = []
        self.closing = False
        self.buffered = 7

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))
        self.events.append("write")

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def write_eof(self) -> None:
        self.events.append("eof")

    def can_write_eof(self) -> bool:
        return True

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def pause_reading(self) -> None:
        self.events.append("pause")

    def resume_reading(self) -> None:
        self.events.append("resume")


def busy() -> WriteBatch:
    """A batch whose connections are answering other requests too (the protocol counts)."""
    batch = WriteBatch()
    batch.open = 2
    return batch


def batched(batch: WriteBatch | None = None) -> tuple[BatchedTransport, Recording]:
    inner = Recording()
    return BatchedTransport(inner, batch or busy()), inner


async def next_pass() -> None:
    await asyncio.sleep(0)


async def test_the_writes_of_one_pass_leave_as_one_write_in_order() -> None:
    outer, inner = batched()
    outer.write(b"HTTP/1.1 200 OK\r\n\r\n")
    outer.write(bytearray(b"{}"))
    outer.writelines([b"a", memoryview(b"b")])
    assert inner.writes == []
    assert outer.get_write_buffer_size() == 7 + 23
    await next_pass()
    assert inner.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}ab"]
    assert outer.get_write_buffer_size() == 7
    outer.write(b"next")
    await next_pass()
    assert inner.writes[1:] == [b"next"]


async def test_an_empty_write_holds_nothing() -> None:
    outer, inner = batched()
    outer.write(b"")
    await next_pass()
    assert inner.events == []


async def test_close_and_write_eof_write_what_is_held_first() -> None:
    outer, inner = batched()
    outer.write(b"last")
    outer.write_eof()
    outer.write(b"bye")
    outer.close()
    assert inner.events == ["write", "eof", "write", "close"]
    assert inner.writes == [b"last", b"bye"]
    await next_pass()  # the scheduled flush finds nothing left
    assert inner.writes == [b"last", b"bye"]


async def test_abort_drops_what_is_held() -> None:
    outer, inner = batched()
    outer.write(b"never sent")
    outer.abort()
    await next_pass()
    assert inner.events == ["abort"]
    assert outer.get_write_buffer_size() == 7


async def test_what_is_held_when_the_peer_went_away_is_dropped() -> None:
    outer, inner = batched()
    outer.write(b"too late")
    inner.closing = True  # connection_lost meanwhile
    await next_pass()
    assert inner.writes == []


async def test_a_large_write_goes_at_once_after_what_was_held() -> None:
    outer, inner = batched()
    outer.write(b"head")
    body = b"x" * HOLD_BYTES
    outer.write(body)
    assert inner.writes == [b"head", body]  # not joined: the large body is not copied
    assert inner.writes[1] is body
    await next_pass()
    assert len(inner.writes) == 2


async def test_held_bytes_never_pass_the_bound() -> None:
    outer, inner = batched()
    chunk = b"e" * (HOLD_BYTES // 4)
    for _ in range(4):
        outer.write(chunk)
        assert outer.get_write_buffer_size() - inner.buffered <= HOLD_BYTES
    outer.write(b"!")
    assert inner.writes == [chunk * 4, b"!"]
    assert outer.get_write_buffer_size() == inner.buffered


async def test_the_rest_is_the_transports() -> None:
    outer, inner = batched()
    assert outer.transport is inner
    assert outer.get_extra_info("peername") == ("127.0.0.1", 5)
    assert outer.get_extra_info("socket", "none") == "none"
    assert outer.can_write_eof()
    outer.pause_reading()
    outer.resume_reading()
    assert inner.events == ["pause", "resume"]
    assert not outer.is_closing()
    outer.close()
    assert outer.is_closing()


@pytest.mark.parametrize("size", [1, HOLD_BYTES - 1, HOLD_BYTES])
async def test_a_write_up_to_the_bound_is_held(size: int) -> None:
    outer, inner = batched()
    outer.write(b"z" * size)
    assert inner.writes == []
    await next_pass()
    assert inner.writes == [b"z" * size]


async def test_a_lone_answer_is_not_held() -> None:
    batch = busy()
    outer, inner = batched(batch)
    outer.write(b"HTTP/1.1 200 OK\r\n\r\n")  # held while another request is open...
    batch.open = 1
    outer.write(b"{}")  # ...and taken along once this one is alone
    assert inner.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    outer.write(b"event")
    assert inner.writes[1:] == [b"event"]
    await next_pass()
    assert len(inner.writes) == 2


async def test_a_batch_writes_its_connections_together() -> None:
    batch = busy()
    (one, first), (two, second) = batched(batch), batched(batch)
    one.write(b"a")
    two.write(b"b")
    one.write(b"c")
    assert first.writes == second.writes == []
    await next_pass()
    assert (first.writes, second.writes) == ([b"ac"], [b"b"])


async def test_flush_later_writes_after_the_callbacks_queued_before_in_the_same_pass() -> None:
    loop = asyncio.get_running_loop()
    batch = busy()
    outer, inner = batched(batch)
    seen: list[list[bytes]] = []
    for text in (b"1", b"2"):  # two handlers queued, as uvicorn queues a request's task
        loop.call_soon(outer.write, text)
        batch.flush_later()
    loop.call_soon(lambda: seen.append(list(inner.writes)))  # queued after the flush
    await next_pass()
    assert seen == [[b"12"]]  # written once, after both handlers, before what came next


async def test_the_batch_is_bound_to_the_loop_it_is_used_on() -> None:
    batch = busy()

    async def once(text: bytes) -> list[bytes]:
        outer, inner = batched(batch)
        outer.write(text)
        await next_pass()
        return inner.writes

    assert await once(b"here") == [b"here"]
    done = await asyncio.to_thread(asyncio.run, once(b"there"))  # another loop
    assert done == [b"there"]
    assert await once(b"back") == [b"back"]


async def test_the_protocol_counts_the_requests_it_answers() -> None:
    """Through a real uvicorn on a real socket: `WriteBatch.open` counts requests being
    answered, back to 0 after answers and after a client that hung up mid-request, and an
    answer held while another request is open still arrives."""
    import uvicorn

    from mcpline.transports.http.connections import ConnectionLimits, protocol_factory

    release = asyncio.Event()
    seen_open: list[int] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        seen_open.append(batch.open)
        if scope["path"] == "/slow":
            await release.wait()
        body = scope["path"].encode()
        length = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": length})
        await send({"type": "http.response.body", "body": body})

    built = protocol_factory(ConnectionLimits(16, 10.0, 65536))  # as `mcpline run` builds it
    assert isinstance(built, functools.partial)
    batch = built.keywords["batch"]  # one batch, shared by every connection of the server
    assert isinstance(batch, WriteBatch)
    factory: Any = built
    config = uvicorn.Config(app, http=factory, lifespan="off", log_config=None)
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))

    async def until(done: Any, what: str) -> None:
        for _ in range(3000):  # 30 s: ordering, not speed, is what is checked
            if done():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"not {what} within 30 s")

    await until(lambda: server.started, "started")

    async def ask(path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        await writer.drain()
        return reader, writer

    async def answer(reader: asyncio.StreamReader) -> bytes:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        return await reader.readexactly(length)

    try:
        reader, writer = await ask("/one")
        assert await answer(reader) == b"/one"
        writer.write(b"GET /two HTTP/1.1\r\nHost: x\r\n\r\n")  # the same kept-alive connection
        assert await answer(reader) == b"/two"
        assert batch.open == 0

        slow_reader, slow_writer = await ask("/slow")
        await until(lambda: len(seen_open) == 3, "reading /slow")
        fast_reader, fast_writer = await ask("/fast")  # answered while /slow is open: held
        assert await answer(fast_reader) == b"/fast"
        assert seen_open[-1] == 2
        slow_writer.close()  # hangs up before its answer
        await until(lambda: batch.open == 0, "back to 0 requests open")
        release.set()
        for w in (writer, fast_writer):
            w.close()
    finally:
        release.set()
        server.should_exit = True
        await serving
    assert seen_open[:2] == [1, 1]


async def test_opened_and_closed_count_the_requests_that_decide_holding() -> None:
    batch = WriteBatch()
    outer, inner = batched(batch)
    batch.opened()  # alone: written at once
    outer.write(b"x")
    assert inner.writes == [b"x"]
    batch.opened()  # a second one: held, and written after the handlers queued so far
    outer.write(b"y")
    assert inner.writes == [b"x"]
    await next_pass()
    assert inner.writes == [b"x", b"y"]
    batch.closed(2)
    assert batch.open == 0
