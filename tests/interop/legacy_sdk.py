"""The official ``mcp`` client in its legacy (initialize) mode, with callbacks that answer the
server's sampling, elicitation and roots requests and record them."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import FileUrl


class Recorder:
    def __init__(self, elicit_action: Literal["accept", "decline", "cancel"] = "accept") -> None:
        self.asked: list[str] = []
        self.logs: list[Any] = []
        self.elicit_action = elicit_action

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(f"elicit:{params.message}")
        if self.elicit_action != "accept":
            return types.ElicitResult(action=self.elicit_action)
        return types.ElicitResult(
            action="accept", content={"name": "Ada", "color": "green", "context": "c"}
        )

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.asked.append("sample")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="m"
        )

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(
            roots=[
                types.Root(uri=FileUrl("file:///tmp/a")),
                types.Root(uri=FileUrl("file:///tmp/b")),
            ]
        )

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)


def legacy_session(
    params: StdioServerParameters,
    server_name: str,
    body: Callable[[ClientSession], Awaitable[None]],
    recorder: Recorder,
    timeout: float,
) -> None:
    """Initialize a session with the server ``params`` starts, check that it answers 2025-11-25
    as ``server_name``, then run ``body`` in it, all within ``timeout`` seconds."""

    async def main() -> None:
        with anyio.fail_after(timeout):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(
                    read,
                    write,
                    elicitation_callback=recorder.elicit,
                    sampling_callback=recorder.sample,
                    list_roots_callback=recorder.roots,
                    logging_callback=recorder.log,
                ) as session,
            ):
                init = await session.initialize()
                assert init.protocol_version == "2025-11-25"
                assert init.server_info.name == server_name
                await body(session)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anyio.run(main)


def first_text(result: Any) -> str:
    assert not result.is_error, result
    return str(result.content[0].text)
