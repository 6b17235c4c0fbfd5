"""The conformance suite's server fixture, served by the official Python SDK (``mcp``).

The suite's server scenarios call fixed names (tools ``test_*``, resources ``test://...``,
prompts ``test_*``) and check fixed shapes; this file implements that contract with the
``mcp`` SDK's ``MCPServer`` over Streamable HTTP, so the harness can be proven end to end
before mcpline has an HTTP server, and so mcpline's future results can be read beside the
official SDK's on the same suite.

One endpoint (``/mcp``) serves both eras: 2025-11-25 clients get the initialize handshake and
sessions, 2026-07-28 requests are stateless with per-request ``_meta``. Legacy-only behaviour
(server-to-client requests, logging/setLevel, resources/subscribe) is used when the request
came in on the handshake era; on the modern era input is asked for with
``InputRequiredResult``.

Run: ``python tests/conformance/sdk_fixture.py [--port N]``. It binds 127.0.0.1 (port 0 picks
a free one), prints ``listening on http://127.0.0.1:PORT/mcp`` on stdout once the socket
listens, then serves until killed.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import socket
import sys
import warnings
from collections import deque
from typing import Annotated, Any

import anyio
import uvicorn
from mcp.server import ServerRequestContext
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPError
from mcp.types import (
    AudioContent,
    CallToolResult,
    Completion,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequiredResult,
    JSONRPCMessage,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from pydantic import Field

# The SDK marks the handshake-era helpers (logging, sampling, elicitation requests) deprecated
# as of 2026-07-28; this fixture uses them only on the 2025-11-25 era, where they are current.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

MODERN = "2026-07-28"
MISSING_CAPABILITY = -32021

# A 1x1 PNG and a 1-sample 8 kHz mono WAV, built here rather than shipped as files.
PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f0b8"
        "d40000000049454e44ae426082"
    )
).decode()
WAV_SILENCE = base64.b64encode(
    b"RIFF"
    + (36 + 2).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")  # PCM
    + (1).to_bytes(2, "little")  # mono
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()

# The inputSchema the json-schema-2020-12 scenario expects verbatim (dialect, $defs with an
# $anchor, composition, conditionals, closed object).
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

CACHE = CacheHint(ttl_ms=60_000, scope="public")
server: MCPServer[Any] = MCPServer(
    name="mcpline-conformance-sdk-fixture",
    version="1.0.0",
    cache_hints={
        "tools/list": CACHE,
        "prompts/list": CACHE,
        "resources/list": CACHE,
        "resources/templates/list": CACHE,
        "resources/read": CACHE,
    },
)


def modern(ctx: Context) -> bool:
    return ctx.protocol_version == MODERN


def declared(ctx: Context, capability: str) -> bool:
    caps = ctx.client_capabilities
    return caps is not None and getattr(caps, capability, None) is not None


def missing_capability(capability: str) -> MCPError:
    return MCPError(
        code=MISSING_CAPABILITY,
        message=f"this tool needs the client's {capability} capability",
        data={"requiredCapabilities": {capability: {}}},
    )


def ask(message: str, properties: dict[str, Any], required: list[str]) -> ElicitRequest:
    return ElicitRequest(
        params=ElicitRequestFormParams(
            message=message,
            requested_schema={"type": "object", "properties": properties, "required": required},
        )
    )


def sample(text: str, max_tokens: int) -> CreateMessageRequest:
    return CreateMessageRequest(
        params=CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text=text))],
            max_tokens=max_tokens,
        )
    )


def answer(ctx: Context, key: str) -> Any:
    """The client's response to input request ``key`` on this round, or None."""
    responses = ctx.input_responses or {}
    return responses.get(key)


def elicited(response: Any) -> dict[str, Any] | None:
    """Accepted form content from an elicitation response, else None."""
    if isinstance(response, ElicitResult) and response.action == "accept":
        return dict(response.content or {})
    return None


# --- plain content tools (both eras) -------------------------------------------------------
# Registered first: the header-validation scenario calls the first listed tool with {}.


@server.tool(description="Returns one text block")
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Returns a 1x1 PNG image block")
def test_image_content() -> list[ImageContent]:
    return [ImageContent(type="image", data=PNG_1X1, mime_type="image/png")]


@server.tool(description="Returns a short WAV audio block")
def test_audio_content() -> list[AudioContent]:
    return [AudioContent(type="audio", data=WAV_SILENCE, mime_type="audio/wav")]


@server.tool(description="Returns an embedded text resource")
def test_embedded_resource() -> list[EmbeddedResource]:
    return [
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            ),
        )
    ]


@server.tool(description="Returns text, image and embedded resource blocks")
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PNG_1X1, mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ),
    ]


@server.tool(description="Always fails with isError: true")
def test_error_handling() -> CallToolResult:
    return CallToolResult(
        is_error=True,
        content=[
            TextContent(type="text", text="This tool intentionally returns an error for testing")
        ],
    )


@server.tool(description="Reports progress 0, 50, 100 of 100 when given a progress token")
async def test_tool_with_progress(ctx: Context) -> str:
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100)
        if step < 100:
            await anyio.sleep(0.05)
    return "Progress reported: 0, 50, 100 of 100"


@server.tool(description="Sends three info log messages, 50 ms apart")
async def test_tool_with_logging(ctx: Context) -> str:
    await ctx.log("info", "Tool execution started")
    await anyio.sleep(0.05)
    await ctx.log("info", "Tool processing data")
    await anyio.sleep(0.05)
    await ctx.log("info", "Tool execution completed")
    return "Logging finished: 3 messages sent"


@server.tool(
    description="Logs at info; on 2026-07-28 nothing may be sent unless _meta set a logLevel"
)
async def test_logging_tool(ctx: Context) -> str:
    await ctx.log("info", "test_logging_tool ran")
    return "logged one info message"


@server.tool(description="Echoes the Region header-mirrored parameter (x-mcp-header)")
def test_header_param(
    region: Annotated[
        str,
        Field(
            description="Mirrored as Mcp-Param-Region", json_schema_extra={"x-mcp-header": "Region"}
        ),
    ],
) -> str:
    return f"region={region}"


@server.tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool() -> str:
    return "ok"


# The SDK derives inputSchema from the signature; this one is the suite's literal schema.
server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = SCHEMA_2020_12  # type: ignore[union-attr]


# --- capability-gated tools ----------------------------------------------------------------


@server.tool(description="Needs the client's sampling capability (-32021 when undeclared)")
async def test_missing_capability(ctx: Context) -> str | InputRequiredResult:
    if not declared(ctx, "sampling"):
        raise missing_capability("sampling")
    if not modern(ctx):
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))],
            max_tokens=20,
        )
        return f"sampled: {getattr(result.content, 'text', '')}"
    if answer(ctx, "hello") is None:
        return InputRequiredResult(input_requests={"hello": sample("Say hi", 20)})
    return "sampling capability was declared and answered"


@server.tool(description="Needs elicitation; asks for input once, then completes")
async def test_streaming_elicitation(ctx: Context) -> str | InputRequiredResult:
    if not declared(ctx, "elicitation"):
        raise missing_capability("elicitation")
    content = elicited(answer(ctx, "confirm"))
    if content is None:
        return InputRequiredResult(
            input_requests={"confirm": ask("Continue?", {"ok": {"type": "boolean"}}, ["ok"])}
        )
    return f"confirmed: {content.get('ok')}"


# --- list mutations announced to subscriptions/listen streams --------------------------------

_generation = itertools.count(1)


def _dynamic_tool() -> str:
    return "dynamic tool"


def _dynamic_prompt() -> str:
    return "dynamic prompt"


@server.tool(description="Adds or removes test_dynamic_tool and announces tools list_changed")
async def test_trigger_tool_change(ctx: Context) -> str:
    names = {t.name for t in await server.list_tools()}
    if "test_dynamic_tool" in names:
        server.remove_tool("test_dynamic_tool")
    else:
        server.add_tool(_dynamic_tool, name="test_dynamic_tool", description="Added at run time")
    await ctx.notify_tools_changed()
    return f"tool list changed ({next(_generation)})"


@server.tool(description="Adds or removes test_dynamic_prompt and announces prompts list_changed")
async def test_trigger_prompt_change(ctx: Context) -> str:
    names = {p.name for p in await server.list_prompts()}
    if "test_dynamic_prompt" in names:
        server.remove_prompt("test_dynamic_prompt")
    else:
        server.prompt(name="test_dynamic_prompt", description="Added at run time")(_dynamic_prompt)
    await ctx.notify_prompts_changed()
    return f"prompt list changed ({next(_generation)})"


# --- handshake-era tools: server-to-client requests on the session -------------------------


@server.tool(description="Asks the client to sample a completion for `prompt`")
async def test_sampling(prompt: str, ctx: Context) -> str:
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
    )
    return f"LLM response: {getattr(result.content, 'text', '')}"


@server.tool(description="Asks the client for a username and an email")
async def test_elicitation(message: str, ctx: Context) -> str:
    result = await ctx.session.elicit_form(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@server.tool(description="Elicits a form whose fields all carry defaults (SEP-1034)")
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    result = await ctx.session.elicit_form(
        "Please review your profile",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {
                    "type": "string",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "default": True},
            },
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool(description="Elicits the five enum shapes of SEP-1330")
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    def titled(prefix: str, titles: list[str]) -> list[dict[str, str]]:
        return [{"const": f"{prefix}{i}", "title": t} for i, t in enumerate(titles, 1)]

    result = await ctx.session.elicit_form(
        "Pick some options",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": titled("value", ["First Option", "Second Option", "Third Option"]),
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": titled("value", ["First Choice", "Second Choice", "Third Choice"])
                    },
                },
            },
        },
    )
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool(description="Closes its SSE stream mid-call; the result is replayed on reconnect")
async def test_reconnection(ctx: Context) -> str:
    await anyio.sleep(0.1)
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    return "Reconnection test completed"


# --- 2026-07-28 multi-round-trip (InputRequiredResult) tools --------------------------------

NAME = ({"name": {"type": "string"}}, ["name"])


@server.tool(description="Round 1 asks for a name (key user_name); round 2 greets")
async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    content = elicited(answer(ctx, "user_name"))
    if content is None or "name" not in content:
        return InputRequiredResult(input_requests={"user_name": ask("What is your name?", *NAME)})
    return f"Hello, {content['name']}!"


@server.tool(description="Round 1 asks the client to sample (key capital_question)")
async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    response = answer(ctx, "capital_question")
    if response is None:
        request = sample("What is the capital of France?", 100)
        return InputRequiredResult(input_requests={"capital_question": request})
    return f"The model said: {getattr(response.content, 'text', '')}"


@server.tool(description="Round 1 asks for the client's roots (key client_roots)")
async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    response = answer(ctx, "client_roots")
    if not isinstance(response, ListRootsResult):
        return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})
    return "Roots: " + ", ".join(str(root.uri) for root in response.roots)


@server.tool(description="Round 1 returns requestState; round 2 checks it came back")
async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    if ctx.request_state == "confirm-pending" and elicited(answer(ctx, "confirm")) is not None:
        return "state-ok: requestState came back intact"
    return InputRequiredResult(
        input_requests={"confirm": ask("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])},
        request_state="confirm-pending",
    )


@server.tool(description="Round 1 asks for elicitation, sampling and roots at once")
async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    keys = ("user_name", "greeting", "client_roots")
    if ctx.request_state == "three-inputs" and all(answer(ctx, k) is not None for k in keys):
        return "all three inputs received"
    return InputRequiredResult(
        input_requests={
            "user_name": ask("What is your name?", *NAME),
            "greeting": sample("Generate a greeting", 50),
            "client_roots": ListRootsRequest(),
        },
        request_state="three-inputs",
    )


@server.tool(description="Three rounds: name, then colour, then done; requestState evolves")
async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    state = json.loads(ctx.request_state) if ctx.request_state else {"round": 0}
    if state.get("round") == 1 and (first := elicited(answer(ctx, "step1"))) is not None:
        color = ({"color": {"type": "string"}}, ["color"])
        return InputRequiredResult(
            input_requests={"step2": ask("Step 2: What is your favorite color?", *color)},
            request_state=json.dumps({"round": 2, "name": first.get("name")}),
        )
    if state.get("round") == 2 and (second := elicited(answer(ctx, "step2"))) is not None:
        return f"{state.get('name')} likes {second.get('color')}"
    return InputRequiredResult(
        input_requests={"step1": ask("Step 1: What is your name?", *NAME)},
        request_state=json.dumps({"round": 1}),
    )


@server.tool(description="requestState is sealed by the SDK; a tampered one is rejected")
async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    if ctx.request_state == "sealed-round-1" and elicited(answer(ctx, "confirm")) is not None:
        return "state-ok"
    return InputRequiredResult(
        input_requests={"confirm": ask("Proceed?", {"ok": {"type": "boolean"}}, ["ok"])},
        request_state="sealed-round-1",
    )


@server.tool(description="Asks only for the kinds of input the client declared it supports")
async def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
    if ctx.input_responses:
        return "inputs received"
    requests: dict[str, Any] = {}
    if declared(ctx, "elicitation"):
        requests["user_name"] = ask("What is your name?", *NAME)
    if declared(ctx, "sampling"):
        requests["greeting"] = sample("Generate a greeting", 50)
    if declared(ctx, "roots"):
        requests["client_roots"] = ListRootsRequest()
    if not requests:
        return "the client declared no input capability"
    return InputRequiredResult(input_requests=requests, request_state="capability-gated")


# --- resources ------------------------------------------------------------------------------


@server.resource(
    "test://static-text", name="static-text", description="Static text", mime_type="text/plain"
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary", name="static-binary", description="1x1 PNG", mime_type="image/png"
)
def static_binary() -> bytes:
    return base64.b64decode(PNG_1X1)


@server.resource(
    "test://template/{id}/data",
    name="template-data",
    description="JSON data for an id",
    mime_type="application/json",
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    description="A resource clients may subscribe to",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "Watched resource content"


# --- prompts --------------------------------------------------------------------------------


@server.prompt(description="A prompt without arguments")
def test_simple_prompt() -> list[UserMessage]:
    return [UserMessage("This is a simple prompt for testing.")]


@server.prompt(description="A prompt with two required arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt(description="A prompt embedding the resource named by resourceUri")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:  # noqa: N803
    embedded = EmbeddedResource(
        type="resource",
        resource=TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        ),
    )
    return [UserMessage(embedded), UserMessage("Please process the embedded resource above.")]


@server.prompt(description="A prompt carrying an image")
def test_prompt_with_image() -> list[UserMessage]:
    image = ImageContent(type="image", data=PNG_1X1, mime_type="image/png")
    return [UserMessage(image), UserMessage("Please analyze the image above.")]


@server.prompt(description="prompts/get that first asks for context (InputRequiredResult)")
async def test_input_required_result_prompt(
    ctx: Context,
) -> list[UserMessage] | InputRequiredResult:
    content = elicited(answer(ctx, "user_context"))
    if content is None:
        context = ({"context": {"type": "string"}}, ["context"])
        question = ask("What context should the prompt use?", *context)
        return InputRequiredResult(input_requests={"user_context": question})
    return [UserMessage(f"Use this context: {content.get('context')}")]


# --- completion and the handshake-era utility methods ---------------------------------------

WORDS = ["paris", "park", "party", "test", "testing", "tester"]


@server.completion()  # type: ignore[no-untyped-call,untyped-decorator]  # mcp 2.3.0: completion() has no annotations
async def complete(ref: Any, argument: Any, context: Any) -> Completion:
    values = [w for w in WORDS if w.startswith(argument.value or "")]
    return Completion(values=values, total=len(values), has_more=False)


async def set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


async def subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    return EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    return EmptyResult()


_lowlevel = server._lowlevel_server
_lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
_lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
_lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


# --- resumability for the handshake era's SSE polling ---------------------------------------


class MemoryEventStore(EventStore):
    """Keeps the last events of every stream so a client can resume with Last-Event-ID."""

    def __init__(self, keep: int = 1000) -> None:
        self._events: deque[tuple[str, str, JSONRPCMessage | None]] = deque(maxlen=keep)
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = f"{stream_id}:{next(self._ids)}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        ids = [event[0] for event in self._events]
        if last_event_id not in ids:
            return None
        stream_id = self._events[ids.index(last_event_id)][1]
        for event_id, stream, message in list(self._events)[ids.index(last_event_id) + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    args = parser.parse_args(argv)

    app = server.streamable_http_app(
        host="127.0.0.1", event_store=MemoryEventStore(), retry_interval=500
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    # Listen streams stay open until the client leaves; do not wait long for them on shutdown.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
