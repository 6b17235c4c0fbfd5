"""The client and tasks, against real server processes over stdio: `Client.call_tool` follows
a task transparently (polling at the server's interval, or by notifications), answers
``input_required`` through the input callbacks, raises as a plain call would; `start_tool`
and `TaskHandle` (status, result, cancel, resume by id after the host restarts); timeouts,
declined input, ``tasks=False``; and ``mcpline call``'s status display."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpline import (
    Client,
    InputDeclined,
    ProtocolError,
    RequestTimeout,
    ServerError,
    TaskCancelled,
)
from mcpline.cli.task_status import TaskStatus
from mcpline.client import TaskHandle
from mcpline.client.mrtr import result_type

from ..proc import EXAMPLES, FIXTURES

EVERYTHING = [str(EXAMPLES / "servers" / "everything.py")]
TASKS_SERVER = [str(FIXTURES / "tasks_server.py")]
MCPLINE = str(Path(sys.executable).parent / "mcpline")


class Wire:
    """Every line the client sends, with when it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, dict[str, Any]]] = []

    def __call__(self, direction: str, line: bytes) -> None:
        if direction == "send":
            self.sent.append((time.monotonic(), json.loads(line)))

    def methods(self, method: str) -> list[tuple[float, dict[str, Any]]]:
        return [(t, m) for t, m in self.sent if m.get("method") == method]


def client(args: list[str] = EVERYTHING, **options: Any) -> Client:
    return Client.stdio(sys.executable, args, **options)


def answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"confirm": True, "name": "Ann", "answer": "yes"}}


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def test_call_tool_follows_a_task_at_the_servers_interval() -> None:
    wire = Wire()
    seen: list[dict[str, Any]] = []

    async def main() -> dict[str, Any]:
        async with client(trace=wire) as c:
            return await c.call_tool("slow_compute", {"seconds": 1}, on_task=seen.append)

    result = asyncio.run(main())
    assert text(result) == "compute: done after 1s"
    assert "resultType" not in seen[0] and seen[0]["status"] == "working"
    assert seen[-1]["status"] == "completed" and seen[-1]["result"] == result
    polls = [t for t, _ in wire.methods("tasks/get")]
    assert polls, "the client polled tasks/get"
    gaps = [b - a for a, b in zip(polls, polls[1:], strict=False)]
    assert all(gap >= 0.2 for gap in gaps), gaps  # pollIntervalMs is 250: never faster
    call = wire.methods("tools/call")[0][1]
    assert call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] == {
        "io.modelcontextprotocol/tasks": {}
    }


def test_input_required_is_answered_through_the_callbacks_once_per_key() -> None:
    asked: list[str] = []

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return answer(params)

    async def main() -> tuple[str, str]:
        async with client(on_elicit=on_elicit) as c:
            one = await c.call_tool("confirm_delete", {"filename": "f.txt"})
            two = await c.call_tool("multi_input")
            return text(one), text(two)

    assert asyncio.run(main()) == ("Deleted f.txt", "Ann: proceeding")
    assert sorted(asked) == ["Delete f.txt?", "Proceed?", "Your name?"]  # each key once


def test_a_task_ends_as_a_plain_call_would() -> None:
    async def main() -> None:
        async with client() as c:
            failed = await c.call_tool("failing_job")
            assert failed["isError"] is True  # a tool error is a result
            with pytest.raises(ServerError) as err:
                await c.call_tool("protocol_error_job")
            assert err.value.code == -32603 and "backend went away" in err.value.message
            composed = await c.call_tool("greet", {"name": "x"})
            assert text(composed) == "Hello, x!"

    asyncio.run(main())


def test_start_tool_status_cancel_and_a_call_answered_at_once() -> None:
    async def main() -> None:
        async with client() as c:
            handle = await c.start_tool("slow_compute", {"seconds": 60})
            assert handle.task_id and not handle.done
            state = await handle.status()
            assert state["status"] == "working" and state["taskId"] == handle.task_id
            await handle.cancel()
            with pytest.raises(TaskCancelled):
                await handle.result()
            assert handle.done and handle.state["status"] == "cancelled"
            again = await TaskHandle.resume(c, handle.task_id)
            assert again.state["status"] == "cancelled"

            plain = await c.start_tool("greet", {"name": "now"})
            assert plain.task_id is None and plain.done
            assert text(await plain.result()) == "Hello, now!"

            with pytest.raises(ServerError) as err:
                await TaskHandle.resume(c, "no-such-task")
            assert err.value.code == -32602

    asyncio.run(main())


def test_a_task_resumes_by_id_after_the_host_restarts(tmp_path: Path) -> None:
    env = {"MCPLINE_TASK_STORE": f"sqlite:{tmp_path / 't.db'}"}

    async def first() -> str:
        async with client(TASKS_SERVER, env=env, on_elicit=answer) as c:
            handle = await c.start_tool("ask", {"question": "Later?"})
            while handle.state["status"] != "input_required":
                await asyncio.sleep(0.05)
                await handle.status()
            assert handle.task_id is not None
            return handle.task_id  # the host saves it, and goes away (so does its server)

    async def second(task_id: str) -> tuple[str, int]:
        async with client(TASKS_SERVER, env=env, on_elicit=answer) as c:
            handle = await TaskHandle.resume(c, task_id)
            assert handle.state["status"] == "input_required"
            result = await handle.result()
            return text(result), int(c.pid or 0)

    task_id = asyncio.run(first())
    got, pid = asyncio.run(second(task_id))
    assert got == f"yes (pid {pid})"


def test_listen_follows_notifications_instead_of_polling() -> None:
    wire = Wire()
    seen: list[str] = []

    async def main() -> dict[str, Any]:
        async with client(trace=wire) as c:
            return await c.call_tool(
                "slow_compute",
                {"seconds": 1},
                listen=True,
                on_task=lambda t: seen.append(t["status"]),
            )

    assert text(asyncio.run(main())) == "compute: done after 1s"
    assert seen[0] == "working" and seen[-1] == "completed"
    listens = wire.methods("subscriptions/listen")
    assert len(listens) == 1 and listens[0][1]["params"]["notifications"]["taskIds"]
    assert wire.methods("tasks/get") == []  # every state came as a notification


def test_a_task_that_outlasts_max_timeout_is_cancelled() -> None:
    wire = Wire()

    async def main() -> None:
        async with client(trace=wire) as c:
            with pytest.raises(RequestTimeout):
                await c.call_tool("slow_compute", {"seconds": 60}, max_timeout=0.5)

    asyncio.run(main())
    assert len(wire.methods("tasks/cancel")) == 1


def test_declined_input_cancels_the_task() -> None:
    wire = Wire()

    def decline(params: dict[str, Any]) -> dict[str, Any]:
        raise InputDeclined("the user closed the dialog")

    async def main() -> None:
        async with client(trace=wire, on_elicit=decline) as c:
            with pytest.raises(InputDeclined):
                await c.call_tool("confirm_delete", {"filename": "keep.txt"})

    asyncio.run(main())
    assert len(wire.methods("tasks/cancel")) == 1


def test_a_client_without_tasks_gets_plain_calls() -> None:
    async def main() -> None:
        async with client(tasks=False) as c:
            assert (
                text(await c.call_tool("slow_compute", {"seconds": 0})) == "compute: done after 0s"
            )
            with pytest.raises(ServerError) as err:
                await c.call_tool("failing_job")
            assert err.value.code == -32021

    asyncio.run(main())


def test_only_tools_call_may_be_answered_with_a_task() -> None:
    task = {"resultType": "task", "taskId": "t", "status": "working"}
    assert result_type(task, "tools/call") == "task"
    for method in ("prompts/get", "resources/read", "tools/list"):
        with pytest.raises(ProtocolError):
            result_type(task, method)


# --- mcpline call ------------------------------------------------------------------------------


def test_mcpline_call_prints_the_result_of_a_task() -> None:
    run = subprocess.run(
        [MCPLINE, "call", "slow_compute", "--args", '{"seconds": 0.3}', "--json", "--"]
        + [sys.executable, *EVERYTHING],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["content"][0]["text"] == "compute: done after 0.3s"
    assert "task" not in run.stderr  # off a terminal the status is not shown


def test_the_status_display_plain_and_rich(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    task = {"taskId": "abcdefgh1234", "status": "working", "statusMessage": "step 2 (2/4)"}
    plain = TaskStatus("tool", enabled=True)
    monkeypatch.setitem(sys.modules, "rich.progress", None)  # as if rich were not installed
    plain(task)
    plain({**task, "statusMessage": "\x1b]52;c;evil\x07 done"})
    plain.done()
    err = capsys.readouterr().err
    assert "tool [task abcdefgh] working: step 2 (2/4)" in err
    assert "\x1b]52" not in err and "\\x1b]52" in err  # server text is made safe
    monkeypatch.delitem(sys.modules, "rich.progress")
    fancy = TaskStatus("tool", enabled=True)
    fancy(task)
    assert fancy._live is not None
    fancy.done()
    assert fancy._live is None
    capsys.readouterr()
    off = TaskStatus("tool", enabled=False)
    off(task)
    off.done()
    assert capsys.readouterr().err == ""
