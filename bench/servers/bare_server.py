"""The floor: read a line, decode it, build a reply, write it. No MCP logic at all.

Not a competitor: it shows what Python over pipes can do. It answers ``server/discover``,
``tools/list`` and ``tools/call`` for ``echo``/``aecho``/``sleep`` without validating
anything; sleeps are timers in a heap driven by ``select``, so 50 of them overlap. Replies
to the lines of one read are written with one ``os.write`` loop.
"""

import heapq
import os
import select
import time
from typing import Any

import msgspec

decode = msgspec.json.Decoder().decode
encode = msgspec.json.Encoder().encode

DISCOVER = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "ttlMs": 0,
    "cacheScope": "public",
    "resultType": "complete",
}

TEXT_TOOL = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
TOOLS = {
    "tools": [
        {"name": "echo", "description": "Return the text unchanged.", "inputSchema": TEXT_TOOL},
        {"name": "aecho", "description": "Return the text unchanged.", "inputSchema": TEXT_TOOL},
        {
            "name": "sleep",
            "description": "Sleep for ms milliseconds.",
            "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}},
        },
    ],
    "ttlMs": 0,
    "cacheScope": "public",
    "resultType": "complete",
}


def reply(rid: Any, result: dict[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "id": rid, "result": result}) + b"\n"


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "resultType": "complete"}


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main() -> None:
    rfd, wfd = 0, 1
    pending: list[bytes] = []
    timers: list[tuple[float, int, Any, int]] = []  # (due, seq, id, ms)
    seq = 0
    reading = True
    while reading or timers:
        timeout = None
        if timers:
            timeout = max(0.0, timers[0][0] - time.monotonic())
        ready, _, _ = select.select([rfd] if reading else [], [], [], timeout)
        out: list[bytes] = []
        now = time.monotonic()
        while timers and timers[0][0] <= now:
            _, _, rid, ms = heapq.heappop(timers)
            out.append(reply(rid, text_result(f"slept {ms} ms")))
        chunk = os.read(rfd, 1 << 20) if ready else None
        if chunk == b"":
            reading = False  # end of input: finish the sleeps already started, then exit
        elif chunk:
            last = chunk.rfind(b"\n")
            if last < 0:
                pending.append(chunk)  # part of a long line: keep the pieces, join once
                lines: list[bytes] = []
            else:
                pending.append(chunk[: last + 1])
                lines = b"".join(pending).split(b"\n")
                lines.pop()
                pending = [chunk[last + 1 :]]
            for line in lines:
                msg = decode(line)
                method = msg.get("method")
                rid = msg.get("id")
                if method == "server/discover":
                    out.append(reply(rid, DISCOVER))
                elif method == "tools/list":
                    out.append(reply(rid, TOOLS))
                elif method == "tools/call":
                    params = msg["params"]
                    args = params.get("arguments") or {}
                    if params["name"] == "sleep":
                        seq += 1
                        heapq.heappush(timers, (now + args["ms"] / 1000, seq, rid, args["ms"]))
                    else:
                        out.append(reply(rid, text_result(args["text"])))
                elif rid is not None:
                    out.append(reply(rid, {"resultType": "complete"}))
        if out:
            write_all(wfd, b"".join(out))


if __name__ == "__main__":
    main()
