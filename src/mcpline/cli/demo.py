"""``mcpline demo``: start the quickstart calculator under the mcpline client and show,
step by step, what the client does and what the server answers."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="run examples/quickstart.py under the mcpline client and narrate it"
    )
    p.add_argument("--verbose", action="store_true", help="also show every line on the wire")
    p.set_defaults(func=run)


def find_quickstart() -> Traversable:
    """``examples/quickstart.py`` as installed: package data of ``mcpline._examples``.

    The wheel ships the examples directory as that package; an editable install maps it onto
    the source tree's ``examples/``. Either way the demo serves the quickstart file itself.
    """
    return resources.files("mcpline._examples") / "quickstart.py"


def _say(text: str = "") -> None:
    print(text, flush=True)


def _short(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


async def demo(verbose: bool) -> int:
    with resources.as_file(find_quickstart()) as quickstart:  # a real file, even from a zip
        return await _narrate([sys.executable, str(quickstart)], str(quickstart), verbose)


async def _narrate(argv: list[str], what: str, verbose: bool) -> int:
    from ..client import Client, ClientError

    trace = None
    if verbose:

        def trace(direction: str, line: bytes) -> None:
            print(
                ("    → " if direction == "send" else "    ← ")
                + line.decode("utf-8", "replace")[:300],
                flush=True,
            )

    _say(f"mcpline demo: starting {what}")
    _say("  (a stdio server: JSON-RPC, one message per line, on its stdin/stdout)")
    _say()
    client = Client.stdio(
        argv[0], argv[1:], trace=trace, client_info={"name": "mcpline-demo", "version": "1"}
    )
    try:
        async with client:
            t0 = time.perf_counter()
            d = await client.discover()
            ms = (time.perf_counter() - t0) * 1000
            server = d.server_info
            _say(f"1. discover  (server/discover probe, {ms:.0f} ms including process start)")
            _say(f"   era:          {d.era} (per-request _meta, no initialize handshake)")
            _say(
                f"   version:      {d.protocol_version} "
                f"(server supports {', '.join(d.supported_versions)})"
            )
            _say(f"   server:       {server.get('name', '?')} {server.get('version', '')}")
            _say(f"   capabilities: {', '.join(sorted(d.capabilities)) or 'none'}")
            _say()
            tools = await client.list_tools()
            _say(f"2. tools/list  ({len(tools)} tools)")
            for t in tools:
                params = ", ".join((t.get("inputSchema") or {}).get("properties", {}))
                ann = t.get("annotations") or {}
                hints = [
                    k.removesuffix("Hint") for k in ("readOnlyHint", "idempotentHint") if ann.get(k)
                ]
                extra = f"  [{', '.join(hints)}]" if hints else ""
                _say(f"   {t['name']}({params}): {(t.get('description') or '').strip()}{extra}")
            _say()
            args = {"a": 2, "b": 3}
            ok = await client.call_tool("add", args)
            value = (
                ok.get("structuredContent", {}).get("result")
                if isinstance(ok.get("structuredContent"), dict)
                else None
            )
            _say(f"3. tools/call add {_short(args)}")
            _say(
                f"   result: {value if value is not None else _short(ok.get('content'))}  "
                f"(isError: {bool(ok.get('isError'))})"
            )
            _say()
            args = {"a": 1, "b": 0}
            bad = await client.call_tool("divide", args)
            text = " ".join(
                c.get("text", "") for c in bad.get("content", []) if c.get("type") == "text"
            )
            _say(f"4. tools/call divide {_short(args)}")
            _say(f"   tool error (isError: {bool(bad.get('isError'))}): {text}")
            _say("   a tool failure is a result the model can read, not a protocol error")
            _say()
            pid = client.pid
        _say(
            f"5. shutdown: closed the server's stdin; process {pid} {_exit_text(client.returncode)}"
        )
    except ClientError as exc:
        print(f"mcpline demo: {exc}", file=sys.stderr)
        return 2
    return 0


def _exit_text(code: int | None) -> str:
    if code is None:
        return "did not report an exit status"
    if code < 0:
        return f"was stopped by signal {-code}"
    return f"exited with code {code} and was reaped"


def run(args: argparse.Namespace) -> int:
    return asyncio.run(demo(args.verbose))
