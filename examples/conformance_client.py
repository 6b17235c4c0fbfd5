"""The client the MCP conformance suite runs: ``conformance client --command
"python examples/conformance_client.py"``.

The suite starts one test server per scenario and runs this script with the server's URL as
the last argument, the scenario's name in ``MCP_CONFORMANCE_SCENARIO``, the revision under
test in ``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for scenarios that carry data, a JSON object
in ``MCP_CONFORMANCE_CONTEXT``. Each scenario below does what its test server checks for, with
mcpline's public client API only. Exit status 0 means the client did its part; the suite
judges the rest.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from mcpline.client import Client, ClientError
from mcpline.client.oauth import (
    ClientCredentials,
    IdentityAssertion,
    OAuth,
    WorkloadIdentity,
    fetch_redirect,
)

log = logging.getLogger("conformance_client")

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's authorization servers expect."""
REDIRECT_URI = "http://localhost:3000/callback"

Scenario = Callable[[Client, dict[str, Any]], Awaitable[None]]


def _era(version: str) -> str:
    return "modern" if version >= "2026-07-28" else "legacy"


async def _accept_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """Accept an elicitation, filling every field from its schema's ``default``."""
    props = (params.get("requestedSchema") or {}).get("properties") or {}
    content = {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}
    return {"action": "accept", "content": content}


async def initialize(client: Client, ctx: dict[str, Any]) -> None:
    await client.start()


async def tools_call(client: Client, ctx: dict[str, Any]) -> None:
    tools = await client.list_tools()
    name = next((t["name"] for t in tools if t["name"] == "add_numbers"), tools[0]["name"])
    await client.call_tool(name, {"a": 5, "b": 3})


async def elicitation_defaults(client: Client, ctx: dict[str, Any]) -> None:
    await client.list_tools()
    await client.call_tool("test_client_elicitation_defaults", {})


async def sse_retry(client: Client, ctx: dict[str, Any]) -> None:
    await client.list_tools()
    await client.call_tool("test_reconnection", {})


async def request_metadata(client: Client, ctx: dict[str, Any]) -> None:
    await client.discover()
    await client.list_tools()


async def request_state(client: Client, ctx: dict[str, Any]) -> None:
    await client.list_tools()
    await client.call_tool("test_mrtr_echo_state", {})
    await client.call_tool("test_mrtr_no_state", {})
    await client.call_tool("test_mrtr_no_result_type", {})


async def standard_headers(client: Client, ctx: dict[str, Any]) -> None:
    for tool in await client.list_tools():
        await client.call_tool(tool["name"], {})
    for resource in await client.list_resources():
        await client.read_resource(resource["uri"])
    for prompt in await client.list_prompts():
        await client.get_prompt(prompt["name"], {})


async def custom_headers(client: Client, ctx: dict[str, Any]) -> None:
    await client.list_tools()
    for call in ctx.get("toolCalls") or []:
        await client.call_tool(call["name"], call.get("arguments") or {})


async def invalid_tool_headers(client: Client, ctx: dict[str, Any]) -> None:
    tools = await client.list_tools()
    for tool in tools:
        await client.call_tool(tool["name"], {"region": "us-west1"})


async def list_only(client: Client, ctx: dict[str, Any]) -> None:
    await client.list_tools()


async def schema_echo(client: Client, ctx: dict[str, Any]) -> None:
    tools = {t["name"]: t for t in await client.list_tools()}
    focal = tools["json_schema_2020_12_tool"]["inputSchema"]
    await client.call_tool("json_schema_echo", {"schema": focal})


async def authorized(client: Client, ctx: dict[str, Any]) -> None:
    tools = await client.list_tools()
    await client.call_tool(tools[0]["name"] if tools else "test-tool", {})


SCENARIOS: dict[str, Scenario] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": schema_echo,
}


def make_auth(scenario: str, ctx: dict[str, Any]) -> OAuth:
    """The OAuth client a scenario's context calls for: a machine-to-machine grant when the
    context carries its credentials, else the authorization code flow (DPoP when the
    servers offer it)."""
    grant: ClientCredentials | WorkloadIdentity | IdentityAssertion | None = None
    if "private_key_pem" in ctx:
        grant = ClientCredentials(
            ctx["client_id"],
            private_key=ctx["private_key_pem"],
            signing_algorithm=ctx.get("signing_algorithm"),
        )
    elif "idp_id_token" in ctx:
        grant = IdentityAssertion(
            client_id=ctx["client_id"],
            client_secret=ctx.get("client_secret"),
            idp_token_endpoint=ctx["idp_token_endpoint"],
            idp_client_id=ctx.get("idp_client_id"),
            id_token=ctx["idp_id_token"],
        )
    elif "valid_jwt" in ctx:
        grant = WorkloadIdentity(client_id=ctx.get("client_id"), token=ctx["valid_jwt"])
    elif scenario == "auth/client-credentials-basic":
        grant = ClientCredentials(ctx["client_id"], client_secret=ctx["client_secret"])
    return OAuth(
        client_name="mcpline-conformance-client",
        redirect_uri=REDIRECT_URI,
        client_metadata_url=CIMD_URL,
        client_id=ctx.get("client_id") if grant is None else None,
        client_secret=ctx.get("client_secret") if grant is None else None,
        on_authorize=fetch_redirect,
        grant=grant,
    )


def make_client(scenario: str, url: str, version: str, ctx: dict[str, Any]) -> Client:
    holder: list[Client] = []
    unrelated_done: list[bool] = []

    async def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        if scenario == "sep-2322-client-request-state":
            if not unrelated_done:
                # Another request between the rounds: it must not carry this call's state.
                unrelated_done.append(True)
                await holder[0].call_tool("test_mrtr_unrelated", {})
            return {"action": "accept", "content": {"confirmed": True}}
        return await _accept_defaults(params)

    def on_sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "test"}

    def on_roots(params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}

    auth = make_auth(scenario, ctx) if scenario.startswith("auth/") else None
    client = Client.http(
        url,
        auth=auth,
        era=_era(version),
        timeout=20,
        probe_timeout=20,
        max_restarts=1,
        on_elicit=on_elicit,
        on_sample=on_sample,
        on_roots=on_roots,
        client_info={"name": "mcpline-conformance-client", "version": "1.0.0"},
    )
    holder.append(client)
    return client


async def main(argv: list[str]) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s")
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2026-07-28")
    ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    run = authorized if scenario.startswith("auth/") else SCENARIOS.get(scenario)
    if run is None:
        print(f"unknown scenario {scenario!r}", file=sys.stderr)
        return 2
    try:
        async with make_client(scenario, url, version, ctx) as client:
            await run(client, ctx)
    except ClientError as exc:
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
