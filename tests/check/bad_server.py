"""A deliberately non-conforming stdio server, so the checker's failures can be proven.

It speaks just enough 2026-07-28 to be probed, then breaks rules on purpose: a banner on
stdout, replies to notifications, no reply to parse errors, ``-32603`` for unknown methods,
no ``_meta`` validation, a blocking ``sleep`` tool that ignores cancellation, results
without ``resultType`` for tools/list, and it never exits at stdin EOF or on SIGTERM.
Plain stdlib, no mcpline imports.
"""

import json
import signal
import sys
import time
from typing import Any

signal.signal(signal.SIGTERM, signal.SIG_IGN)
out = sys.stdout
out.write("bad-server starting up\n")  # impure stdout
out.flush()

TOOLS = [
    {
        "name": "sleep",
        "description": "Sleep for ms milliseconds.",
        "inputSchema": {
            "type": "object",
            "properties": {"ms": {"type": "integer"}},
            "required": ["ms"],
        },
    }
]


def send(msg: dict[str, Any]) -> None:
    out.write(json.dumps(msg) + "\n")
    out.flush()


for raw in sys.stdin:
    try:
        msg = json.loads(raw)
    except ValueError:
        continue  # parse errors are silently dropped
    if not isinstance(msg, dict):
        continue
    rid = msg.get("id")
    method = msg.get("method")
    if "id" not in msg:
        send(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "no notifications"}}
        )
        continue
    if method == "server/discover":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "public",
                },
            }
        )
    elif method == "tools/list":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"tools": TOOLS, "ttlMs": 0, "cacheScope": "public"},
            }
        )
    elif method == "tools/call":
        params = msg.get("params")
        args = params.get("arguments") if isinstance(params, dict) else None
        ms = args.get("ms") if isinstance(args, dict) else None
        ms = ms if isinstance(ms, int) else 0
        time.sleep(min(ms, 3000) / 1000)  # blocks the reader
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "resultType": "complete",
                    "content": [{"type": "text", "text": "slept"}],
                },
            }
        )
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "internal"}})

while True:  # never exit at EOF
    time.sleep(1)
