"""framing: newline-delimited JSON-RPC in any number of reads, and a pure, valid stdout.

The probes run on the main process; the purity checks judge every line of every process
started, so they run once everything has stopped.
"""

from __future__ import annotations

import time

from ...protocol.meta import modern_meta
from ...spec import DISCOVER, MODERN
from ...wire import encode
from ..model import FAIL, PASS, WARN, CheckContext
from ..runner import CLIENT_INFO, ServerProcess


def probes(ctx: CheckContext, p: ServerProcess) -> None:
    timeout = ctx.options.timeout
    rule = (
        "B·MUST: newline-delimited JSON-RPC over a byte stream; a message may arrive in any "
        "number of reads (spec: basic/transports/stdio)"
    )
    msg = p.request_msg(DISCOVER, id="split-write")
    data = encode(msg)
    cuts = (len(data) // 3, 2 * len(data) // 3)
    p.note_request(msg)
    p.send_raw(data[: cuts[0]])
    time.sleep(0.1)
    p.send_raw(data[cuts[0] : cuts[1]])
    time.sleep(0.1)
    p.send_raw(data[cuts[1] :])
    got = p.wait_response("split-write", timeout)
    ctx.add(
        "framing.split-writes",
        PASS if got else FAIL,
        rule,
        "a request written in three pieces was answered"
        if got
        else "a request written in three pieces got no answer",
    )
    batch = [p.request_msg(DISCOVER, id=f"coalesced-{i}") for i in range(3)]
    for m in batch:
        p.note_request(m)
    p.send_raw(b"".join(encode(m) for m in batch))
    ok = [p.wait_response(m["id"], timeout) is not None for m in batch]
    ctx.add(
        "framing.coalesced-writes",
        PASS if all(ok) else FAIL,
        rule,
        f"{sum(ok)} of 3 requests written in one chunk were answered",
    )
    m = p.request_msg(DISCOVER, id="crlf")
    p.note_request(m)
    p.send_raw(b"\n  \n" + encode(m)[:-1] + b"\r\n")
    got = p.wait_response("crlf", timeout)
    anon = [r.msg for r in p.since(0) if r.is_anonymous_error]
    ctx.add(
        "framing.blank-and-crlf-input",
        PASS if got else WARN,
        (
            "mcpline rec: ignore blank lines, strip one trailing \\r (refines spec: "
            "basic/transports/stdio)"
        ),
        "blank lines ignored and a \\r\\n-terminated request answered"
        if got
        else (
            f"a \\r\\n-terminated request after blank lines got no answer ({len(anon)} "
            "id-less errors so far)"
        ),
    )
    padded = {**modern_meta(MODERN, {}, CLIENT_INFO), "dev.mcpline-check/padding": "x" * (1 << 20)}
    big = p.request_msg(DISCOVER, id="large", meta=padded)
    p.send(big)
    got = p.wait_response("large", max(timeout, 10.0))
    ctx.add(
        "framing.large-message",
        PASS if got else WARN,
        (
            "mcpline rec: accept lines far above 64 KiB; a base64 blob overflows default "
            "stream limits (refines spec: basic/transports/stdio)"
        ),
        "a 1 MiB request was answered" if got else "a 1 MiB request got no answer",
    )


def purity(ctx: CheckContext) -> None:
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    lines = early = 0
    for p in ctx.processes:
        lines += p.stats.lines
        early += p.stats.impure_before_first_message
        for kind, n in p.stats.problem_counts.items():
            counts[kind] = counts.get(kind, 0) + n
        for prob in p.stats.problems:
            ex = examples.setdefault(prob.kind, [])
            if len(ex) < 3:
                ex.append(f"[{p.label}] {prob.detail}: {prob.excerpt}")

    def seen(kind: str, good: str) -> str:
        n = counts.get(kind, 0)
        if not n:
            return good
        return f"{n} of {lines} lines: " + " | ".join(examples.get(kind, []))

    ctx.add(
        "framing.stdout-pure",
        FAIL if counts.get("impure") else PASS,
        (
            "S·MUST NOT write anything to stdout that is not a valid MCP message; UTF-8, one "
            "JSON object per line (spec: basic/transports/stdio, basic/transports#messages)"
        ),
        seen(
            "impure",
            (
                f"all {lines} stdout lines from {len(ctx.processes)} processes were UTF-8 "
                "JSON objects"
            ),
        )
        + (
            f" — {early} of them came before the first reply: output at start-up usually "
            "comes from print() at import time or before server.run(); serve the file with "
            "`mcpline run FILE`, or print to stderr"
            if early
            else ""
        ),
    )
    ctx.add(
        "framing.schema-valid",
        FAIL if counts.get("schema") else PASS,
        (
            "B·MUST: every message valid against the official 2026-07-28 schema (2025-11-25 "
            "inside a legacy session) (spec: schema, basic/index#schema)"
        ),
        seen("schema", "every message matched the schema"),
    )
    ctx.add(
        "framing.no-server-requests",
        FAIL if counts.get("request") else PASS,
        (
            "S·MUST NOT send JSON-RPC requests outside a legacy session; server-to-client "
            "input goes through MRTR (spec: basic/transports/stdio#receiving-messages)"
        ),
        seen("request", "no server-initiated requests"),
    )
    ctx.add(
        "framing.lf-line-endings",
        WARN if counts.get("crlf") else PASS,
        (
            "B·MUST: messages are delimited by \\n; \\r\\n leaves a stray \\r in every line "
            "(spec: basic/transports/stdio)"
        ),
        seen("crlf", "lines end with a bare \\n"),
    )
