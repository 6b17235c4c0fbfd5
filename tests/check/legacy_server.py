"""A legacy-only (2025-11-25, initialize handshake) stdio server written with the stdlib.

Before ``initialize`` it answers every request with a ``-32002``-style "not initialized"
error, as many handshake-era servers do; it knows nothing of ``server/discover``.
"""

import json
import sys
from typing import Any

initialized = False


def send(msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
    sys.stdout.flush()


for raw in sys.stdin.buffer:
    try:
        msg = json.loads(raw)
    except ValueError:
        send({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}})
        continue
    if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
        continue
    rid, method = msg["id"], msg["method"]
    if method == "initialize":
        initialized = True
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "legacy-only", "version": "1.0"},
                },
            }
        )
    elif not initialized:
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32000, "message": "Server not initialized"},
            }
        )
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": []}})
    else:
        send(
            {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
        )
