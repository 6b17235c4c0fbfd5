"""One client connection to a `Server`: lines in, tasks run, messages out.

Transport-independent: a transport feeds bytes to `data_received`/`eof_received` and gives
the connection a `write` callable, read pause/resume callbacks, and how many bytes it holds
unwritten (``buffered``) and how to drop the peer (``abort``) for the outbound bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from .. import jsonrpc
from ..errors import JsonRpcError
from ..jsonrpc import Request, RequestId, error_response, result_response
from ..spec import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR
from ..wire import LineBuffer, Oversized, encode
from .context import Context
from .outbound import Action, Kind, decide

if TYPE_CHECKING:
    from .core import Server

log = logging.getLogger("mcpline.server")


class Connection:
    """Serves one peer. Every request runs as its own task; replies are written whole."""

    def __init__(
        self,
        server: Server,
        write: Callable[[bytes], None],
        *,
        pause_reading: Callable[[], None] = lambda: None,
        resume_reading: Callable[[], None] = lambda: None,
        buffered: Callable[[], int] = lambda: 0,
        abort: Callable[[], None] = lambda: None,
        name: str = "stdio",
        max_line_bytes: int | None = None,
    ) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.name = name
        self._write = write
        self._pause = pause_reading
        self._resume = resume_reading
        self._buffered = buffered
        self._abort = abort
        self.max_line_bytes = server.max_line_bytes if max_line_bytes is None else max_line_bytes
        """This connection's longest line; longer ones are answered with a parse error."""
        self._lines = LineBuffer(self.max_line_bytes)
        self.inflight: dict[RequestId, tuple[asyncio.Task[None], Context]] = {}
        self._pending: deque[Request] = deque()
        """Requests read while at the in-flight limit; started in order as slots free up."""
        self.idle = 0
        """In-flight requests that hold no slot: listens, and requests waiting on the peer."""
        self._read_paused = False
        self._write_paused = False
        self.closing = asyncio.Event()
        self.write_failed = False
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self.dropped = 0
        """Advisory notifications not sent because the peer was not reading."""
        self.close_hooks: list[Callable[[Connection], Awaitable[None] | None]] = []
        self.overflow_hooks: list[Callable[[Connection], None]] = []
        """Run when a stream notification finds the outbound buffer full: end the streams."""
        self.state: dict[str, Any] = {}
        """Per-connection state for features that need it (e.g. a legacy session)."""
        server.connections.add(self)

    # --- input ---------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.closing.is_set():
            return
        for item in self._lines.feed(data):
            self.handle_line(item)

    def eof_received(self) -> None:
        for item in self._lines.eof():
            self.handle_line(item)
        self.begin_shutdown("end of input")

    def handle_line(self, line: bytes | Oversized) -> None:
        if isinstance(line, Oversized):
            why = (
                f"Parse error: message of {line.size} bytes exceeds the "
                f"{self.max_line_bytes}-byte line limit"
            )
            rid = jsonrpc.recover_id(line.prefix, line.suffix)
            self.send(error_response(rid, PARSE_ERROR, why))
            return
        msg = jsonrpc.parse(line)
        if type(msg) is Request:
            self.handle_request(msg)
        elif type(msg) is jsonrpc.Notification:
            self.handle_notification(msg)
        elif type(msg) is jsonrpc.Invalid:
            if msg.reply is not None:
                self.send(msg.reply)
            else:
                log.debug("ignored malformed notification: %s", msg.reason)
        else:
            self.handle_response(msg)  # type: ignore[arg-type]

    def handle_request(self, req: Request) -> None:
        if self._pending or self._held():
            self._pending.append(req)
            self._pause_reading()
            return
        self._start(req)

    def _start(self, req: Request) -> None:
        if req.id in self.inflight:
            # Without an id: the in-flight request's own reply will carry it.
            shown = encode(req.id)[:-1].decode()
            why = f"Invalid Request: a request with id {shown} is already in flight"
            self.send(error_response(None, INVALID_REQUEST, why))
            return
        try:
            ctx, awaitable = self.server.dispatch(self, req)
        except JsonRpcError as exc:
            self.send(error_response(req.id, exc.code, exc.message, exc.data))
            return
        except Exception:
            log.exception("internal error while routing %s", req.method)
            why = f"Internal error while handling {req.method}"
            self.send(error_response(req.id, INTERNAL_ERROR, why))
            return
        task = self.loop.create_task(self._run(ctx, awaitable))
        self.inflight[req.id] = (task, ctx)
        if ctx.extra.get("long_lived"):
            self._set_idle(ctx, True)
        if self._held():
            self._pause_reading()

    def _set_idle(self, ctx: Context, idle: bool) -> None:
        if bool(ctx.extra.get("idle")) is idle:
            return
        ctx.extra["idle"] = idle
        self.idle += 1 if idle else -1
        if idle and self._read_paused:
            self._release()

    @contextlib.contextmanager
    def waiting_on_peer(self, ctx: Context) -> Iterator[None]:
        """While a request awaits an answer from the peer it holds no in-flight slot, so that
        reading goes on and the answer can arrive even when every slot is taken."""
        entry = self.inflight.get(ctx.request_id)
        if entry is None or entry[1] is not ctx or ctx.extra.get("idle"):
            yield
            return
        self._set_idle(ctx, True)
        try:
            yield
        finally:
            entry = self.inflight.get(ctx.request_id)
            if entry is not None and entry[1] is ctx and not ctx.extra.get("long_lived"):
                self._set_idle(ctx, False)
                if self._held():
                    self._pause_reading()

    def _held(self) -> bool:
        """At the in-flight limit, or the peer is not reading our output."""
        busy = len(self.inflight) - self.idle
        return self._write_paused or busy >= self.server.max_in_flight

    def _pause_reading(self) -> None:
        if not self._read_paused:
            self._read_paused = True
            self._pause()

    def _release(self) -> None:
        """Start queued requests while there is room; resume reading once all have started."""
        while self._pending and not self._held():
            self._start(self._pending.popleft())
        if self._read_paused and not self._pending and not self._held():
            self._read_paused = False
            if not self.closing.is_set():
                self._resume()

    def handle_notification(self, note: jsonrpc.Notification) -> None:
        if note.method == "notifications/cancelled":
            params = note.params
            rid = params.get("requestId") if isinstance(params, dict) else None
            if jsonrpc.is_valid_id(rid):
                self.cancel(rid, params.get("reason"))
            return
        hook = self.server.notification_hooks.get(note.method)
        if hook is not None:
            try:
                hook(self, note.params)
            except Exception:
                log.exception("notification handler for %s failed", note.method)
        else:
            log.debug("ignored notification %s", note.method)

    def handle_response(self, resp: jsonrpc.Response) -> None:
        hook = self.server.response_hook
        try:
            handled = hook is not None and hook(self, resp)
        except Exception:
            log.exception("response handler failed for id %r", resp.id)
            return
        if not handled:
            log.debug("ignored a response with id %r", resp.id)

    # --- running requests -----------------------------------------------------------------

    async def _run(self, ctx: Context, awaitable: Awaitable[dict[str, Any]]) -> None:
        msg: dict[str, Any] | None
        try:
            result = await awaitable
            msg = result_response(ctx.request_id, result)
        except asyncio.CancelledError:
            msg = None
        except JsonRpcError as exc:
            msg = error_response(ctx.request_id, exc.code, exc.message, exc.data)
        except Exception:
            log.exception("internal error while handling %s", ctx.method)
            why = f"Internal error while handling {ctx.method}"
            msg = error_response(ctx.request_id, INTERNAL_ERROR, why)
        if msg is not None and not ctx.closed:
            ctx.closed = True
            try:
                data = encode(msg)
            except Exception:
                log.exception("the reply to %s could not be encoded as JSON", ctx.method)
                why = f"Internal error: the result of {ctx.method} is not JSON-encodable"
                data = encode(error_response(ctx.request_id, INTERNAL_ERROR, why))
            self.write(data)
        self._finish(ctx)

    def _finish(self, ctx: Context) -> None:
        entry = self.inflight.get(ctx.request_id)
        if entry is not None and entry[1] is ctx:
            del self.inflight[ctx.request_id]
            self._set_idle(ctx, False)
        if self._read_paused:
            self._release()

    def cancel(self, request_id: RequestId, reason: Any = None) -> bool:
        """Stop a request; nothing more is written for it. False when it is not in flight."""
        entry = self.inflight.pop(request_id, None)
        if entry is None:
            for req in self._pending:
                if req.id == request_id and type(req.id) is type(request_id):
                    self._pending.remove(req)
                    return True
            return False
        task, ctx = entry
        self._set_idle(ctx, False)
        ctx.closed = True
        task.cancel()
        log.debug("request %r cancelled (%s)", request_id, reason or "no reason given")
        self._finish(ctx)
        return True

    # --- output ---------------------------------------------------------------------------

    def send(self, msg: dict[str, Any], kind: Kind = Kind.REPLY) -> bool:
        """Write one message (raises `TypeError` if it is not JSON-encodable); see `write`."""
        return self.write(encode(msg), kind)

    def outbound(self) -> int:
        """Bytes written for the peer that the kernel has not taken yet."""
        return self._out_bytes + self._buffered()

    def write(self, data: bytes, kind: Kind = Kind.REPLY) -> bool:
        """Write one encoded line; False when it was not queued.

        Lines are written whole and in order. While other requests are in flight, lines
        written in one event-loop pass are coalesced into a single write at the end of it
        (one syscall for many pipelined replies); otherwise the line goes out at once.
        Past ``Server.max_outbound_bytes`` unread bytes, `mcpline.server.outbound.decide`
        says what happens instead; a closed output begins shutdown instead of raising.
        """
        if self.write_failed:
            return False
        limit = self.server.max_outbound_bytes
        waiting = self._out_bytes + self._buffered()
        if waiting + len(data) > limit:
            action = decide(kind, waiting, len(data), limit)
            if action is not Action.SEND:
                self._overflow(action)
                return False
        self._out.append(data)
        self._out_bytes += len(data)
        if len(self.inflight) > 1:
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self.loop.call_soon(self.flush)
        else:
            self.flush()
        return not self.write_failed

    def flush(self) -> None:
        """Hand every coalesced line to the transport now."""
        self._flush_scheduled = False
        out = self._out
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        self._out_bytes = 0
        if self.write_failed:
            return
        try:
            self._write(data)
        except (BrokenPipeError, ConnectionError, OSError):
            self.write_failed = True
            self.begin_shutdown("output closed")

    def send_for(self, ctx: Context, msg: dict[str, Any], kind: Kind = Kind.ADVISORY) -> bool:
        """Write a message that belongs to a request, unless it is already answered or cancelled."""
        return not ctx.closed and self.send(msg, kind)

    def _overflow(self, action: Action) -> None:
        if action is Action.DROP:
            if not self.dropped:
                log.warning(
                    "connection %s is not reading (%d bytes waiting): dropping progress and "
                    "log notifications",
                    self.name,
                    self.outbound(),
                )
            self.dropped += 1
        elif action is Action.END_STREAMS:
            log.warning(
                "connection %s is not reading (%d bytes waiting): ending its listen streams",
                self.name,
                self.outbound(),
            )
            for hook in self.overflow_hooks:
                hook(self)
        elif action is Action.DISCONNECT:
            self.disconnect(f"the peer is not reading ({self.outbound()} bytes waiting)")

    def disconnect(self, why: str) -> None:
        """Drop the peer now: discard unwritten output, close the transport, shut down."""
        if self.write_failed:
            return
        log.warning("connection %s closed: %s", self.name, why)
        self.write_failed = True
        self._out.clear()
        self._out_bytes = 0
        self._abort()
        self.begin_shutdown(why)

    def pause_writing(self) -> None:
        """The peer is not reading: stop reading more work until it catches up."""
        self._write_paused = True
        self._pause_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._read_paused:
            self._release()

    def list_changed(self, kind: str) -> None:
        hook = self.server.list_changed_hook
        if hook is not None:
            hook(self, kind)

    # --- shutdown ---------------------------------------------------------------------------

    def begin_shutdown(self, why: str = "") -> None:
        if not self.closing.is_set():
            log.debug("connection %s closing: %s", self.name, why)
            self.closing.set()

    async def close(self, grace: float | None = None) -> None:
        """Let in-flight work finish for ``grace`` seconds, cancel the rest, run close hooks."""
        grace = self.server.shutdown_grace if grace is None else grace
        for hook in self.close_hooks:
            try:
                res = hook(self)
                if res is not None:
                    await res
            except Exception:
                log.exception("close hook failed")
        loop = self.loop
        deadline = loop.time() + grace
        while self.inflight and grace > 0:
            left = deadline - loop.time()
            if left <= 0:
                break
            await asyncio.wait([t for t, _ in self.inflight.values()], timeout=left)
        if self._pending:
            log.debug("dropping %d requests that never started", len(self._pending))
            self._pending.clear()
        tasks = [t for t, _ in self.inflight.values()]
        for rid in list(self.inflight):
            self.cancel(rid, "shutting down")
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        self.flush()
        self.server.connections.discard(self)
