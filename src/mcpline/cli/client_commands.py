"""Client subcommands: ``call``, ``tools``, ``discover``, ``resources``, ``read``, ``prompts``,
``get``, ``complete`` and ``listen``; their options are declared here, the work done in
`invoke` (what the server may answer with questions) and here (lists, discover, listen).

The server is ``-- SERVER_CMD [ARGS...]``, ``--server unix:PATH|tcp:HOST:PORT|URL`` (an
``http(s)://`` endpoint, with ``--header 'K: V'`` options) or ``--config FILE --name NAME``
(the ``mcpServers`` format MCP hosts use; see `config`). Output is JSON, or tables when
stdout is a terminal (``--json`` forces JSON); on a terminal every piece of server text goes
through `for_terminal` (JSON through `json_for_terminal`). Server log messages are shown on
stderr (``--log-level``, ``-q``). Exit codes: 0 success, 1 a tool result with ``isError:
true``, 2 a protocol, transport or usage failure (one line on stderr), 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..spec import (
    DISCOVER,
    LIST_CHANGED,
    LISTEN,
    METHOD_NOT_FOUND,
    PROMPTS_LIST,
    RESOURCE_UPDATED,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    TOOLS_LIST,
)
from . import invoke
from .answers import INPUT_HELP, input_options
from .arguments import types_of
from .connect import offers, offers_none
from .options import EXIT_OK, add_command, common
from .output import emit_json, note, say, table, wants_json

if TYPE_CHECKING:
    from .runner import Operation, Run

KEY_VALUE_HELP = """\
arguments:
  KEY=VALUE words are typed by the tool's inputSchema: integer, number, boolean
  (true/false), null, object (JSON); an array by repetition (tag=a tag=b) or as one JSON
  array; a string otherwise. They apply over --args. A value that does not fit is exit 2."""


def _add(
    sub: Any,
    name: str,
    help_text: str,
    usage_args: str,
    op: Operation,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand whose work is ``op``, run by `main_for`."""

    def run(args: argparse.Namespace) -> int:
        from .runner import main_for

        return main_for(args, op)

    return add_command(sub, name, help_text, usage_args, run, epilog)


def register(sub: Any) -> None:
    p = _add(
        sub,
        "call",
        "call a tool and print its CallToolResult",
        "NAME [KEY=VALUE ...] [--args JSON] ",
        invoke.call,
        f"{KEY_VALUE_HELP}\n\n{INPUT_HELP}",
    )
    p.add_argument("tool", metavar="NAME", help="the tool to call")
    p.add_argument("pairs", nargs="*", metavar="KEY=VALUE", help="an argument (see below)")
    p.add_argument(
        "--args", default="{}", metavar="JSON", help="the arguments, a JSON object (default {})"
    )
    input_options(p)
    common(p)
    p = _add(sub, "tools", "list the server's tools (tools/list, all pages)", "", tools)
    common(p)
    p = _add(sub, "discover", "print the era, version, server info and capabilities", "", discover)
    common(p)
    p = _add(
        sub,
        "resources",
        "list the server's resources and resource templates (all pages)",
        "",
        resources,
    )
    common(p)
    p = _add(sub, "read", "read a resource (resources/read)", "URI ", invoke.read, INPUT_HELP)
    p.add_argument("uri", metavar="URI")
    input_options(p)
    common(p)
    p = _add(sub, "prompts", "list the server's prompts (prompts/list, all pages)", "", prompts)
    common(p)
    p = _add(
        sub,
        "get",
        "get a prompt (prompts/get)",
        "NAME [KEY=VALUE ...] [--args JSON] ",
        invoke.get,
        INPUT_HELP,
    )
    p.add_argument("prompt", metavar="NAME")
    p.add_argument("pairs", nargs="*", metavar="KEY=VALUE", help="an argument (a string)")
    p.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the prompt arguments, a JSON object; prompt arguments are strings, so a value "
        "that is not one is sent as its JSON text (3, true)",
    )
    input_options(p)
    common(p)
    p = _add(
        sub,
        "complete",
        "suggest values for a prompt argument or a resource template variable "
        "(completion/complete)",
        "(prompt NAME ARG | resource TEMPLATE VAR) [VALUE] [--context NAME=VALUE ...] ",
        invoke.complete,
    )
    p.add_argument("kind", choices=("prompt", "resource"), help="what to complete for")
    p.add_argument("ref", metavar="NAME|TEMPLATE", help="the prompt's name or the URI template")
    p.add_argument("argument", metavar="ARG|VAR", help="the argument or variable to complete")
    p.add_argument("value", nargs="?", default="", help="what is typed so far (default empty)")
    p.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an argument or variable already chosen (repeatable)",
    )
    common(p)
    p = _add(
        sub,
        "listen",
        "print list-changed/updated notifications as JSON lines until interrupted, or for "
        "--timeout seconds",
        "",
        listen,
    )
    p.add_argument(
        "--resource",
        action="append",
        default=[],
        metavar="URI",
        help="also subscribe to updates of URI (repeatable)",
    )
    common(p, listening=True)


# --- lists and discover ----------------------------------------------------------------------


async def _list(
    args: argparse.Namespace,
    run: Run,
    method: str,
    key: str,
    headers: Sequence[str],
    row: Callable[[dict[str, Any]], list[str]],
) -> int:
    """Every page of ``method``: the merged result as JSON, or a table of its ``key`` items.

    A server that never declared the capability (``key``) is not asked: the answer is an
    empty list (JSON, with a notice on stderr) or the notice alone (terminal).
    """
    from .connect import make_client

    run.doing(method)
    async with make_client(args, run) as client:
        if not offers(await client.discover(), key):
            if wants_json(args):
                emit_json({key: []})
                note(f"mcpline {args.command}: {offers_none(key)}")
            else:
                say(offers_none(key))
            return EXIT_OK
        result = await client.list_all(method, key)
    if wants_json(args):
        emit_json(result)
    else:
        table(headers, [row(item) for item in result[key]])
    return EXIT_OK


async def tools(args: argparse.Namespace, run: Run) -> int:
    return await _list(
        args, run, TOOLS_LIST, "tools", ["Tool", "Parameters", "Description", "Hints"], _tool_row
    )


def _tool_row(t: dict[str, Any]) -> list[str]:
    ann = t.get("annotations") or {}
    flags = [
        k.replace("Hint", "")
        for k in ("readOnlyHint", "destructiveHint", "idempotentHint")
        if ann.get(k)
    ]
    return [
        t.get("name", "?"),
        parameters(t.get("inputSchema")),
        (t.get("description") or "").strip(),
        " ".join(flags),
    ]


def parameters(schema: Any) -> str:
    """A tool's parameters with their JSON types: ``(a: number, tags?: array[string])``
    (``?``: optional; ``= default`` when the schema has one)."""
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties")
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    out = []
    for name, prop in (props if isinstance(props, dict) else {}).items():
        kind = _type_name(prop)
        if isinstance(prop, dict) and "default" in prop:
            default = json.dumps(prop["default"], ensure_ascii=False)
            out.append(f"{name}: {kind} = {default[:20]}")
        else:
            out.append(f"{name}{'' if name in required else '?'}: {kind}")
    return f"({', '.join(out)})"


def _type_name(prop: Any) -> str:
    """A property's type: its JSON types (``null`` last), a short enum's values, or
    ``array[ITEM]``."""
    if isinstance(prop, dict):
        values = prop.get("enum")
        if isinstance(values, list) and 0 < len(values) <= 5:
            return " | ".join(json.dumps(v, ensure_ascii=False)[:20] for v in values)
        if types_of(prop) == ["array"] and isinstance(prop.get("items"), dict):
            return f"array[{_type_name(prop['items'])}]"
    types = types_of(prop) or ["any"]
    return " | ".join([t for t in types if t != "null"] + [t for t in types if t == "null"])


async def discover(args: argparse.Namespace, run: Run) -> int:
    from .connect import make_client

    run.doing(DISCOVER)
    async with make_client(args, run) as client:
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


async def resources(args: argparse.Namespace, run: Run) -> int:
    """Resources and resource templates: one JSON object with both lists, or one table
    whose Kind column tells them apart."""
    from ..client import ServerError
    from .connect import make_client

    run.doing(RESOURCES_LIST)
    async with make_client(args, run) as client:
        if not offers(await client.discover(), "resources"):
            if wants_json(args):
                emit_json({"resources": [], "resourceTemplates": []})
                note(f"mcpline {args.command}: {offers_none('resources')}")
            else:
                say(offers_none("resources"))
            return EXIT_OK
        result = await client.list_all(RESOURCES_LIST, "resources")
        run.doing(RESOURCES_TEMPLATES_LIST)
        try:
            found = await client.list_all(RESOURCES_TEMPLATES_LIST, "resourceTemplates")
            templates = found["resourceTemplates"]
        except ServerError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            templates = []  # a server with resources but no templates/list
    if wants_json(args):
        emit_json({**result, "resourceTemplates": templates})
        return EXIT_OK
    rows = [
        [r.get("uri", "?"), "resource", r.get("name", ""), r.get("mimeType", "")]
        for r in result["resources"]
    ]
    rows += [
        [t.get("uriTemplate", "?"), "template", t.get("name", ""), t.get("mimeType", "")]
        for t in templates
    ]
    table(["URI or URI template", "Kind", "Name", "MIME type"], rows)
    return EXIT_OK


async def prompts(args: argparse.Namespace, run: Run) -> int:
    return await _list(
        args,
        run,
        PROMPTS_LIST,
        "prompts",
        ["Prompt", "Arguments", "Description"],
        lambda p: [
            p.get("name", "?"),
            ", ".join(a.get("name", "?") for a in p.get("arguments") or []),
            p.get("description", ""),
        ],
    )


# --- listen ----------------------------------------------------------------------------------

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


async def listen(args: argparse.Namespace, run: Run) -> int:
    from .connect import make_client

    async with make_client(args, run) as client:
        run.doing(LISTEN)
        listener = client.listen(resource_uris=args.resource)
        async with listener:
            async for item in listener:
                run.listen_for()  # the first item is the acknowledgement
                if item.synthesized:
                    note(f"mcpline listen: {_legacy_listen_notice(item.params)}")
                elif wants_json(args):
                    emit_json(item.to_message(), line=True)
                else:
                    say(f"{item.method} {json.dumps(item.params, ensure_ascii=False)}")
                    sys.stdout.flush()
    return EXIT_OK


__all__ = ["discover", "listen", "prompts", "register", "resources", "tools"]
