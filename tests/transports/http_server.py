"""A server for the HTTP transport tests: ``python http_server.py [--auth] [options]``.

Serves on 127.0.0.1 (a free port) and prints the ready line on stderr. ``--auth`` requires the
bearer token ``secret-token`` (principal ``"alice"``) or ``other-token`` (``"bob"``) and
publishes protected-resource metadata; with ``--auth-raises`` the verifier raises a
``KeyError`` naming an unknown token instead of refusing it. Tools report what the tests
need to see from inside: whether a call was cancelled, the process's task count and memory,
the caller's principal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import threading
from typing import Annotated, Any

from mcpline import Context, McpHeader, Server
from mcpline.transports.http.serve import serve

server = Server("http-test-server", version="1.0.0")
EVENTS: dict[str, list[str]] = {}
LOCK = threading.Lock()


def record(key: str, what: str) -> None:
    with LOCK:
        EVENTS.setdefault(key, []).append(what)


@server.tool
async def wait(key: str, ms: int) -> str:
    """Sleep ``ms`` milliseconds, recording start, cancellation and end under ``key``."""
    record(key, "started")
    try:
        await asyncio.sleep(ms / 1000)
    except asyncio.CancelledError:
        record(key, "cancelled")
        raise
    record(key, "finished")
    return "done"


@server.tool
def events(key: str) -> list[str]:
    """What happened to the calls recorded under ``key``."""
    with LOCK:
        return list(EVENTS.get(key, []))


@server.tool
async def stats() -> dict[str, int]:
    """The asyncio task count and resident memory (bytes) of this process."""
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    return {"tasks": len(asyncio.all_tasks()), "rss": rss_pages * os.sysconf("SC_PAGE_SIZE")}


@server.tool
def whoami(ctx: Context) -> str:
    """The principal the bearer token stood for."""
    return repr(ctx.principal)


@server.tool
async def progress(ctx: Context, steps: int = 3) -> str:
    """Report ``steps`` progress notifications, then answer."""
    for i in range(steps):
        ctx.report_progress(i + 1, steps)
        await asyncio.sleep(0.01)
    return "progressed"


@server.tool
async def chatter(ctx: Context) -> str:
    """Log at every level (only what the request's logLevel admits is sent)."""
    for level in ("debug", "info", "warning", "error"):
        ctx.log(level, f"a {level} message")
    return "logged"


@server.tool
def routed(
    region: Annotated[str, McpHeader("Region")],
    count: Annotated[int, McpHeader("Count")] = 1,
    verbose: Annotated[bool, McpHeader("Verbose")] = False,
    query: str = "",
) -> str:
    """Echo the header-mirrored arguments."""
    return f"{region} {count} {verbose} {query}"


@server.tool
def bump() -> str:
    """Publish tools/list_changed."""
    server.list_changed("tools")
    return "bumped"


@server.tool
async def ask_name(ctx: Context) -> str:
    """Ask the client for a name (legacy sessions: a real elicitation/create)."""
    from mcpline import elicit

    answer = ctx.ask("name", elicit("Your name?", {"name": str}))
    return f"hello {answer.get('content', {}).get('name')}"


@server.tool
async def interrupted(ctx: Context) -> str:
    """End this request's legacy SSE stream early, then answer."""
    ctx.report_progress(1, 2)
    await asyncio.sleep(0.05)
    ctx.close_sse_stream()
    await asyncio.sleep(0.3)
    return "after the break"


@server.tool
def pid() -> int:
    """This process's id (which worker answered)."""
    return os.getpid()


@server.tool
def sealed(ctx: Context) -> str:
    """Two rounds: the second must bring back the sealed state of the first."""
    from mcpline import InputRequired, elicit

    if ctx.state == {"round": 1} and "ok" in ctx.input_responses:
        return "state verified"
    raise InputRequired({"ok": elicit("Continue?", {"ok": bool})}, {"round": 1})


TOKENS = {"secret-token": "alice", "other-token": "bob"}


async def _verify(token: str) -> Any:
    await asyncio.sleep(0)
    if token.startswith("explode-"):
        raise ValueError(f"the verifier choked on {token}")
    return TOKENS.get(token)


def _verify_raising(token: str) -> Any:
    """A verifier that raises for an unknown token, with the token in its message."""
    return TOKENS[token]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--auth", action="store_true")
    parser.add_argument("--auth-raises", action="store_true", help="--auth: raise on unknown")
    parser.add_argument("--origin", action="append", default=[])
    parser.add_argument("--keepalive", type=float, default=15.0)
    parser.add_argument("--max-body", type=int, default=64 * 1024)
    parser.add_argument("--body-timeout", type=float, default=1.0)
    parser.add_argument("--max-sessions", type=int, default=1024)
    parser.add_argument("--idle", type=float, default=1800.0)
    parser.add_argument(
        "--option", action="append", default=[], help="NAME=JSON: any other http_app option"
    )
    args = parser.parse_args()
    options: dict[str, Any] = {
        "allowed_origins": args.origin,
        "keepalive": args.keepalive,
        "max_body_bytes": args.max_body,
        "body_timeout": args.body_timeout,
        "max_sessions": args.max_sessions,
        "session_idle_timeout": args.idle,
    }
    for item in args.option:
        name, _, value = item.partition("=")
        options[name] = json.loads(value)
    if args.auth:
        options["verify_token"] = _verify_raising if args.auth_raises else _verify
        options["resource_metadata"] = {
            "resource": "https://mcp.example.com/mcp",
            "authorization_servers": ["https://auth.example.com"],
            "scopes_supported": ["mcp:tools"],
        }
    serve(server, "127.0.0.1", args.port, **options)


if __name__ == "__main__":
    main()
