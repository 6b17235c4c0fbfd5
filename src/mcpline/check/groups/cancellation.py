"""cancellation: nothing more for a cancelled request, and the server keeps serving."""

from __future__ import annotations

import time

from ...protocol.meta import modern_meta
from ...spec import CANCELLED, DISCOVER, MODERN, PROGRESS_TOKEN_KEY, TOOLS_CALL
from ..model import FAIL, NO_SLOW_TOOL, PASS, SKIP, CheckContext, short
from ..runner import CLIENT_INFO, ServerProcess


def run(ctx: CheckContext, p: ServerProcess) -> None:
    rule = (
        "on stdio S·MUST NOT send any further message (response, progress, log) for a "
        "cancelled request (spec: basic/transports/stdio#cancellation)"
    )
    slow = ctx.slow
    if slow is None:
        ctx.add("cancellation.no-reply-after-cancel", SKIP, rule, NO_SLOW_TOOL)
        return
    token = "mcpline-check-cancel"
    msg = p.request_msg(
        TOOLS_CALL,
        {"name": slow.name, "arguments": slow.arguments(2.0)},
        id="cancel-me",
        meta=modern_meta(MODERN, {}, CLIENT_INFO, progress_token=token),
    )
    mark = p.mark()
    p.send(msg)
    time.sleep(0.3)
    p.notify(CANCELLED, {"requestId": "cancel-me", "reason": "mcpline check"})
    t_cancel = time.monotonic()
    time.sleep(2.6)
    after = [
        r.msg
        for r in p.since(mark)
        if r.t > t_cancel + 0.05
        and (
            r.msg.get("id") == "cancel-me"
            or (
                isinstance(r.msg.get("params"), dict)
                and r.msg["params"].get(PROGRESS_TOKEN_KEY) == token
            )
        )
    ]
    ctx.add(
        "cancellation.no-reply-after-cancel",
        FAIL if after else PASS,
        rule,
        f"after the cancel the server still sent {short(after[:2])}"
        if after
        else f"{slow.name}(2 s) cancelled after 0.3 s: nothing more was sent for it",
    )
    resp = p.request(DISCOVER, timeout=ctx.options.timeout)
    ctx.add(
        "cancellation.server-continues",
        PASS if resp else FAIL,
        "S·SHOULD stop the work and free resources; the server keeps serving (spec: "
        "basic/patterns/cancellation#behavior-requirements)",
        "the next request was answered" if resp else "the next request got no answer",
    )
