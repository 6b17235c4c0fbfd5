"""The tests' raw driver with the server in this process: no interpreter start per test.

`MemoryServer` has the interface of `tests.proc.ServerProcess` (send, send_raw, request,
request_msg, call, read, read_until, drain, close_stdin, stop, raw_out, problems, legacy,
methods) and judges every line the same way: the bytes the server writes go through the same
`on_line` (framing, UTF-8, one JSON object per line) and `judge` (the official schema, via
`wirecheck`) as a real process's stdout, in order, on a reader thread of their own.

The server file is imported under a private module name (its ``__main__`` block does not
run) and its module-level ``server`` is served through the real
`mcpline.server.connection.Connection` on an event loop in a background thread, wired as
`mcpline.transports.stdio.serve_fds` wires it: inside ``server.runtime.services.running()`` (the
lifespan hook and the worker threads), read pausing honoured, ``eof_received`` when the test
closes "stdin", then ``await conn.close()`` before the output ends.

Input reaches the connection in pipe-sized chunks, one per loop pass; output is never
blocked (there is no pipe to fill up, so the outbound bound is a process test's business).
What only a process has is not here, and asking for it raises `ProcessOnly`: its stderr, its
exit status (`wait`), signals, a working directory, and a file that calls ``Server.run()``
when imported (it would serve this process's own stdin and stdout). ``env`` and the
script's arguments are in place while the file is imported (what a server reads at its top
level, such as ``Server(page_size=int(os.environ[...]))``) and restored afterwards; a server
that reads them later, prints, or writes to fd 1 needs a process. Such a test runs on one
(``@pytest.mark.driver("process")``, see conftest).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import os
import queue
import sys
import threading
import traceback
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcpline.server.connection import Connection
from mcpline.server.server import Server
from mcpline.transports.stdio import run_loop

from . import proc

_load_lock = threading.Lock()
_names = itertools.count(1)

_EOF = object()
PIPE_CHUNK = 64 * 1024
"""Input reaches the connection in pieces of at most this size, as reads of a pipe do."""


class ProcessOnly(RuntimeError):
    """The test asked for something only a real server process has."""


def _refuse_run(self: Server, *args: Any, **kw: Any) -> None:
    # Serving at import would take this process's own stdin and stdout.
    raise ProcessOnly("the file calls Server.run() when imported: it needs a server process")


def load_server(
    script: str | Path, args: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> tuple[Server, str]:
    """Import ``script`` as a fresh module and return (its ``server``, the module name).

    ``sys.argv`` is ``[script, *args]`` and ``env`` is in ``os.environ`` while it runs.
    """
    path = Path(script).resolve()
    name = f"_mcpline_memory_{next(_names)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    with _load_lock:
        saved_argv, saved_env, saved_run = sys.argv, dict(os.environ), Server.run
        sys.argv = [str(path), *args]
        os.environ.update(env or {})
        Server.run = _refuse_run  # type: ignore[method-assign]
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            Server.run = saved_run  # type: ignore[method-assign]
            sys.argv = saved_argv
            os.environ.clear()
            os.environ.update(saved_env)
    server = getattr(module, "server", None)
    if not isinstance(server, Server):
        del sys.modules[name]
        raise TypeError(f"{path} has no module-level mcpline Server named 'server'")
    return server, name


class MemoryServer(proc.ServerProcess):
    """A server file served in this process; every line it writes is judged as on a pipe."""

    def __init__(
        self,
        script: str | Path,
        *args: str,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        if cwd is not None:
            raise ProcessOnly("cwd= needs a server process")
        self._init_driver()
        self._init_state(
            [str(script), *args],
            label="memory",
            record=False,
            sink=self._inbox.append,
            validate=True,
            stderr_keep=None,
        )
        # The server, its loop and the two "pipes".
        self.server, self._module = load_server(script, args, env)
        self._input: deque[bytes | object] = deque()
        """Chunks written to "stdin" that the connection has not taken (reading paused)."""
        self._input_closed = False
        self._read_paused = False
        self._delivery_scheduled = False
        self._output: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: Connection | None = None
        self._started = threading.Event()
        self.error: BaseException | None = None
        """What the serving thread raised, if anything (also logged to stderr)."""
        self._threads = [
            threading.Thread(target=self._serve_thread, name="memory-server", daemon=True),
            threading.Thread(target=self._read_output, name="memory-stdout", daemon=True),
        ]
        for t in self._threads:
            t.start()
        self._started.wait(10)
        if self.error is not None:
            raise RuntimeError(f"the in-memory server failed to start: {self.error!r}")

    # --- the server side (its own thread and event loop) --------------------------------

    def _serve_thread(self) -> None:
        try:
            run_loop(self._serve())
        except BaseException as exc:  # reported, like a crash on a process's stderr
            self.error = exc
            traceback.print_exc(file=sys.stderr)
        finally:
            self._started.set()
            self._output.put(None)  # the output closes when serving ends, however it ends

    async def _serve(self) -> None:
        server = self.server
        async with server.runtime.services.running():
            conn = Connection(
                server,
                self._output.put,
                pause_reading=self._pause,
                resume_reading=self._resume,
                abort=self._abort,
                name="memory",
            )
            self._conn = conn
            self._loop = asyncio.get_running_loop()
            self._started.set()
            try:
                await conn.closing.wait()
            finally:
                self._input.clear()
                await conn.close()
                self._output.put(None)  # stdout closes before the lifespan hook exits

    def _abort(self) -> None:
        self._output.put(None)  # the peer is dropped: its "stdout" ends here

    def _pause(self) -> None:
        self._read_paused = True

    def _resume(self) -> None:
        self._read_paused = False
        self._schedule_delivery()

    def _take_input(self, chunks: Iterable[bytes | object]) -> None:
        self._input.extend(chunks)
        self._schedule_delivery()

    def _schedule_delivery(self) -> None:
        if self._input and not self._read_paused and not self._delivery_scheduled:
            self._delivery_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._deliver)

    def _deliver(self) -> None:
        """Hand the connection one chunk of its input per loop pass, as a pipe transport
        does, unless it paused reading; the end of input comes after the last chunk."""
        self._delivery_scheduled = False
        conn = self._conn
        assert conn is not None
        if self._read_paused or not self._input:
            return
        chunk = self._input.popleft()
        if chunk is _EOF:
            conn.eof_received()
            return
        assert isinstance(chunk, bytes)
        conn.data_received(chunk)
        self._schedule_delivery()

    # --- the client side ------------------------------------------------------------------

    def _read_output(self) -> None:
        """Judge what the server wrote as the pipe reader does."""
        self._read_lines(iter(self._output.get, None))

    def send_raw(self, data: bytes) -> bool:
        loop = self._loop
        with self._write_lock:
            if self._input_closed or loop is None or not self._threads[0].is_alive():
                raise BrokenPipeError(f"the server no longer reads its input: {self.argv}")
            chunks = [bytes(data[i : i + PIPE_CHUNK]) for i in range(0, len(data), PIPE_CHUNK)]
            try:
                loop.call_soon_threadsafe(self._take_input, chunks)
            except RuntimeError:  # the loop has closed meanwhile
                raise BrokenPipeError(
                    f"the server no longer reads its input: {self.argv}"
                ) from None
        return True

    def close_stdin(self) -> None:
        with self._write_lock:
            if self._input_closed:
                return
            self._input_closed = True
            if self._loop is not None:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._take_input, [_EOF])

    def stop(self, grace: float = 3.0) -> int:
        """Close the input and wait for the server to finish (0), as for a process; 1 if
        serving raised, -1 if it is still running after ``grace`` + 1 s (the thread is a
        daemon and is left behind)."""
        self.close_stdin()
        serving, reading = self._threads
        serving.join(grace)
        if serving.is_alive() and self._loop is not None and self._conn is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._conn.begin_shutdown, "stopped by the test")
            serving.join(1.0)
        reading.join(5.0)
        sys.modules.pop(self._module, None)
        if serving.is_alive():
            return -1
        return 1 if self.error is not None else 0

    # --- what only a process has -----------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._threads[0].is_alive()

    @property
    def proc(self) -> Any:  # type: ignore[override]
        raise ProcessOnly("the in-memory driver has no process (use driver('process'))")

    @property
    def tree(self) -> Any:  # type: ignore[override]
        raise ProcessOnly("the in-memory driver has no process tree (use driver('process'))")

    @property
    def stderr(self) -> str:
        raise ProcessOnly("the in-memory driver has no stderr (use driver('process'))")

    @property
    def stderr_text(self) -> str:
        raise ProcessOnly("the in-memory driver has no stderr (use driver('process'))")

    def wait(self, timeout: float = 5.0) -> int:
        raise ProcessOnly("the in-memory driver has no exit status (use driver('process'))")

    def wait_exit(self, timeout: float) -> int | None:
        raise ProcessOnly("the in-memory driver has no exit status (use driver('process'))")

    def signal(self, sig: int = 15) -> None:
        raise ProcessOnly("the in-memory driver takes no signals (use driver('process'))")

    def rss_bytes(self) -> int | None:
        raise ProcessOnly("the in-memory driver has no process of its own")
