"""The official `mcp` 2.3.0 client, in its legacy (initialize) mode, against our everything server.

Its sampling/elicitation/roots callbacks answer the real server-to-client requests that our
framework makes from MRTR handlers written once.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_types as types  # noqa: E402
from mcp.client.session import ClientRequestContext, ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from ..proc import EXAMPLES  # noqa: E402
from .legacy_sdk import Recorder, first_text, legacy_session  # noqa: E402


def run(body: Any, recorder: Recorder) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLES / "servers" / "everything.py")]
    )
    legacy_session(params, "mcp-conformance-test-server", body, recorder, 30)


def test_tools_sampling_and_multi_round_elicitation() -> None:
    rec = Recorder()

    async def body(s: ClientSession) -> None:
        names = [t.name for t in (await s.list_tools()).tools]
        assert "test_sampling" in names and "test_input_required_result_multi_round" in names
        assert (
            first_text(await s.call_tool("test_simple_text", {}))
            == "This is a simple text response for testing."
        )
        assert (
            first_text(await s.call_tool("test_sampling", {"prompt": "hi"}))
            == "LLM response: Paris"
        )
        result = await s.call_tool("test_input_required_result_multi_round", {})
        assert first_text(result) == "Multi-round complete for Ada who likes green"
        result = await s.call_tool("test_input_required_result_multiple_inputs", {})
        assert first_text(result) == "Name: Ada; Greeting: Paris; Roots: 2"

    run(body, rec)
    assert rec.asked[:1] == ["sample"]
    assert "elicit:Step 1: What is your name?" in rec.asked
    assert "elicit:Step 2: What is your favorite color?" in rec.asked
    assert "roots" in rec.asked


def test_declined_elicitation() -> None:
    rec = Recorder(elicit_action="decline")

    async def body(s: ClientSession) -> None:
        result = await s.call_tool("test_input_required_result_elicitation", {})
        assert first_text(result) == "The user chose to decline."

    run(body, rec)


def test_conformance_tools_call_elicitation() -> None:
    """The 2025-11-25 conformance scenario ``tools-call-elicitation``: its client answers
    ``{username, email}`` whatever the requested schema (ours asks for ``response``). One
    dialog, then a result with content, not 16 dialogs and an error."""

    class Conformance(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.schemas: list[Any] = []

        async def elicit(
            self, context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult:
            assert isinstance(params, types.ElicitRequestFormParams)
            self.schemas.append(params.requested_schema)
            return types.ElicitResult(
                action="accept", content={"username": "testuser", "email": "test@example.com"}
            )

    rec = Conformance()

    async def body(s: ClientSession) -> None:
        result = await s.call_tool("test_elicitation", {"message": "Please provide your info"})
        assert result.is_error and result.content
        text = result.content[0]
        assert isinstance(text, types.TextContent)
        assert "did not match the requested schema" in text.text

    run(body, rec)
    assert len(rec.schemas) == 1


def test_ping_logging_resources_and_prompts() -> None:
    rec = Recorder()

    async def body(s: ClientSession) -> None:
        await s.send_ping()
        await s.set_logging_level("debug")
        assert first_text(await s.call_tool("test_tool_with_logging", {}))
        await s.subscribe_resource("test://watched-resource")
        await s.unsubscribe_resource("test://watched-resource")
        read = await s.read_resource("test://static-text")
        contents = read.contents[0]
        assert isinstance(contents, types.TextResourceContents)
        assert contents.text == "This is the content of the static text resource."
        with pytest.raises(MCPError) as err:
            await s.read_resource("test://nonexistent-resource-for-conformance-testing")
        assert err.value.code == -32002
        prompt = await s.get_prompt("test_input_required_result_prompt")
        message = prompt.messages[0].content
        assert isinstance(message, types.TextContent)
        assert message.text == "Prompt with context: c"

    run(body, rec)
    assert rec.logs[:1] == ["Log level set to: debug"]
    assert {"Tool execution started", "Tool processing data", "Tool execution completed"} <= set(
        rec.logs
    )
    assert "Subscribed to resource: test://watched-resource" in rec.logs
