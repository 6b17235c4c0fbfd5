"""The conformance suite's "everything" server: `python examples/servers/everything.py` (stdio)
or `mcpline run examples/servers/everything.py --http 127.0.0.1:8000` (Streamable HTTP).

Same tools, resources, templates, prompts and completions as the official fixture
(``examples/servers/typescript/everything-server.ts`` in modelcontextprotocol/conformance),
with the fixture's known deviations fixed, plus four stdio extras: ``sleep``,
``stray_print``, ``trigger_list_changed`` and ``touch_resource``, and the tools the suite's
``tasks-*`` scenarios call (the tasks extension, SEP-2663): ``greet``, ``slow_compute``,
``failing_job``, ``protocol_error_job``, ``confirm_delete``, ``multi_input`` and
``test_tool_with_task``.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Annotated, Any

from mcpline import (
    ContentBlock,
    Context,
    InputRequest,
    InputRequired,
    JsonRpcError,
    McpHeader,
    Server,
    Task,
    ToolError,
    ToolResult,
    audio,
    elicit,
    embedded_text,
    image,
    list_roots,
    sample,
    text,
    user,
)
from mcpline.spec import INTERNAL_ERROR

PNG_1x1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "=="
)
WAV_MIN = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
LOGGER = "conformance-test-server"
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}

server = Server(
    "everything-stateless-server",
    version="1.0.0",
    list_ttl_ms=300_000,
    cache_scope="public",
    read_ttl_ms=300_000,
    read_cache_scope="private",
    task_poll_interval_ms=250,
)


# --- content tools (scenarios tools-call-*) ------------------------------------------------


@server.tool(description="Tests simple text content response", input_schema=NO_ARGS)
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Tests image content response", input_schema=NO_ARGS)
def test_image_content() -> ContentBlock:
    return image(PNG_1x1, "image/png")


@server.tool(description="Tests audio content response", input_schema=NO_ARGS)
def test_audio_content() -> ContentBlock:
    return audio(WAV_MIN, "audio/wav")


@server.tool(description="Tests embedded resource content response", input_schema=NO_ARGS)
def test_embedded_resource() -> ContentBlock:
    return embedded_text(
        "test://embedded-resource", "This is an embedded resource content.", "text/plain"
    )


@server.tool(
    description="Tests response with multiple content types (text, image, resource)",
    input_schema=NO_ARGS,
)
def test_multiple_content_types() -> list[ContentBlock]:
    return [
        text("Multiple content types test:"),
        image(PNG_1x1, "image/png"),
        embedded_text(
            "test://mixed-content-resource",
            json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            "application/json",
        ),
    ]


@server.tool(
    description="Tests tool that emits log messages during execution", input_schema=NO_ARGS
)
async def test_tool_with_logging(ctx: Context) -> str:
    for i, message in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if i:
            await asyncio.sleep(0.05)
        ctx.log("info", message, logger=LOGGER)
    return "Tool with logging executed successfully"


@server.tool(description="Tests tool that reports progress notifications", input_schema=NO_ARGS)
async def test_tool_with_progress(ctx: Context) -> str:
    for i, step in enumerate((0, 50, 100)):
        if i:
            await asyncio.sleep(0.05)
        ctx.report_progress(step, 100, f"Completed step {step} of 100")
    token = ctx.meta.progress_token if ctx.meta else None
    return (
        str(token)
        if token is not None
        else "Progress test completed (the request carried no progressToken)"
    )


@server.tool(description="Tests error response handling", input_schema=NO_ARGS)
def test_error_handling() -> ToolResult:
    return ToolResult(
        content=[text("This tool intentionally returns an error for testing")], is_error=True
    )


@server.tool(
    description=(
        "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close the "
        "stream mid-call and send the result after client reconnects."
    ),
    input_schema=NO_ARGS,
)
async def test_reconnection(ctx: Context) -> str:
    # In a legacy HTTP session the stream ends here and the result is replayed when the
    # client reconnects with Last-Event-ID; elsewhere the result simply arrives.
    await asyncio.sleep(0.1)
    ctx.close_sse_stream()
    await asyncio.sleep(0.3)
    return (
        "Reconnection test completed successfully. If you received this, the client properly "
        "reconnected after stream closure."
    )


# --- input tools (both eras): written once with ctx.ask; a legacy (initialize) session gets
# real sampling/createMessage and elicitation/create requests, a modern one an
# InputRequiredResult -------------------------------------------------------------------------


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _outcome(prefix: str, answer: dict[str, Any]) -> str:
    content = _compact(answer.get("content") or {})
    return f"{prefix}: action={answer['action']}, content={content}"


def _sampled_text(answer: dict[str, Any]) -> str:
    """The text of a CreateMessageResult (its content is one block or a list of them)."""
    content = answer.get("content")
    for block in content if isinstance(content, list) else [content]:
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str):
            return text
    return "No response"


@server.tool(description="Tests server-initiated sampling (LLM completion request)")
def test_sampling(ctx: Context, prompt: Annotated[str, "The prompt to send to the LLM"]) -> str:
    answer = ctx.ask("llm", sample(prompt, 100))
    return f"LLM response: {_sampled_text(answer)}"


@server.tool(description="Tests server-initiated elicitation (user input request)")
def test_elicitation(ctx: Context, message: Annotated[str, "The message to show the user"]) -> str:
    schema = {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    answer = ctx.ask("response", elicit(message, schema))
    return _outcome("User response", answer)


SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


@server.tool(description="Tests elicitation with default values per SEP-1034", input_schema=NO_ARGS)
def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    request = elicit("Please review and update the form fields with defaults", SEP1034_SCHEMA)
    answer = ctx.ask("form", request)
    return _outcome("Elicitation completed", answer)


def _titled(values: list[str], titles: list[str]) -> list[dict[str, str]]:
    return [{"const": v, "title": t} for v, t in zip(values, titles, strict=True)]


SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": _titled(
                ["value1", "value2", "value3"], ["First Option", "Second Option", "Third Option"]
            ),
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": _titled(
                    ["value1", "value2", "value3"],
                    ["First Choice", "Second Choice", "Third Choice"],
                )
            },
        },
    },
    "required": [],
}


@server.tool(
    description="Tests elicitation with enum schema improvements per SEP-1330", input_schema=NO_ARGS
)
def test_elicitation_sep1330_enums(ctx: Context) -> str:
    request = elicit("Please select options from the enum fields", SEP1330_SCHEMA)
    answer = ctx.ask("enums", request)
    return _outcome("Elicitation completed", answer)


JSON_SCHEMA_2020_12: dict[str, Any] = {
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


@server.tool(
    description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    input_schema=JSON_SCHEMA_2020_12,
)
def json_schema_2020_12_tool(**arguments: Any) -> str:
    return "JSON Schema 2020-12 tool called with: " + json.dumps(arguments, separators=(",", ":"))


@server.tool(description="Echoes its region, which HTTP clients mirror as Mcp-Param-Region")
def test_header_param(
    region: Annotated[str, McpHeader("Region"), "The region (the Mcp-Param-Region header)"],
) -> str:
    return f"region={region}"


@server.tool(description="Test tool requiring sampling", input_schema=NO_ARGS)
def test_missing_capability(ctx: Context) -> str:
    ctx.require_capability("sampling")
    return "Success"


# --- MRTR tools (input-required-result-*): requestState is sealed by the framework (HMAC,
# bound to the tool and its arguments, expiring); a tampered state never reaches these functions


def _ask_name(message: str = "What is your name?") -> InputRequest:
    return elicit(message, {"name": str})


def _confirm() -> InputRequest:
    return elicit("Please confirm", {"ok": bool})


def _declined(answer: dict[str, Any]) -> str | None:
    if answer["action"] != "accept":
        return f"The user chose to {answer['action']}."
    return None


@server.tool(
    description="MRTR: returns InputRequiredResult with elicitation request", input_schema=NO_ARGS
)
def test_input_required_result_elicitation(ctx: Context) -> str:
    answer = ctx.ask("user_name", _ask_name())  # no requestState: none is needed
    return _declined(answer) or f"Hello, {answer['content']['name']}!"


@server.tool(
    description="MRTR: returns InputRequiredResult with sampling request", input_schema=NO_ARGS
)
def test_input_required_result_sampling(ctx: Context) -> str:
    answer = ctx.ask("sample_request", sample("What is the capital of France?", 100))
    return f"Sampling result: {_sampled_text(answer)}"


@server.tool(
    description="MRTR: returns InputRequiredResult with roots/list request", input_schema=NO_ARGS
)
def test_input_required_result_list_roots(ctx: Context) -> str:
    answer = ctx.ask("roots_request", list_roots())
    return f"Found {len(answer['roots'])} root(s)"


@server.tool(
    description="MRTR: returns InputRequiredResult with requestState", input_schema=NO_ARGS
)
def test_input_required_result_request_state(ctx: Context) -> str:
    state = {"kind": "request-state"}
    if ctx.state != state:
        raise InputRequired({"confirm": _confirm()}, state)
    answer = ctx.ask("confirm", _confirm())
    if answer["action"] == "accept" and answer["content"].get("ok") is True:
        return "state-ok: requestState validated"
    raise InputRequired({"confirm": _confirm()}, state)


@server.tool(
    description="MRTR: returns InputRequiredResult with multiple input requests",
    input_schema=NO_ARGS,
)
def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    requests = {
        "user_name": _ask_name(),
        "greeting": sample("Generate a greeting", 50),
        "client_roots": list_roots(),
    }
    state = {"kind": "multiple-inputs"}
    if ctx.state != state:
        raise InputRequired(requests, state)
    got = ctx.ask_all(requests)
    name = got["user_name"].get("content", {}).get("name", "unknown")
    greeting = _sampled_text(got["greeting"])
    return f"Name: {name}; Greeting: {greeting}; Roots: {len(got['client_roots']['roots'])}"


STEP1 = "Step 1: What is your name?"
STEP2 = "Step 2: What is your favorite color?"


@server.tool(description="MRTR: multi-round InputRequiredResult workflow", input_schema=NO_ARGS)
def test_input_required_result_multi_round(ctx: Context) -> str:
    state = ctx.state if isinstance(ctx.state, dict) else {}
    if state.get("round") == 1 and "step1" in ctx.input_responses:
        answer = ctx.ask("step1", _ask_name(STEP1))
        name = answer.get("content", {}).get("name", "unknown")
        raise InputRequired({"step2": elicit(STEP2, {"color": str})}, {"round": 2, "name": name})
    if state.get("round") == 2 and "step2" in ctx.input_responses:
        color = ctx.ask("step2", elicit(STEP2, {"color": str})).get("content", {}).get("color")
        return f"Multi-round complete for {state['name']} who likes {color}"
    raise InputRequired({"step1": _ask_name(STEP1)}, {"round": 1})


@server.tool(description="MRTR: HMAC-signed requestState integrity test", input_schema=NO_ARGS)
def test_input_required_result_tampered_state(ctx: Context) -> str:
    # A modified requestState is answered with -32602 by the framework before this runs.
    state = {"kind": "tamper-test"}
    if ctx.state == state and "confirm" in ctx.input_responses:
        ctx.ask("confirm", _confirm())
        return "integrity-ok: state verified"
    raise InputRequired({"confirm": _confirm()}, state)


@server.tool(
    description="MRTR: respects client capabilities in inputRequests", input_schema=NO_ARGS
)
def test_input_required_result_capabilities(ctx: Context) -> str:
    if ctx.input_responses:
        return f"capabilities-ok: received {','.join(ctx.input_responses)}"
    wanted = {
        "elicit_input": elicit("Elicitation input", {"value": str}),
        "sample_input": sample("Sample request", 50),
    }
    if not any(ctx.can_ask(r) for r in wanted.values()):
        return "No supported capabilities declared"
    # Undeclared requests are left out rather than refused with -32021.
    raise InputRequired(wanted, {"kind": "capabilities-test"}, drop_undeclared=True)


@server.tool(
    description="Diagnostic tool validating response progress streams", input_schema=NO_ARGS
)
def test_streaming_elicitation(ctx: Context) -> str:
    # Progress only when the request asked for it; never a server-to-client request.
    ctx.report_progress(50, 100, "Streaming in progress")
    return "Streaming complete"


@server.tool(description="Diagnostic logging validator tool", input_schema=NO_ARGS)
def test_logging_tool(ctx: Context) -> str:
    # A notifications/message only when the request's logLevel admits "info".
    ctx.log("info", "Diagnostic trace logging activated", logger=LOGGER)
    return "Logging evaluated"


# --- hidden triggers (server-stateless listen checks): callable, not listed -------------------


@server.tool(description="Emit tools/list_changed to listeners", input_schema=NO_ARGS, hidden=True)
def test_trigger_tool_change() -> str:
    server.list_changed("tools")
    return "Mutation triggered"


@server.tool(
    description="Emit prompts/list_changed to listeners", input_schema=NO_ARGS, hidden=True
)
def test_trigger_prompt_change() -> str:
    server.list_changed("prompts")
    return "Mutation triggered"


# --- stdio extras ----------------------------------------------------------------------------


@server.tool
async def sleep(ms: int) -> str:
    """Wait ``ms`` milliseconds, then answer; cancellable."""
    if ms < 0:
        raise ToolError("ms must be >= 0")
    await asyncio.sleep(ms / 1000)
    return f"slept {ms}"


@server.tool
def stray_print(text: str) -> str:
    """Call print(text): the output must not reach the protocol stream."""
    print(text)
    return "printed"


def dynamic_tool() -> str:
    """A tool that trigger_list_changed adds and removes."""
    return "dynamic tool called"


@server.tool
def trigger_list_changed() -> str:
    """Add dynamic_tool if absent, remove it if present (listeners get tools/list_changed)."""
    if "dynamic_tool" in server.tools:
        server.remove_tool("dynamic_tool")
        return "removed dynamic_tool"
    server.add_tool(dynamic_tool)
    return "added dynamic_tool"


@server.tool
def touch_resource(uri: str) -> str:
    """Report that a resource changed: listeners subscribed to it get resources/updated."""
    server.resource_updated(uri)
    return f"touched {uri}"


# --- the tasks extension (scenarios tasks-*) -------------------------------------------------


@server.tool
def greet(name: str) -> str:
    """Greet someone (never a task)."""
    return f"Hello, {name}!"


@server.tool(task=True)
async def slow_compute(
    seconds: Annotated[float, "How long to work"] = 1.0, label: str = "compute"
) -> str:
    """Work for ``seconds`` seconds, then answer: a task for clients that take one."""
    if seconds < 0:
        raise ToolError("seconds must be >= 0")
    await asyncio.sleep(seconds)
    return f"{label}: done after {seconds:g}s"


@server.tool(task="required")
async def failing_job() -> str:
    """Fail as a tool (isError) after about a second; only ever runs as a task."""
    await asyncio.sleep(1.0)
    raise ToolError("The job failed: the input could not be processed")


@server.tool(task=True)
async def protocol_error_job() -> str:
    """Fail with a JSON-RPC error (the task ends failed)."""
    await asyncio.sleep(0.1)
    raise JsonRpcError(INTERNAL_ERROR, "The job crashed: its backend went away")


@server.tool(task=True)
def confirm_delete(ctx: Context, filename: str) -> str:
    """Ask for confirmation (the task waits in input_required), then delete (pretend)."""
    answer = ctx.ask("confirm", elicit(f"Delete {filename}?", {"confirm": bool}))
    if answer["action"] == "accept" and (answer.get("content") or {}).get("confirm"):
        return f"Deleted {filename}"
    return f"Kept {filename}"


@server.tool(task=True)
def multi_input(ctx: Context) -> str:
    """Ask two questions at once (two inputRequests pending together), then answer."""
    answers = ctx.ask_all(
        {
            "name": elicit("Your name?", {"name": str}),
            "confirm": elicit("Proceed?", {"confirm": bool}),
        }
    )
    name = (answers["name"].get("content") or {}).get("name", "?")
    go = (answers["confirm"].get("content") or {}).get("confirm", False)
    return f"{name}: {'proceeding' if go else 'stopped'}"


async def _greet_later(name: str) -> str:
    await asyncio.sleep(0.2)
    return f"Hello, {name}! (from a task)"


@server.tool
def test_tool_with_task(ctx: Context) -> Task:
    """Ask for a name over MRTR, then hand the rest to a task (MRTR, then a task)."""
    answer = ctx.ask("user_name", elicit("What is your name?", {"name": str}))
    name = str((answer.get("content") or {}).get("name", "stranger"))
    return Task(_greet_later(name), status_message=f"Greeting {name}")


# --- resources ---------------------------------------------------------------------------------

server.add_resource(
    "test://static-text",
    "This is the content of the static text resource.",
    name="static-text",
    title="Static Text Resource",
    description="A static text resource for testing",
    mime_type="text/plain",
)
server.add_resource(
    "test://static-binary",
    base64.b64decode(PNG_1x1),
    name="static-binary",
    title="Static Binary Resource",
    description="A static binary resource (image) for testing",
    mime_type="image/png",
)
server.add_resource(
    "test://watched-resource",
    "Watched resource content",
    name="watched-resource",
    title="Watched Resource",
    description="A resource that auto-updates every 3 seconds",
    mime_type="text/plain",
)
server.add_resource(
    "test://stateless-static-text",
    "Static text content from the stateless draft path.",
    name="Stateless Static Text",
    description="A static text resource served on the draft path",
    mime_type="text/plain",
)


@server.resource(
    "test://template/{id}/data",
    name="template",
    title="Resource Template",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
def template_data(id: str) -> str:
    return json.dumps(
        {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
    )


# --- prompts -----------------------------------------------------------------------------------


@server.prompt(title="Simple Test Prompt", description="A simple prompt without arguments")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(title="Prompt With Arguments", description="A prompt with required arguments")
def test_prompt_with_arguments(
    arg1: Annotated[str, "First test argument"],
    arg2: Annotated[str, "Second test argument"],
) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(
    title="Prompt With Embedded Resource",
    description="A prompt that includes an embedded resource",
)
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, "URI of the resource to embed"],  # the wire name
) -> list[dict[str, Any]]:
    return [
        user(embedded_text(resourceUri, "Embedded resource content for testing.", "text/plain")),
        user("Please process the embedded resource above."),
    ]


@server.prompt(title="Prompt With Image", description="A prompt that includes image content")
def test_prompt_with_image() -> list[dict[str, Any]]:
    return [user(image(PNG_1x1, "image/png")), user("Please analyze the image above.")]


# --- MRTR prompt (input-required-result-non-tool-request) -----------------------------------


@server.prompt(description="MRTR: prompt that requires elicitation input")
def test_input_required_result_prompt(ctx: Context) -> Any:
    request = elicit("What context should the prompt use?", {"context": str})
    answer = ctx.ask("user_context", request)
    context = answer.get("content", {}).get("context", "none")
    return user(f"Prompt with context: {context}")


# --- completion (the fixture answers nothing, we suggest) -------------------------------------

SUGGESTIONS = {
    "arg1": ["test", "testValue1", "example1"],
    "arg2": ["test", "testValue2", "example2"],
    "id": ["1", "2", "3", "123"],
}


@server.completion()
def complete(argument: str, value: str) -> list[str]:
    return [s for s in SUGGESTIONS.get(argument, []) if s.startswith(value)]


# --- legacy (initialize) sessions: the fixture's legacy identity and info logs -----------------

server.legacy.server_info = {"name": "mcp-conformance-test-server", "version": "1.0.0"}


def _on_set_level(ctx: Context, level: str) -> None:
    ctx.log("info", f"Log level set to: {level}", logger=LOGGER)


def _on_subscribe(ctx: Context, uri: str, subscribed: bool) -> None:
    what = "Subscribed to" if subscribed else "Unsubscribed from"
    ctx.log("info", f"{what} resource: {uri}", logger=LOGGER)


server.legacy.on_set_level = _on_set_level
server.legacy.on_subscribe = _on_subscribe


if __name__ == "__main__":
    server.run()
