"""The tasks extension under attack (docs/security.md, "The tasks extension").

* The SQLite task store's files (``.db``, ``-wal``, ``-shm``) are the owner's alone, whatever
  the umask of the server process: another local user cannot read a task's arguments.
* A flood of 1 MiB tasks from one principal, over HTTP, against each store (memory, SQLite,
  Redis): the server answers -32010 once the principal's quota is full, its memory and the
  store stay bounded, and another principal is still served.
* Over stdio (no principal: the anonymous bucket), each write a caller can grow is bounded:
  new tasks, answers sent with ``tasks/update``, and results (a task whose result does not
  fit fails with the quota's error).
"""

from __future__ import annotations

import http.client
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpline.server.tasks.quota import MIB, TASK_QUOTA_EXCEEDED

from ..proc import ServerProcess
from ..redis_server import RedisServer
from ..tasks.wire import (
    FULL,
    accept,
    call,
    error,
    get,
    http_request,
    result,
    start,
    update,
    wait_status,
)
from ..transports.http_util import HttpServer, free_port, modern_headers, request_body

Spawn = Callable[..., ServerProcess]

SERVER = '''
import os, sys

os.umask(int(os.environ.get("TEST_UMASK", "022"), 8))

from mcpline import Context, Server, elicit

server = Server("hostile-tasks", task_poll_interval_ms=50)


@server.tool(task=True)
def echo(data: str) -> str:
    """Answer with ``data``: a task whose arguments and result are as large as the caller's."""
    return data


@server.tool(task=True)
def grow(data: str, times: int) -> str:
    """Answer with ``data`` repeated: a result larger than the arguments."""
    return data * times


@server.tool(task=True)
def ask(ctx: Context) -> str:
    """Ask for a line of text; answer with its length."""
    got = ctx.ask("line", elicit("A line?", {"line": str}))
    return str(len(got["content"]["line"]))


async def verify(token: str):
    return {"mallory-token": "mallory", "alice-token": "alice"}.get(token)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        from mcpline.transports.http.serve import serve

        serve(server, "127.0.0.1", int(sys.argv[2]), verify_token=verify)
    else:
        server.run()
'''

SECRET = "card=4111-1111-1111-1111"
NOBODY = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's own tmp_path is its owner's alone), so that
    only the modes of the files in it decide who reads them."""
    path = Path(tempfile.mkdtemp(prefix="mcpline-hostile-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


def server_script(directory: Path) -> Path:
    script = directory / "tasks_server.py"
    script.write_text(SERVER)
    script.chmod(0o644)
    return script


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def readable_by_nobody(path: Path) -> bool:
    """Whether ``cat`` running as ``nobody`` reads ``path``."""
    done = subprocess.run(
        ["cat", str(path)], user=NOBODY, group=NOBODY, capture_output=True, timeout=10
    )
    return done.returncode == 0


@pytest.mark.posix_only(reason="file modes and users")
@pytest.mark.parametrize("umask", ["000", "022"])
def test_sqlite_task_files_are_private(spawn: Spawn, shared_dir: Path, umask: str) -> None:
    db = shared_dir / "tasks.db"
    p = spawn(
        server_script(shared_dir),
        env={"TEST_UMASK": umask, "MCPLINE_TASK_STORE": f"sqlite:{db}"},
    )
    task_id = start(p, "echo", {"data": SECRET})
    assert wait_status(p, task_id)["status"] == "completed"
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    for path in files:
        assert path.exists(), path
        assert mode(path) == 0o600, (path, oct(mode(path)))
    assert SECRET.encode() in b"".join(path.read_bytes() for path in files)
    if os.geteuid() == 0:
        control = shared_dir / "control.txt"
        control.write_text("readable")
        control.chmod(0o644)
        assert readable_by_nobody(control), "nobody cannot read a 0644 file: the test is void"
        for path in files:
            assert not readable_by_nobody(path), f"another user read {path}"


@pytest.mark.posix_only(reason="file modes and users")
def test_existing_sqlite_files_are_made_private(spawn: Spawn, shared_dir: Path) -> None:
    """Files left 0644 by an earlier version are tightened when the store opens them."""
    db = shared_dir / "tasks.db"
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    keep = sqlite3.connect(db)  # holds the -wal and -shm open while the server starts
    keep.execute("SELECT * FROM t").fetchall()
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.chmod(0o644)
    p = spawn(
        server_script(shared_dir),
        env={"TEST_UMASK": "000", "MCPLINE_TASK_STORE": f"sqlite:{db}"},
    )
    task_id = start(p, "echo", {"data": SECRET})
    assert wait_status(p, task_id)["status"] == "completed"
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        assert mode(path) == 0o600, (path, oct(mode(path)))
    keep.close()
    conn.close()


# --- the quota over stdio: the anonymous bucket ---------------------------------------------


def test_anonymous_callers_share_one_bucket(spawn: Spawn, shared_dir: Path) -> None:
    p = spawn(
        server_script(shared_dir),
        env={"MCPLINE_TASK_QUOTA": "anonymous_tasks=3,anonymous_bytes=64KiB"},
    )
    ids = [start(p, "echo", {"data": str(i)}) for i in range(3)]
    err = error(call(p, "echo", {"data": "4"}))
    assert err["code"] == TASK_QUOTA_EXCEEDED
    assert err["message"].startswith("Task quota exceeded: callers without credentials")
    assert err["data"] == {"quota": "tasks", "bucket": "anonymous", "limit": 3}
    for task_id in ids:  # the tasks it holds are untouched
        assert wait_status(p, task_id)["status"] == "completed"


def test_task_bytes_are_bounded_at_every_write(spawn: Spawn, shared_dir: Path) -> None:
    p = spawn(server_script(shared_dir), env={"MCPLINE_TASK_QUOTA": "anonymous_bytes=32KiB"})
    limit = {"quota": "bytes", "bucket": "anonymous", "limit": 32 * 1024}
    err = error(call(p, "echo", {"data": "x" * 40_000}))  # arguments too large
    assert (err["code"], err["data"]) == (TASK_QUOTA_EXCEEDED, limit)

    task_id = start(p, "grow", {"data": "y" * 1000, "times": 40})  # a result too large
    ended = wait_status(p, task_id)
    assert ended["status"] == "failed"
    assert ended["error"] == {
        "code": TASK_QUOTA_EXCEEDED,
        "message": "Task quota exceeded: callers without credentials (together) may keep at "
        "most 32 KiB of task data at once; tasks count until their ttlMs ends",
        "data": limit,
    }

    task_id = start(p, "ask")  # answers too large
    assert wait_status(p, task_id, "input_required")["status"] == "input_required"
    refused = update(p, task_id, {"line": accept(line="z" * 40_000)})
    assert (error(refused)["code"], error(refused)["data"]) == (TASK_QUOTA_EXCEEDED, limit)
    assert result(get(p, task_id))["status"] == "input_required"  # still waiting
    assert "result" in update(p, task_id, {"line": accept(line="z" * 100)})
    done = wait_status(p, task_id)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "100"


# --- a flood over HTTP, against each store ----------------------------------------------------

FLOOD_SECONDS = 20.0
FLOOD_TASKS = 300
"""1 MiB tasks the flood sends at most: 300 MiB of arguments (and as much again of results)
that a server without a quota would keep for an hour."""
BOUND = 300 * MIB


def rss(pid: int) -> int:
    """The resident memory of ``pid`` (bytes), from /proc."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def flood(server: HttpServer, token: str, data: str) -> dict[str, Any]:
    """Four connections sending ``echo`` tasks of ``data`` until `FLOOD_TASKS` were sent or
    `FLOOD_SECONDS` passed; what the server answered, and its peak RSS while it did."""
    sent = iter(range(FLOOD_TASKS))
    lock = threading.Lock()
    outcome: dict[str, Any] = {"ok": 0, "refused": 0, "other": [], "peak": 0}
    stop = time.monotonic() + FLOOD_SECONDS
    body = request_body(1, "tools/call", {"name": "echo", "arguments": {"data": data}}, caps=FULL)
    headers = modern_headers("tools/call", "echo", authorization=f"Bearer {token}")

    def worker() -> None:
        conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
        try:
            while time.monotonic() < stop:
                with lock:
                    if next(sent, None) is None:
                        return
                conn.request("POST", server.path, body=body, headers=headers)
                resp = conn.getresponse()
                msg = json.loads(resp.read())
                with lock:
                    if "result" in msg and msg["result"].get("resultType") == "task":
                        outcome["ok"] += 1
                    elif msg.get("error", {}).get("code") == TASK_QUOTA_EXCEEDED:
                        outcome["refused"] += 1
                    else:
                        outcome["other"].append((resp.status, str(msg)[:200]))
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        outcome["peak"] = max(outcome["peak"], rss(server.proc.pid))
        time.sleep(0.05)
    for t in threads:
        t.join()
    return outcome


def store_bytes(kind: str, where: Any) -> int:
    """What the store holds: the SQLite files' size, Redis's used memory (0 for memory)."""
    if kind == "sqlite":
        return sum(p.stat().st_size for p in where.parent.glob(where.name + "*"))
    if kind == "redis":
        import redis

        client = redis.Redis.from_url(where.url)
        try:
            return int(client.info("memory")["used_memory"])
        finally:
            client.close()
    return 0


@pytest.mark.linux_only(reason="reads the server's RSS from /proc")
@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_a_flood_of_large_tasks_is_bounded(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = {"MCPLINE_TASK_QUOTA": ""}
    where: Any = None
    if kind == "sqlite":
        where = tmp_path / "tasks.db"
        env["MCPLINE_TASK_STORE"] = f"sqlite:{where}"
    elif kind == "redis":
        where = request.getfixturevalue("redis_server")
        assert isinstance(where, RedisServer)
        env["MCPLINE_TASK_STORE"] = where.url
    script = server_script(tmp_path)
    server = HttpServer([sys.executable, str(script), "--http", str(free_port())], env)
    try:
        data = "m" * (MIB - 200)  # a 1 MiB request body
        got = flood(server, "mallory-token", data)
        assert not got["other"], got["other"][:3]
        assert got["ok"] == 64 - 1  # 64 MiB a principal, less what each record adds
        assert got["refused"] > 0
        held = store_bytes(kind, where)
        after = rss(server.proc.pid)
        print(
            f"\n{kind}: {got['ok']} tasks made, {got['refused']} refused; server RSS peak "
            f"{got['peak'] / MIB:.0f} MiB, after {after / MIB:.0f} MiB; store {held / MIB:.0f} MiB"
        )
        assert got["peak"] < BOUND and after < BOUND
        assert held < BOUND
        served = http_request(
            server,
            "tools/call",
            {"name": "echo", "arguments": {"data": "hello"}},
            token="alice-token",
        )
        task_id = result(served)["taskId"]
        deadline = time.monotonic() + 15
        while True:
            task = result(
                http_request(server, "tasks/get", {"taskId": task_id}, token="alice-token")
            )
            if task["status"] == "completed" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert task["result"]["content"][0]["text"] == "hello"
    finally:
        server.stop()
