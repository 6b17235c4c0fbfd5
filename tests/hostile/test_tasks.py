"""The tasks extension under attack (docs/security.md, "The tasks extension").

* The SQLite task store's files (``.db``, ``-wal``, ``-shm``) are the owner's alone, whatever
  the umask of the server process: another local user cannot read a task's arguments.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..proc import ServerProcess
from ..tasks.wire import start, wait_status

Spawn = Callable[..., ServerProcess]

SERVER = '''
import os, sys

os.umask(int(os.environ["TEST_UMASK"], 8))

from mcpline import Server

server = Server("hostile-tasks", task_poll_interval_ms=50)


@server.tool(task=True)
def echo(data: str) -> str:
    """Answer with ``data``: a task whose arguments and result are as large as the caller's."""
    return data


if __name__ == "__main__":
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
