"""A fake stdio "server" whose output is fuzzed: for every request it writes a few malformed,
truncated, mutated or oversized lines derived from the right answer (same id included), then
usually the right answer, sometimes nothing. Seeded by ``FUZZ_SEED``; drives the client fuzz
test."""

import json
import os
import random
import sys
from typing import Any

from mcpline.check.corpus import Corpus, Fuzzer

SEED = int(os.environ.get("FUZZ_SEED", "0"))
rng = random.Random(SEED)
fuzzer = Fuzzer(Corpus([("server/discover", {})]), SEED)
out = sys.stdout.buffer
INFO = {"io.modelcontextprotocol/serverInfo": {"name": "fuzzed-output", "version": "0"}}
TOOLS = [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}]


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    rid, method = msg["id"], msg.get("method")
    common = {"resultType": "complete", "_meta": INFO}
    if method == "server/discover":
        result = {
            **common,
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "public",
        }
    elif method == "tools/list":
        result = {**common, "tools": TOOLS, "ttlMs": 0, "cacheScope": "public"}
    elif method == "tools/call":
        result = {**common, "content": [{"type": "text", "text": "echo"}]}
    else:
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "error": {"code": -32601, "message": "Method not found"},
        }
    return {"jsonrpc": "2.0", "id": rid, "result": result}


for raw in sys.stdin.buffer:
    try:
        msg = json.loads(raw)
    except ValueError:
        continue
    if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
        continue
    good = answer(msg)
    noise = [
        good,
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1},
        },
    ]
    # The first discover is answered cleanly so the client settles on the modern era.
    count = 0 if msg.get("method") == "server/discover" else rng.randint(0, 4)
    for _ in range(count):
        out.write(fuzzer.mutate(rng.choice(noise)))
    if count == 0 or rng.random() < 0.85:
        out.write(json.dumps(good).encode() + b"\n")
    out.flush()
