"""Process lifecycle: lazy/eager start, the binding's shutdown sequence, whole-tree
termination, no zombies, and servers not outliving a dead host."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcpline.client import Client
from mcpline.client.process import ProcessChannel

from ..proc import FIXTURES
from .util import QUICKSTART, Fake, kill_if_alive, pid_alive, run, wait_dead

pytestmark = pytest.mark.linux_only(
    reason="process groups, setsid descendants, and /proc to see them gone"
)


def _reaped(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def test_eager_start_and_clean_exit_on_stdin_eof() -> None:
    async def main() -> None:
        client = Client.stdio(sys.executable, [str(QUICKSTART)], eager=True)
        async with client:
            pid = client.pid
            assert pid is not None and pid_alive(pid)
            t0 = time.monotonic()
        elapsed = time.monotonic() - t0
        assert elapsed < 10  # well before close_grace + term_grace would have run out
        assert client.returncode == 0  # it left on stdin EOF, no signal needed
        assert _reaped(pid)

    run(main())


def test_server_ignoring_stdin_eof_gets_sigterm(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "ignore-eof")

    async def main() -> None:
        async with Client.stdio(**fake.client_kwargs(close_grace=0.5, term_grace=60.0)) as c:
            await c.discover()
            pid = c.pid
            t0 = time.monotonic()
        assert 0.4 <= time.monotonic() - t0 < 20  # SIGTERM ended it, not a SIGKILL at 60 s
        assert pid is not None and _reaped(pid)

    run(main())


def test_server_ignoring_sigterm_gets_sigkill(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "ignore-term")

    async def main() -> None:
        async with Client.stdio(**fake.client_kwargs(close_grace=0.3, term_grace=0.5)) as c:
            await c.discover()
            pid = c.pid
            t0 = time.monotonic()
        assert 0.7 <= time.monotonic() - t0 < 15
        assert pid is not None and _reaped(pid)

    run(main())


def test_wrapper_grandchild_is_terminated_too(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "ignore-term")
    # `; true` stops the shell from exec-ing: the server is the shell's child.
    script = " ".join(shlex.quote(a) for a in [sys.executable, *fake.argv]) + "; true"

    async def main() -> int:
        async with Client.stdio(
            "/bin/sh", ["-c", script], env=fake.env, close_grace=0.3, term_grace=0.5
        ) as c:
            await c.discover()
            shell = c.pid
            grandchild = fake.pid()
            assert shell is not None and grandchild != shell
            t0 = time.monotonic()
        assert time.monotonic() - t0 < 15
        assert _reaped(shell)
        return grandchild

    grandchild = run(main())
    try:
        assert wait_dead(grandchild, 3.0), "the wrapped server outlived the client"
    finally:
        kill_if_alive(grandchild)


HOST = r"""
import asyncio, json, sys
from mcpline.client import Client

async def main():
    env = json.loads(sys.argv[2])
    c = Client.stdio(sys.executable, [sys.argv[1], "ignore-term"], env=env)
    await c.discover()
    print("ready", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def test_servers_do_not_outlive_a_killed_host(tmp_path: Path) -> None:
    import json

    fake = Fake(tmp_path)
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, fake.argv[0], json.dumps(fake.env)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    server_pid = 0
    try:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == b"ready"
        server_pid = fake.pid()
        assert pid_alive(server_pid)
        host.kill()  # no chance to clean up
        host.wait(5)
        # The server ignores SIGTERM and stdin EOF: only the watchdog's SIGKILL ends it.
        assert wait_dead(server_pid, 10.0), "the server outlived its host"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(5)
        if server_pid:
            kill_if_alive(server_pid)


def test_unknown_command_is_a_clear_non_retriable_error() -> None:
    from mcpline.client import ConnectionLost

    async def main() -> None:
        async with Client.stdio("/nonexistent/mcp-server") as c:
            try:
                await c.discover()
            except ConnectionLost as exc:
                assert not exc.retriable and "cannot start" in str(exc)
            else:
                raise AssertionError("expected ConnectionLost")

    run(main())


def test_sigterm_not_needed_for_wellbehaved_group(tmp_path: Path) -> None:
    """A server that exits on EOF is never signalled (its exit code is its own)."""
    fake = Fake(tmp_path)

    async def main() -> None:
        async with Client.stdio(**fake.client_kwargs()) as c:
            await c.discover()
            link = c.links.link
            assert link is not None
            chan = link.channel
            assert isinstance(chan, ProcessChannel)
        assert chan.returncode == 0
        assert not pid_alive(fake.pid())

    run(main())


def test_descendant_that_called_setsid_is_ended_too(tmp_path: Path) -> None:
    pidfile = tmp_path / "setsid.pid"

    async def main() -> int:
        env = {"SETSID_PIDFILE": str(pidfile)}
        async with Client.stdio(
            sys.executable, [str(FIXTURES / "setsid_server.py")], env=env, term_grace=1.0
        ) as c:
            assert (await c.call_tool("ping"))["content"][0]["text"] == "pong"
            deadline = time.monotonic() + 10
            while not pidfile.exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            escaped = int(pidfile.read_text())
            assert os.getsid(escaped) == escaped != c.pid  # its own session and group
        return escaped

    escaped = run(main())
    try:
        assert wait_dead(escaped, 5.0), "the setsid descendant outlived the client"
    finally:
        kill_if_alive(escaped)


SETSID_HOST = r"""
import asyncio, sys
from mcpline.client import Client

async def main():
    c = Client.stdio(sys.executable, [sys.argv[1]])
    await c.call_tool("ping")
    print("ready", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def test_setsid_descendant_does_not_outlive_a_killed_host(tmp_path: Path) -> None:
    pidfile = tmp_path / "setsid.pid"
    env = {**os.environ, "SETSID_PIDFILE": str(pidfile), "SETSID_LINGER": "1"}
    host = subprocess.Popen(
        [sys.executable, "-c", SETSID_HOST, str(FIXTURES / "setsid_server.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    escaped = 0
    try:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        escaped = int(pidfile.read_text())
        host.kill()  # no chance to clean up: only the watchdog is left
        host.wait(5)
        assert wait_dead(escaped, 10.0), "the setsid descendant outlived its host"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(5)
        if escaped:
            kill_if_alive(escaped)
