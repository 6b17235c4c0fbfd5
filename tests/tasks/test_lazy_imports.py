"""A server without tasks pays nothing for them: over real stdio, a plain server (run directly
or with ``mcpline run``) has not imported ``sqlite3``, ``redis`` or any tasks module after
answering requests; a server with a task tool loads the tasks modules at its first task and
``sqlite3``/``redis`` only when its store is one of those."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ..proc import ServerProcess
from .wire import FULL, call, result, wait_status

Spawn = Callable[..., ServerProcess]
MCPLINE = str(Path(sys.executable).parent / "mcpline")
WATCHED = (
    "sqlite3",
    "_sqlite3",
    "redis",
    "mcpline.server.tasks.manager",
    "mcpline.server.tasks.store",
    "mcpline.server.tasks.sqlite_store",
    "mcpline.server.tasks.redis_store",
)
SOURCE = """
import sys
from mcpline import Server

server = Server("lazy")
WATCHED = {watched!r}


@server.tool{options}
def loaded() -> str:
    \"\"\"The watched modules this process has imported.\"\"\"
    return " ".join(sorted(m for m in WATCHED if m in sys.modules))


if __name__ == "__main__":
    server.run()
"""


def write_server(tmp_path: Path, options: str = "") -> Path:
    path = tmp_path / "lazy_server.py"
    path.write_text(SOURCE.format(watched=WATCHED, options=options))
    return path


def loaded(p: ServerProcess) -> list[str]:
    r = result(call(p, "loaded", caps={}))
    return str(r["content"][0]["text"]).split()


@pytest.mark.parametrize("how", ["python", "mcpline run"])
def test_a_server_without_tasks_imports_none_of_them(
    spawn: Spawn, tmp_path: Path, how: str
) -> None:
    script = write_server(tmp_path)
    p = spawn(script) if how == "python" else ServerProcess([MCPLINE, "run", str(script)])
    try:
        caps = result(p.request("server/discover", caps=FULL))["capabilities"]
        assert "extensions" not in caps
        result(p.request("tools/list", caps=FULL))
        assert loaded(p) == []
        err = p.request("tasks/get", {"taskId": "x"}, caps=FULL)["error"]
        assert err["code"] == -32601  # no tasks here: not even their methods
        assert loaded(p) == []
    finally:
        if how != "python":
            p.stop()


def test_a_task_tool_loads_the_tasks_modules_at_its_first_task(
    spawn: Spawn, tmp_path: Path
) -> None:
    p = spawn(write_server(tmp_path, "(task=True)"))
    result(p.request("server/discover", caps=FULL))
    assert loaded(p) == []  # a call without the extension is a plain call
    created = result(call(p, "loaded", caps=FULL))
    end = wait_status(p, created["taskId"])
    names = end["result"]["content"][0]["text"].split()
    assert names == ["mcpline.server.tasks.manager", "mcpline.server.tasks.store"]


def test_sqlite_loads_with_a_sqlite_store(spawn: Spawn, tmp_path: Path) -> None:
    env = {"MCPLINE_TASK_STORE": f"sqlite:{tmp_path / 'x.db'}"}
    p = spawn(write_server(tmp_path, "(task=True)"), env=env)
    assert loaded(p) == []
    created = result(call(p, "loaded", caps=FULL))
    names = wait_status(p, created["taskId"])["result"]["content"][0]["text"].split()
    assert "sqlite3" in names and "mcpline.server.tasks.sqlite_store" in names
    assert "redis" not in names
    assert json.dumps(names)
