"""concurrency: pipelined requests each answered once, a slow call that does not block the
reader, and a duplicate in-flight id."""

from __future__ import annotations

import time

from ...spec import DISCOVER, INVALID_REQUEST, TOOLS_CALL, TOOLS_LIST
from ...wire import encode
from ..model import (
    FAIL,
    NO_SLOW_TOOL,
    PASS,
    SKIP,
    WARN,
    CheckContext,
    error_code,
    is_discover_result,
    short,
)
from ..runner import ServerProcess, idkey


def run(ctx: CheckContext, p: ServerProcess) -> None:
    timeout = ctx.options.timeout
    ids = [f"many-{i}" for i in range(20)]
    method = TOOLS_LIST if "tools" in ctx.capabilities else DISCOVER
    msgs = [p.request_msg(method, id=i) for i in ids]
    for m in msgs:
        p.note_request(m)
    p.send_raw(b"".join(encode(m) for m in msgs))
    p.wait_until(lambda: all(p.responses.get(idkey(i)) for i in ids), timeout * 2)
    time.sleep(0.2)
    counts = [len(p.responses_for(i)) for i in ids]
    bad = [f"{i}×{c}" for i, c in zip(ids, counts, strict=True) if c != 1]
    ctx.add(
        "concurrency.pipelined",
        FAIL if bad else PASS,
        (
            "S·MUST answer every request exactly once with its id; several may be in flight "
            "(spec: basic/index#responses)"
        ),
        f"20 pipelined requests: wrong answer counts {bad[:6]}"
        if bad
        else "20 pipelined requests each answered exactly once",
    )
    rule = (
        "S·SHOULD cope with interleaved requests: keep reading while handlers run (spec: "
        "basic/index#statelessness)"
    )
    slow = ctx.slow
    if slow is None:
        ctx.add("concurrency.slow-does-not-block", SKIP, rule, NO_SLOW_TOOL)
        ctx.add(
            "concurrency.duplicate-id",
            SKIP,
            "mcpline rec: a duplicate in-flight id is -32600 (refines spec: basic/index#requests)",
            NO_SLOW_TOOL,
        )
        return
    slow_msg = p.request_msg(
        TOOLS_CALL, {"name": slow.name, "arguments": slow.arguments(2.0)}, id="slow-1"
    )
    fast_msg = p.request_msg(DISCOVER, id="fast-1")
    dup_msg = p.request_msg(DISCOVER, id="slow-1")
    t0 = time.monotonic()
    p.send(slow_msg)
    time.sleep(0.2)
    p.send(fast_msg)
    fast = p.wait_response("fast-1", timeout + 2)
    t_fast = time.monotonic() - t0
    p.send(dup_msg)
    time.sleep(0.3)
    key = idkey("slow-1")
    p.wait_until(lambda: any("result" in r.msg for r in p.responses.get(key, [])), timeout + 4)
    t_slow = time.monotonic() - t0
    time.sleep(0.2)
    slow_replies = p.responses_for("slow-1")
    slow_reply = slow_replies[0] if slow_replies else None
    fast_first = fast is not None and (
        slow_reply is None
        or p.responses[idkey("fast-1")][0].seq < p.responses[idkey("slow-1")][0].seq
    )
    ctx.add(
        "concurrency.slow-does-not-block",
        PASS if fast_first else WARN,
        rule,
        (
            f"{slow.name}(2 s) in flight; {DISCOVER} answered after {t_fast:.2f} s, the "
            f"slow call after {t_slow:.2f} s"
        )
        if fast
        else f"{DISCOVER} got no answer while {slow.name} ran",
    )
    dup = [r for r in slow_replies if "error" in r] + [
        r for r in p.responses_for(None) if "slow-1" in str(r.get("error"))
    ]
    first = [
        r for r in slow_replies if isinstance(r.get("result"), dict) and "content" in r["result"]
    ]
    second = [r for r in slow_replies if is_discover_result(r)]
    if len(first) == 1 and not second and dup and error_code(dup[0]) == INVALID_REQUEST:
        status, seen = (
            PASS,
            f"the duplicate was refused with {INVALID_REQUEST} and the first request still "
            "answered",
        )
    elif len(first) == 1 and not second and not dup:
        status, seen = (
            WARN,
            "the duplicate drew no reply (dropped silently); the first request was answered",
        )
    elif not first:
        status, seen = (
            WARN,
            (
                f"the first request ({TOOLS_CALL}) was never answered; replies for the id: "
                f"{short(slow_replies)}"
            ),
        )
    else:
        status, seen = (
            WARN,
            f"both requests with the id were run; replies: {short(slow_replies)}",
        )
    ctx.add(
        "concurrency.duplicate-id",
        status,
        (
            "mcpline rec: a second request reusing an in-flight id is refused with -32600 and "
            "the first is left untouched (refines spec: basic/index#requests)"
        ),
        seen,
    )
