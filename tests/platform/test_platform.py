"""The platform layer's interface, the thread transports, and the POSIX paths of machines
other than this one (macOS: psutil or nothing) exercised here."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from mcpline import _platform
from mcpline._platform import _psutil, _threads, windows
from mcpline.check import runner

if not _platform.WINDOWS:  # the POSIX implementation refuses to load on Windows
    from mcpline._platform import posix

POSIX = pytest.mark.posix_only(reason="the POSIX implementation does not load on Windows")

# --- one interface ------------------------------------------------------------------------------


@POSIX
def test_both_implementations_provide_the_whole_interface() -> None:
    for impl in (posix, windows):
        missing = [name for name in _platform.API if not hasattr(impl, name)]
        assert missing == [], (impl.__name__, missing)
    tree_methods = {"descendants", "terminate", "kill", "alive", "end_strays", "release"}
    for tree in (posix.ProcessTree, windows.ProcessTree):
        assert tree_methods <= set(dir(tree)), tree


def test_the_implementation_is_chosen_once_at_import() -> None:
    impl = windows if sys.platform == "win32" else posix
    assert _platform.impl is impl
    assert impl.NAME == _platform.NAME
    if sys.platform.startswith("linux"):
        assert _platform.NAME == "linux"
    # The names are the implementation's own functions: nothing is dispatched per call.
    assert _platform.open_reader is impl.open_reader
    assert _platform.claim_stdio is impl.claim_stdio
    assert _platform.HOST_WATCHDOG is (impl is not windows)


def test_unix_sockets_fail_at_once_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (_platform.unix_sockets_unavailable() is None) is _platform.HAS_UNIX_SOCKETS
    monkeypatch.setattr(_platform, "HAS_UNIX_SOCKETS", False)
    why = _platform.unix_sockets_unavailable()
    assert why is not None and "AF_UNIX" in why and "tcp:HOST:PORT" in why


def test_a_listener_or_client_on_a_unix_address_without_af_unix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpline import Server
    from mcpline.client import Client, ConnectionLost
    from mcpline.transports.sockets import ListenError, serve_socket

    monkeypatch.setattr(_platform, "HAS_UNIX_SOCKETS", False)

    async def main() -> None:
        with pytest.raises(ListenError, match="unix: sockets are not available"):
            await serve_socket(Server("x"), "unix:/tmp/never.sock")
        async with Client.connect("unix:/tmp/never.sock") as client:
            with pytest.raises(ConnectionLost, match="cannot connect to unix:/tmp/never.sock"):
                await client.discover()

    asyncio.run(main())


# --- POSIX without /proc (macOS), with and without psutil -----------------------------------


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    if _platform.WINDOWS:
        pytest.skip("the POSIX implementation does not load on Windows")
    """This Linux as a POSIX system without /proc."""
    monkeypatch.setattr(posix, "LINUX", False)
    monkeypatch.setattr(posix, "NAME", "macos")


@pytest.fixture
def no_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_psutil, "module", lambda: None)


def test_psutil_is_an_extra_not_an_import_of_mcpline() -> None:
    code = "import sys, mcpline.client, mcpline.check.runner; print('psutil' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


@POSIX
@pytest.mark.usefixtures("no_proc")
def test_without_proc_psutil_measures_memory_and_finds_descendants() -> None:
    assert posix.memory_unavailable() is None
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        me = os.getpid()
        rss = posix.tree_rss(me)
        assert rss is not None and rss > 10 * 2**20
        found = posix.descendants(me)
        assert child.pid in found
        assert posix.running(child.pid, found[child.pid])
        assert not posix.running(child.pid, found[child.pid] + 1)
        rss_now, peak = posix.process_memory(me) or (0, 0)
        assert rss_now > 0 and posix.cpu_seconds(me) > 0
        assert "RAM" in posix.machine()
        ours = {child.pid: found[child.pid]}  # only ours: pytest has other children
        assert posix.ProcessTree(child.pid).end_strays(ours, force=False) == ours
        child.wait(5)
    finally:
        child.kill()
        child.wait()


@POSIX
@pytest.mark.usefixtures("no_proc", "no_psutil")
def test_without_proc_or_psutil_memory_is_not_measured_and_strays_are_not_tracked(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = posix.memory_unavailable()
    assert why is not None and "macos" in why and "mcpline[psutil]" in why
    assert posix.tree_rss(os.getpid()) is None
    assert runner.tree_rss(os.getpid()) is None and runner.memory_unavailable() == why
    monkeypatch.setattr(posix, "_noted_no_descendants", False)
    with caplog.at_level(logging.INFO, logger="mcpline.platform"):
        assert posix.descendants(os.getpid()) == {}
        assert posix.descendants(os.getpid()) == {}
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "setsid" in notes[0] and "mcpline[psutil]" in notes[0]
    with pytest.raises(OSError):
        posix.cpu_seconds(os.getpid())


def test_check_says_not_measured_instead_of_a_memory_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpline.check.fuzz import FuzzReport
    from mcpline.check.groups import fuzz as group

    monkeypatch.setattr(_platform, "memory_unavailable", lambda: "not measured on macos: why")
    monkeypatch.setattr(group, "fuzz_server", lambda *a, **k: (FuzzReport(), None))
    monkeypatch.setattr(group, "Fuzzer", lambda *a: None)
    added: list[tuple[Any, ...]] = []

    class Ctx:
        options = type("O", (), {"fuzz": 3, "seed": 1, "timeout": 5.0, "env": None, "cwd": None})
        argv = ["server"]
        facts: dict[str, Any] = {}

        def add(self, *args: Any) -> None:
            added.append(args)

        def spawn(self, *args: Any, **kw: Any) -> None:
            return None

    monkeypatch.setattr(group, "corpus", lambda ctx: None)
    group.run_fuzz(Ctx())  # type: ignore[arg-type]
    memory = [a for a in added if a[0] == "fuzz.memory"]
    assert memory and memory[0][1] == "SKIP" and memory[0][3] == "RSS not measured on macos: why"


# --- the thread transports (Windows' stdio, POSIX's regular files) ----------------------------


class Recorder(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self.events: list[str] = []
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: Any) -> None:
        self.events.append("made")

    def pause_writing(self) -> None:
        self.events.append("pause")

    def resume_writing(self) -> None:
        self.events.append("resume")

    def connection_lost(self, exc: Exception | None) -> None:
        self.events.append("lost")
        if not self.lost.done():
            self.lost.set_result(exc)


def test_the_writer_thread_pauses_above_the_high_mark_and_resumes_below_the_low() -> None:
    async def main() -> None:
        r, w = os.pipe()
        proto = Recorder()
        t = _threads.ThreadWriteTransport(w, proto, asyncio.get_running_loop())
        await asyncio.sleep(0)
        chunk = b"x" * 32 * 1024
        for _ in range(8):  # 256 KiB: more than the pipe and the high mark hold
            t.write(chunk)
        assert proto.events == ["made", "pause"]
        assert t.get_write_buffer_size() > _threads.HIGH_WATER
        got = bytearray()
        while len(got) < 8 * len(chunk):
            got += await asyncio.to_thread(os.read, r, 1 << 20)
        for _ in range(100):
            if "resume" in proto.events:
                break
            await asyncio.sleep(0.01)
        assert proto.events == ["made", "pause", "resume"]
        assert t.get_write_buffer_size() == 0
        t.close()
        assert await asyncio.wait_for(proto.lost, 5) is None
        with pytest.raises(BrokenPipeError):
            t.write(b"late")
        os.close(r)
        os.close(w)

    asyncio.run(main())


def test_the_writer_thread_reports_a_closed_reader_and_abort_drops_the_queue() -> None:
    async def main() -> None:
        r, w = os.pipe()
        os.close(r)
        proto = Recorder()
        t = _threads.ThreadWriteTransport(w, proto, asyncio.get_running_loop())
        t.write(b"nobody reads this\n")
        assert isinstance(await asyncio.wait_for(proto.lost, 5), BrokenPipeError)
        assert t.is_closing()
        os.close(w)

        r, w = os.pipe()
        proto = Recorder()
        t = _threads.ThreadWriteTransport(w, proto, asyncio.get_running_loop())
        for _ in range(4):
            t.write(b"y" * 100_000)  # more than the pipe holds: the thread blocks
        t.abort()
        assert await asyncio.wait_for(proto.lost, 5) is None
        assert t.get_write_buffer_size() == 0
        os.close(r)  # unblocks the thread, which then ends quietly
        await asyncio.sleep(0.1)
        assert proto.events.count("lost") == 1
        os.close(w)

    asyncio.run(main())


def test_the_reader_thread_honours_pause_and_resume() -> None:
    class Sink:
        def __init__(self) -> None:
            self.chunks: list[bytes] = []
            self.eof = asyncio.Event()

        def data_received(self, data: bytes) -> None:
            self.chunks.append(data)

        def eof_received(self) -> None:
            self.eof.set()

    async def main() -> None:
        r, w = os.pipe()
        sink = Sink()
        pause, resume, close = _threads.open_thread_reader(r, sink, asyncio.get_running_loop())
        os.write(w, b"one")
        for _ in range(100):
            if sink.chunks:
                break
            await asyncio.sleep(0.01)
        pause()
        os.write(w, b"two")  # the read already waiting delivers this one
        await asyncio.sleep(0.1)
        os.write(w, b"three")
        await asyncio.sleep(0.2)
        held = b"".join(sink.chunks)
        assert held == b"onetwo"
        resume()
        os.close(w)
        await asyncio.wait_for(sink.eof.wait(), 5)
        assert b"".join(sink.chunks) == b"onetwothree"
        close()
        os.close(r)

    t0 = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - t0 < 15


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX implementation")
def test_posix_shutdown_signals_give_back_the_handlers_that_were_there() -> None:
    import signal

    from mcpline._platform import posix

    def mine(signum: int, frame: Any) -> None:
        """A handler of the host's, there before the server's."""

    loop = asyncio.new_event_loop()
    got: list[signal.Signals] = []
    original = signal.signal(signal.SIGTERM, mine)
    before_int = signal.getsignal(signal.SIGINT)
    try:
        remove = posix.install_shutdown_signals(loop, got.append)
        assert signal.getsignal(signal.SIGTERM) is not mine  # the loop's own handler
        remove()
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is before_int
    finally:
        signal.signal(signal.SIGTERM, original)
        loop.close()
