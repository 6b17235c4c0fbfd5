"""The raw driver for one server process under test, shared by `mcpline check` and the tests.

The checker must see every byte the server writes, so this does not use the mcpline client:
it writes lines built with `mcpline.wire.encode` / `mcpline.jsonrpc`, splits stdout on
``\\n`` itself (keeping blank lines, ``\\r`` and unterminated tails that a lenient reader
would hide) and judges each line: UTF-8, one JSON object, valid against the official schema.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .. import __version__, _platform
from ..jsonrpc import MISSING, is_valid_id, notification, request
from ..protocol.meta import has_modern_meta, modern_meta
from ..spec import LOG_LEVEL_KEY, MODERN, PROGRESS_TOKEN_KEY
from ..wire import encode
from . import schema
from .schema import LEGACY

CLIENT_INFO = {"name": "mcpline-check", "version": __version__}
STDERR_KEEP = 64 * 1024
MAX_PROBLEMS_KEPT = 50

_decoder = msgspec.json.Decoder()


def idkey(value: Any) -> tuple[str, Any]:
    """A dictionary key that keeps ``1`` and ``"1"`` apart (JSON ids are typed); ids of any
    other JSON type (a broken peer may send them) are keyed by their encoding."""
    t = type(value)
    if t is str or t is int or value is None:
        return (t.__name__, value)
    return ("json", encode(value))


@dataclass
class Received:
    """One message read from the server's stdout."""

    seq: int
    t: float
    msg: dict[str, Any]

    @property
    def is_response(self) -> bool:
        return "method" not in self.msg and ("result" in self.msg or "error" in self.msg)

    @property
    def is_anonymous_error(self) -> bool:
        return self.is_response and self.msg.get("id") is None and "error" in self.msg


@dataclass
class LineProblem:
    """A stdout line that broke a framing or schema rule."""

    kind: str
    """``impure`` (not UTF-8 / not one JSON object / blank / unterminated), ``crlf``,
    ``schema`` or ``request`` (a modern server sent a JSON-RPC request)."""
    detail: str
    excerpt: str


@dataclass
class ProcessStats:
    lines: int = 0
    problems: list[LineProblem] = field(default_factory=list)
    problem_counts: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    """Lines that were one JSON object."""
    impure_before_first_message: int = 0
    """Impure lines written before the first JSON object: typically output at start-up."""


def _chunks(fd: int) -> Iterator[bytes]:
    """What can be read from ``fd`` until its end (or an error, taken as the end)."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def _excerpt(raw: bytes, limit: int = 160) -> str:
    text = repr(raw[:limit])
    return text + (f" … ({len(raw)} bytes)" if len(raw) > limit else "")


class ServerProcess:
    """A server launched over pipes; every stdout line is recorded and judged.

    With ``record=False`` messages are not kept; each is passed to ``sink`` (called under
    ``cond``) instead: the fuzzer, the soak and the tests' driver use this. A subclass may
    change how lines are taken in (`on_line`), how a message is judged (`judge`) and how a
    broken line is recorded (`on_problem`); `mcpline check` uses the methods as they are.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        label: str = "server",
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        record: bool = True,
        sink: Callable[[dict[str, Any]], None] | None = None,
        validate: bool = True,
        stderr_keep: int | None = STDERR_KEEP,
    ) -> None:
        self._init_state(
            argv,
            label=label,
            record=record,
            sink=sink,
            validate=validate,
            stderr_keep=stderr_keep,
        )
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            bufsize=0,
            **_platform.spawn_options(),
        )
        try:
            self.tree = _platform.adopt(self.proc.pid)
        except OSError:
            self.proc.kill()
            self.proc.wait()
            raise
        self._threads = [
            threading.Thread(target=self._read_stdout, name=f"{label}-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"{label}-stderr", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _init_state(
        self,
        argv: list[str],
        *,
        label: str,
        record: bool,
        sink: Callable[[dict[str, Any]], None] | None,
        validate: bool,
        stderr_keep: int | None,
    ) -> None:
        """Everything but the process: what a driver without one (``tests/memory.py``) sets
        up as well."""
        self.argv = argv
        self.label = label
        self.record = record
        self.sink = sink
        self.validate = validate
        self.stats = ProcessStats()
        self.received: list[Received] = []
        self.responses: dict[tuple[str, Any], list[Received]] = {}
        self.sent_methods: dict[tuple[str, Any], str] = {}
        self.sent_era: dict[tuple[str, Any], str] = {}
        self.progress_tokens: set[tuple[str, Any]] = set()
        self.log_requested = False
        self.legacy_session = False
        self.stdout_closed = False
        self.stderr_keep = stderr_keep
        self.stderr_tail = bytearray()
        """The last ``stderr_keep`` bytes of stderr (all of it when ``stderr_keep`` is None)."""
        self.cond = threading.Condition()
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()

    # --- reading --------------------------------------------------------------------------

    def on_problem(self, kind: str, detail: str, raw: bytes) -> None:
        """Record a line that broke a rule (see `LineProblem.kind`)."""
        st = self.stats
        st.problem_counts[kind] = st.problem_counts.get(kind, 0) + 1
        if kind == "impure" and not st.messages:
            st.impure_before_first_message += 1
        if len(st.problems) < MAX_PROBLEMS_KEPT:
            st.problems.append(LineProblem(kind, detail, _excerpt(raw)))

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        self._read_lines(_chunks(self.proc.stdout.fileno()))

    def _read_lines(self, chunks: Iterable[bytes]) -> None:
        """Split what the server wrote, to its end, into lines and judge each; then mark its
        stdout closed."""
        pending = bytearray()
        for chunk in chunks:
            pending += chunk
            start = 0
            while True:
                nl = pending.find(b"\n", start)
                if nl < 0:
                    break
                self._take(bytes(pending[start:nl]))
                start = nl + 1
            if start:
                del pending[:start]
        if pending:
            self._take(bytes(pending), terminated=False)
        with self.cond:
            self.stdout_closed = True
            self.cond.notify_all()

    def _take(self, line: bytes, terminated: bool = True) -> None:
        try:
            self.on_line(line, terminated)
        except Exception as exc:  # a checker bug must not stop the reading
            self.on_problem("checker", f"internal checker error {exc!r}", line)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in _chunks(self.proc.stderr.fileno()):
            self.stderr_tail += chunk
            keep = self.stderr_keep
            if keep is not None and len(self.stderr_tail) > keep:
                del self.stderr_tail[: len(self.stderr_tail) - keep]

    def on_line(self, raw: bytes, terminated: bool = True) -> None:
        """Take in one stdout line (without its ``\\n``; ``terminated=False`` for a tail that
        never got one): judge it, then record it or pass it to the sink."""
        if not terminated:
            self.on_problem("impure", "output ended with an unterminated line", raw)
            return
        self.stats.lines += 1
        line = raw
        if line.endswith(b"\r"):
            self.on_problem("crlf", "line ends with \\r\\n instead of \\n", raw)
            line = line[:-1]
        if not line.strip():
            self.on_problem("impure", "blank line", raw)
            return
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.on_problem("impure", f"not UTF-8 ({exc.reason} at byte {exc.start})", raw)
            return
        try:
            msg = _decoder.decode(line)
        except (msgspec.DecodeError, ValueError, RecursionError) as exc:
            self.on_problem("impure", f"not one JSON value ({str(exc)[:80]})", raw)
            return
        if type(msg) is not dict:
            self.on_problem("impure", f"a JSON {type(msg).__name__}, not an object", raw)
            return
        self.stats.messages += 1
        self.judge(msg, raw)
        if not self.record:
            with self.cond:
                if self.sink is not None:
                    self.sink(msg)
                self.cond.notify_all()
            return
        if self.sink is not None:
            self.sink(msg)
        with self.cond:
            rec = Received(len(self.received), time.monotonic(), msg)
            self.received.append(rec)
            if rec.is_response:
                self.responses.setdefault(idkey(msg.get("id")), []).append(rec)
            self.cond.notify_all()

    def judge(self, msg: dict[str, Any], raw: bytes) -> None:
        """Check one message against the schema of its era (and flag server requests)."""
        if "method" in msg and "id" in msg and not self.legacy_session:
            self.on_problem("request", f"server sent a request ({msg.get('method')!r})", raw)
        if not self.validate:
            return
        method = None
        version = LEGACY if self.legacy_session else MODERN
        if "method" not in msg and "id" in msg:
            key = idkey(msg["id"])
            method = self.sent_methods.get(key) or None
            version = self.sent_era.get(key, MODERN)
        for p in schema.message_problems(msg, method=method, version=version):
            self.on_problem("schema", p, raw)

    # --- writing --------------------------------------------------------------------------

    def next_id(self) -> int:
        return next(self._ids)

    def send_raw(self, data: bytes) -> bool:
        """Write bytes to stdin; False when the server no longer reads."""
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            with self._write_lock:
                view = memoryview(data)
                while view:
                    view = view[stdin.write(view) :]
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def note_request(self, msg: dict[str, Any]) -> None:
        """Remember a request's method and era so its response can be schema-checked."""
        rid = msg.get("id", MISSING)
        if rid is MISSING or not is_valid_id(rid) or not isinstance(msg.get("method"), str):
            return
        key = idkey(rid)
        known = self.sent_methods.get(key, msg["method"])
        # An id reused for another method: its reply cannot be matched to one result type.
        self.sent_methods[key] = msg["method"] if known == msg["method"] else ""
        params = msg.get("params")
        self.sent_era[key] = MODERN if has_modern_meta(params) else LEGACY
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict):
            if PROGRESS_TOKEN_KEY in meta:
                self.progress_tokens.add(idkey(meta[PROGRESS_TOKEN_KEY]))
            if LOG_LEVEL_KEY in meta:
                self.log_requested = True

    def send(self, msg: dict[str, Any]) -> bool:
        self.note_request(msg)
        return self.send_raw(encode(msg))

    def request_msg(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        id: Any = None,
        meta: dict[str, Any] | None | Any = MISSING,
    ) -> dict[str, Any]:
        """A request; modern ``_meta`` is added unless ``meta`` is given (None = no _meta)."""
        p = dict(params or {})
        if meta is MISSING:
            p.setdefault("_meta", modern_meta(MODERN, {}, CLIENT_INFO))
        elif meta is not None:
            p["_meta"] = meta
        rid = self.next_id() if id is None else id
        return request(rid, method, p)

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 5.0, **kw: Any
    ) -> dict[str, Any] | None:
        """Send a request and wait for its response (None on timeout)."""
        msg = self.request_msg(method, params, **kw)
        self.send(msg)
        return self.wait_response(msg["id"], timeout)

    def notify(self, method: str, params: Any = MISSING) -> bool:
        return self.send(notification(method, params))

    # --- waiting --------------------------------------------------------------------------

    def mark(self) -> int:
        with self.cond:
            return len(self.received)

    def since(self, mark: int) -> list[Received]:
        with self.cond:
            return self.received[mark:]

    def wait_response(self, id: Any, timeout: float) -> dict[str, Any] | None:
        key = idkey(id)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = self.responses.get(key)
                if got:
                    return got[0].msg
                left = deadline - time.monotonic()
                if left <= 0 or self.stdout_closed:
                    return None
                self.cond.wait(min(left, 0.5))

    def wait_until(self, pred: Callable[[], bool], timeout: float) -> bool:
        """Wait (under the lock) until ``pred()`` holds; False on timeout or closed stdout."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0 or self.stdout_closed:
                    return pred()
                self.cond.wait(min(left, 0.5))
            return True

    def responses_for(self, id: Any) -> list[dict[str, Any]]:
        with self.cond:
            return [r.msg for r in self.responses.get(idkey(id), [])]

    # --- process control ------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError, ValueError), self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def signal(self, sig: int = signal.SIGTERM) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)

    def stop(self, grace: float = 3.0) -> int:
        """Close stdin, wait, then SIGTERM and SIGKILL the process group (Windows: Ctrl+Break,
        then ``TerminateJobObject``); reap everything."""
        self.close_stdin()
        code = self.wait_exit(grace)
        if code is None:
            self.tree.terminate()
            code = self.wait_exit(1.0)
        if code is None:
            self.tree.kill()
            code = self.proc.wait()
        # Children that outlived the server (same session, or job) are ours to clean up.
        self.tree.kill()
        self.tree.release()
        for t in self._threads:
            t.join(5.0)
        for stream in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
        return code

    def rss_bytes(self) -> int | None:
        """Resident memory of the server and its descendants (`tree_rss`)."""
        return tree_rss(self.proc.pid)

    @property
    def stderr_text(self) -> str:
        return self.stderr_tail.decode("utf-8", "replace")


def tree_rss(pid: int) -> int | None:
    """Resident memory of ``pid`` and its descendants (a launcher may wrap the real server):
    Linux ``/proc``, elsewhere psutil; None when not measured (`memory_unavailable` says why)."""
    return _platform.tree_rss(pid)


def memory_unavailable() -> str | None:
    """Why `tree_rss` cannot measure memory on this machine (None when it can)."""
    return _platform.memory_unavailable()
