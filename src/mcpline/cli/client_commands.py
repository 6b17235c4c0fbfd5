"""Client subcommands: ``call``, ``tools``, ``discover``, ``resources``, ``read``, ``prompts``,
``get`` and ``listen``.

The server is ``-- SERVER_CMD [ARGS...]``, ``--server unix:PATH|tcp:HOST:PORT|URL`` (an
``http(s)://`` endpoint, with ``--header 'K: V'`` options) or ``--config FILE --name NAME``
(the ``mcpServers`` format MCP hosts use: ``command`` entries, or ``url`` ones with
``headers``; ``${VAR}`` and ``${VAR:-default}`` are expanded in every value). Output is JSON, or
tables when stdout is a terminal (``--json`` forces JSON); on a terminal every piece of
server text goes through `for_terminal` (JSON through `json_for_terminal`). Exit codes: 0
success, 1 a tool result with ``isError: true``, 2 a protocol or transport failure (one line
on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..spec import LIST_CHANGED, PROMPTS_LIST, RESOURCE_UPDATED, RESOURCES_LIST, TOOLS_LIST
from .connect import make_client
from .options import EXIT_OK, EXIT_TOOL_ERROR, UsageError, add_command, common
from .output import ProgressBar, emit_json, human_call, note, say, table, wants_json
from .runner import Operation, main_for


def _add(
    sub: Any, name: str, help_text: str, usage_args: str, op: Operation
) -> argparse.ArgumentParser:
    return add_command(sub, name, help_text, usage_args, lambda args: main_for(args, op))


def register(sub: Any) -> None:
    p = _add(sub, "call", "call a tool and print its CallToolResult", "NAME [--args JSON] ", _call)
    p.add_argument("tool", metavar="NAME", help="the tool to call")
    p.add_argument(
        "--args", default="{}", metavar="JSON", help="the arguments, a JSON object (default {})"
    )
    common(p)
    p = _add(sub, "tools", "list the server's tools (tools/list, all pages)", "", _tools)
    common(p)
    p = _add(sub, "discover", "print the era, version, server info and capabilities", "", _discover)
    common(p)
    p = _add(
        sub, "resources", "list the server's resources (resources/list, all pages)", "", _resources
    )
    common(p)
    p = _add(sub, "read", "read a resource (resources/read)", "URI ", _read)
    p.add_argument("uri", metavar="URI")
    common(p)
    p = _add(sub, "prompts", "list the server's prompts (prompts/list, all pages)", "", _prompts)
    common(p)
    p = _add(sub, "get", "get a prompt (prompts/get)", "NAME [--args JSON] ", _get)
    p.add_argument("prompt", metavar="NAME")
    p.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the prompt arguments, a JSON object of strings",
    )
    common(p)
    p = _add(
        sub,
        "listen",
        "print list-changed/updated notifications as JSON lines until interrupted",
        "",
        _listen,
    )
    p.add_argument(
        "--resource",
        action="append",
        default=[],
        metavar="URI",
        help="also subscribe to updates of URI (repeatable)",
    )
    common(p)


def _json_arg(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--args must be a JSON object ({what})")
    return value


# --- operations ------------------------------------------------------------------------------


def _offers(description: Any, capability: str) -> bool:
    """Whether the server declared ``capability``; true when its capabilities are unknown
    (a modern server that refused ``server/discover``), where only asking can tell."""
    return "capabilities" not in description.raw or capability in description.capabilities


def _offers_none(capability: str) -> str:
    return f"this server offers no {capability} (it declared no {capability} capability)"


async def _require(client: Any, capability: str) -> None:
    """Refuse (exit 2) before sending a request the server never declared it serves."""
    if not _offers(await client.discover(), capability):
        raise UsageError(_offers_none(capability))


async def _call(args: argparse.Namespace) -> int:
    arguments = _json_arg(args.args, "the tool arguments")
    bar = ProgressBar(args.tool)
    async with make_client(args) as client:
        await _require(client, "tools")
        try:
            result = await client.call_tool(
                args.tool, arguments, on_progress=bar if bar.enabled else None
            )
        finally:
            bar.done()
    if wants_json(args):
        emit_json(result)
    else:
        human_call(result)
    return EXIT_TOOL_ERROR if result.get("isError") is True else EXIT_OK


async def _list(
    args: argparse.Namespace,
    method: str,
    key: str,
    headers: Sequence[str],
    row: Callable[[dict[str, Any]], list[str]],
) -> int:
    """Every page of ``method``: the merged result as JSON, or a table of its ``key`` items.

    A server that never declared the capability (``key``) is not asked: the answer is an
    empty list (JSON, with a notice on stderr) or the notice alone (terminal).
    """
    async with make_client(args) as client:
        if not _offers(await client.discover(), key):
            if wants_json(args):
                emit_json({key: []})
                note(f"mcpline {args.command}: {_offers_none(key)}")
            else:
                say(_offers_none(key))
            return EXIT_OK
        result = await client.list_all(method, key)
    if wants_json(args):
        emit_json(result)
    else:
        table(headers, [row(item) for item in result[key]])
    return EXIT_OK


async def _tools(args: argparse.Namespace) -> int:
    return await _list(
        args, TOOLS_LIST, "tools", ["Tool", "Parameters", "Description", "Hints"], _tool_row
    )


def _tool_row(t: dict[str, Any]) -> list[str]:
    ann = t.get("annotations") or {}
    flags = [
        k.replace("Hint", "")
        for k in ("readOnlyHint", "destructiveHint", "idempotentHint")
        if ann.get(k)
    ]
    params = ", ".join((t.get("inputSchema") or {}).get("properties", {}) or {})
    return [
        t.get("name", "?"),
        f"({params})",
        (t.get("description") or "").strip(),
        " ".join(flags),
    ]


async def _discover(args: argparse.Namespace) -> int:
    async with make_client(args) as client:
        description = await client.discover()
    info = description.to_dict()
    if wants_json(args):
        emit_json(info)
    else:
        server = info["serverInfo"]
        rows = [
            ["era", info["era"]],
            ["protocol version", info["protocolVersion"]],
            ["server supports", ", ".join(info["supportedVersions"])],
            ["server", f"{server.get('name', '?')} {server.get('version', '')}".strip()],
            ["capabilities", ", ".join(sorted(info["capabilities"])) or "none"],
        ]
        if info.get("instructions"):
            rows.append(["instructions", info["instructions"]])
        table(["", ""], rows)
    return EXIT_OK


async def _resources(args: argparse.Namespace) -> int:
    return await _list(
        args,
        RESOURCES_LIST,
        "resources",
        ["URI", "Name", "MIME type"],
        lambda r: [r.get("uri", "?"), r.get("name", ""), r.get("mimeType", "")],
    )


async def _read(args: argparse.Namespace) -> int:
    async with make_client(args) as client:
        await _require(client, "resources")
        result = await client.read_resource(args.uri)
    if wants_json(args):
        emit_json(result)
    else:
        for c in result.get("contents", []):
            if "text" in c:
                say(c["text"])
            else:
                say(
                    f"[{c.get('mimeType', 'binary')} blob, {len(c.get('blob', ''))} "
                    f"base64 chars] {c.get('uri', '')}"
                )
    return EXIT_OK


async def _prompts(args: argparse.Namespace) -> int:
    return await _list(
        args,
        PROMPTS_LIST,
        "prompts",
        ["Prompt", "Arguments", "Description"],
        lambda p: [
            p.get("name", "?"),
            ", ".join(a.get("name", "?") for a in p.get("arguments") or []),
            p.get("description", ""),
        ],
    )


async def _get(args: argparse.Namespace) -> int:
    arguments = _json_arg(args.args, "the prompt arguments")
    async with make_client(args) as client:
        await _require(client, "prompts")
        result = await client.get_prompt(args.prompt, arguments)
    if wants_json(args):
        emit_json(result)
    else:
        for m in result.get("messages", []):
            content = m.get("content") or {}
            text = content.get("text") if isinstance(content, dict) else None
            say(f"{m.get('role', '?')}: {text if text is not None else json.dumps(content)}")
    return EXIT_OK


_LEGACY_NOTIFICATIONS = {
    **{flag: notification for flag, notification in LIST_CHANGED.values()},
    "resourceSubscriptions": RESOURCE_UPDATED,
}
"""A listen filter flag → the notification a legacy server sends unasked for it."""


def _legacy_listen_notice(params: dict[str, Any]) -> str:
    """What a legacy server (no ``subscriptions/listen``) can send unasked, per its
    capabilities: the client's stand-in acknowledgement, said on stderr, never printed as
    if the server had sent it."""
    honoured = params.get("notifications") or {}
    methods = [m for kind, m in _LEGACY_NOTIFICATIONS.items() if honoured.get(kind)]
    if not methods:
        return "legacy server: it declared none of the notifications asked for"
    return f"legacy server: listening for {', '.join(methods)}"


async def _listen(args: argparse.Namespace) -> int:
    async with make_client(args) as client:
        listener = client.listen(resource_uris=args.resource)
        async with listener:
            async for item in listener:
                if item.synthesized:
                    note(f"mcpline listen: {_legacy_listen_notice(item.params)}")
                elif wants_json(args):
                    emit_json(item.to_message(), line=True)
                else:
                    say(f"{item.method} {json.dumps(item.params, ensure_ascii=False)}")
                    sys.stdout.flush()
    return EXIT_OK
