"""A raw newline-JSON driver: spawns one server over pipes and measures it.

No MCP library is involved on this side: requests are pre-built byte strings and replies
are checked with a `msgspec` struct that leaves ``result`` undecoded. Server CPU (user +
system, every thread) and memory (RSS and its peak) come from `mcpline._platform`: Linux
``/proc``, elsewhere psutil (macOS keeps no peak). The pipes are read with `select`, so the
driver itself runs on POSIX only.

The driver speaks whatever era the server needs: it first sends ``server/discover`` with the
2026-07-28 per-request ``_meta``; a server that rejects it gets the ``initialize`` handshake
(done before anything is timed) and is then driven without ``_meta``.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from mcpline import _platform

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpline-bench-driver", "version": "1"},
}
TIMEOUT = 120.0


class BenchError(RuntimeError):
    """The server misbehaved (error reply, wrong id, exited early, no reply in time)."""


def _tail(fh: Any, limit: int = 2000) -> str:
    with contextlib.suppress(OSError, ValueError):
        fh.seek(0)
        tail: bytes = fh.read()[-limit:]
        return tail.decode(errors="replace")
    return ""


class _Reply(msgspec.Struct):
    id: Any = None
    result: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    error: Any = None
    method: str | None = None


_decode_reply = msgspec.json.Decoder(_Reply).decode
_encode = msgspec.json.Encoder().encode


@dataclass
class Usage:
    """CPU seconds (user + system, all threads) of a process."""

    cpu: float

    @staticmethod
    def of(pid: int) -> Usage:
        return Usage(_platform.cpu_seconds(pid))


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) in bytes; VmHWM is missing where the OS keeps no peak."""
    got = _platform.process_memory(pid)
    if got is None:
        return {}
    rss, peak = got
    return {"VmRSS": rss} if peak is None else {"VmRSS": rss, "VmHWM": peak}


@dataclass
class Spec:
    """How to start one server under test."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


class Session:
    """One running server process and the pipes to it."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.proc: subprocess.Popen[bytes] | None = None
        self.era = "modern"
        self.next_id = 1
        self._partial: list[bytes] = []
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process

    # --- process -------------------------------------------------------------------------

    def start(self) -> float:
        """Spawn the server and get its first reply; return seconds from spawn to that reply.

        The discover request is written right after spawning (it waits in the pipe), so the
        figure covers interpreter start, imports, server set-up and one reply.
        """
        env = {**os.environ, **self.spec.env}
        # As a user runs it: byte-compiled modules are cached (warm-up writes them).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            self.spec.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        os.set_blocking(self.rfd, False)
        discover = self._req_line(self._take_id(), "server/discover", {"_meta": META})
        reply = self.roundtrip(discover, check=False)
        elapsed = time.perf_counter() - t0
        if reply.error is not None:
            self._legacy_handshake()
        return elapsed

    def _legacy_handshake(self) -> None:
        """The server does not speak 2026-07-28: do the initialize handshake (untimed)."""
        params = {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "mcpline-bench-driver", "version": "1"},
        }
        reply = self.roundtrip(self._req_line(self._take_id(), "initialize", params), check=False)
        if reply.error is not None:
            raise BenchError(
                f"{self.spec.name}: neither server/discover nor initialize worked: {reply.error}"
            )
        self.send(_encode({"jsonrpc": "2.0", "method": "notifications/initialized"}) + b"\n")
        self.era = "legacy"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def usage(self) -> Usage:
        return Usage.of(self.pid)

    def memory(self) -> dict[str, int]:
        return memory(self.pid)

    def close_and_time_exit(self) -> float:
        """Close the server's stdin while it is idle; seconds until the process has exited."""
        assert self.proc is not None
        t0 = time.perf_counter()
        self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(f"{self.spec.name}: still running 30 s after stdin closed") from None
        elapsed = time.perf_counter() - t0
        self._cleanup()
        return elapsed

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        if self.proc is None:
            return
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._stderr.close()

    # --- requests ------------------------------------------------------------------------

    def _take_id(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i

    def _req_line(self, rid: int, method: str, params: dict[str, Any]) -> bytes:
        return _encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + b"\n"

    def call_template(self, tool: str, arguments: dict[str, Any]) -> Callable[[int], bytes]:
        """A fast builder of ``tools/call`` lines for this server's era: id -> bytes."""
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if self.era == "modern":
            params["_meta"] = META
        head = b'{"jsonrpc":"2.0","id":'
        tail = b',"method":"tools/call","params":' + _encode(params) + b"}\n"
        return lambda rid: head + str(rid).encode() + tail

    def call(self, tool: str, arguments: dict[str, Any]) -> _Reply:
        return self.roundtrip(self.call_template(tool, arguments)(self._take_id()))

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view) :]

    def roundtrip(self, line: bytes, *, check: bool = True) -> _Reply:
        """Send one request and wait for its reply."""
        want = _decode_reply(line).id
        _, kept = self.run(line, 1, check=check)
        if kept[-1].id != want:
            raise BenchError(f"{self.spec.name}: reply id {kept[-1].id!r}, expected {want!r}")
        return kept[-1]

    def run(
        self,
        initial: bytes,
        count: int,
        more: Callable[[int], tuple[bytes, int]] | None = None,
        *,
        check: bool = True,
        keep: int = 1,
    ) -> tuple[int, list[_Reply]]:
        """Write ``initial`` (``count`` requests); after each batch of ``n`` replies write
        ``more(n)`` (bytes, number of requests in them); stop when nothing is outstanding.

        Returns the number of replies and the last ``keep`` of them. Writes are non-blocking
        and interleaved with reads, so neither side can deadlock on a full pipe.
        Notifications from the server are skipped. With ``check``, an error reply or an
        ``isError`` result raises `BenchError`.
        """
        outq: list[memoryview] = [memoryview(initial)] if initial else []
        outstanding = count
        got = 0
        kept: list[_Reply] = []
        deadline = time.monotonic() + TIMEOUT
        os.set_blocking(self.wfd, False)
        try:
            while outstanding > 0:
                while outq:
                    try:
                        n = os.write(self.wfd, outq[0])
                    except BlockingIOError:
                        break
                    if n == len(outq[0]):
                        outq.pop(0)
                    else:
                        outq[0] = outq[0][n:]
                        break
                readable, _, _ = select.select([self.rfd], [self.wfd] if outq else [], [], 1.0)
                if not readable:
                    if outq:
                        continue
                    if time.monotonic() > deadline:
                        raise BenchError(
                            f"{self.spec.name}: no reply within {TIMEOUT} s ({got} so far)"
                        )
                    if self.proc is not None and self.proc.poll() is not None:
                        raise BenchError(
                            f"{self.spec.name}: exited with {self.proc.returncode}; "
                            f"stderr:\n{_tail(self._stderr)}"
                        )
                    continue
                batch = 0
                for line in self._read_lines():
                    reply = _decode_reply(line)
                    if reply.id is None and reply.method is not None:
                        continue  # a notification
                    failed = reply.error is not None or b'"isError":true' in bytes(reply.result)
                    if check and failed:
                        raise BenchError(f"{self.spec.name}: error reply {line[:300]!r}")
                    batch += 1
                    if keep:
                        if len(kept) >= keep:
                            kept.pop(0)
                        kept.append(reply)
                got += batch
                outstanding -= batch
                if batch and more is not None:
                    extra, k = more(batch)
                    if k:
                        outq.append(memoryview(extra))
                        outstanding += k
        finally:
            os.set_blocking(self.wfd, True)
        return got, kept

    def _read_lines(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = os.read(self.rfd, 1 << 20)
            except BlockingIOError:
                return
            if not chunk:
                raise BenchError(f"{self.spec.name}: stdout closed; stderr:\n{_tail(self._stderr)}")
            last = chunk.rfind(b"\n")
            if last < 0:
                self._partial.append(chunk)
                continue
            if self._partial:
                self._partial.append(chunk[: last + 1])
                data = b"".join(self._partial)
            else:
                data = chunk[: last + 1] if last + 1 < len(chunk) else chunk
            self._partial = [chunk[last + 1 :]] if last + 1 < len(chunk) else []
            lines = data.split(b"\n")
            lines.pop()
            yield from lines

    # --- figures -------------------------------------------------------------------------

    def throughput(
        self,
        duration: float,
        window: int,
        tool: str = "echo",
        arguments: dict[str, Any] | None = None,
    ) -> dict[str, float]:
        """Keep ``window`` calls in flight for about ``duration`` seconds (``window=1`` is
        sequential). Returns calls/s (wall), server CPU seconds per call, number of calls."""
        build = self.call_template(tool, arguments if arguments is not None else {"text": "hello"})
        nxt = [self.next_id]
        stop_at = 0.0

        def batch(n: int) -> bytes:
            first = nxt[0]
            nxt[0] += n
            return b"".join([build(i) for i in range(first, first + n)])

        def more(n: int) -> tuple[bytes, int]:
            if time.perf_counter() >= stop_at:
                return b"", 0
            return batch(n), n

        u0 = self.usage()
        t0 = time.perf_counter()
        stop_at = t0 + duration
        total, _ = self.run(batch(window), window, more, keep=0)
        elapsed = time.perf_counter() - t0
        u1 = self.usage()
        self.next_id = nxt[0]
        return {"calls": total, "per_s": total / elapsed, "cpu_per_call": (u1.cpu - u0.cpu) / total}

    def burst(self, count: int, tool: str, arguments: dict[str, Any]) -> tuple[float, list[_Reply]]:
        """Send ``count`` identical calls in one write; seconds until every reply is in."""
        build = self.call_template(tool, arguments)
        first = self.next_id
        self.next_id += count
        data = b"".join([build(i) for i in range(first, first + count)])
        t0 = time.perf_counter()
        _, kept = self.run(data, count, keep=count)
        return time.perf_counter() - t0, kept
