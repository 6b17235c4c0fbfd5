"""notifications: a notification is never answered; no log without a logLevel and no
progress without a token.

`never_answered` runs on the main process; `unsolicited` looks at everything the processes
started so far received, just before the main process stops.
"""

from __future__ import annotations

import time

from ...jsonrpc import notification
from ...spec import CANCELLED, INITIALIZED, MESSAGE, PROGRESS, PROGRESS_TOKEN_KEY
from ...wire import encode
from ..model import FAIL, PASS, CheckContext, short
from ..runner import ServerProcess, idkey

ROOTS_LIST_CHANGED = "notifications/roots/list_changed"
"""A client notification a server may ignore."""


def never_answered(ctx: CheckContext, p: ServerProcess) -> None:
    rule = (
        "B·MUST NOT answer a notification, not even with an error; malformed or unknown "
        "notifications are ignored (spec: basic/index#notifications, "
        "basic/patterns/cancellation#error-handling)"
    )
    lines = [
        encode(notification(INITIALIZED)),
        encode(notification("notifications/mcpline-check/unknown", {"x": 1})),
        encode(
            notification(
                CANCELLED,
                {"requestId": "mcpline-check-never-sent", "reason": "check"},
            )
        ),
        encode(notification(CANCELLED, {"requestId": None})),
        encode(notification(CANCELLED, "not-an-object")),
        encode(notification(PROGRESS, {PROGRESS_TOKEN_KEY: "x", "progress": 1})),
        encode(notification(ROOTS_LIST_CHANGED)),
        b'{"jsonrpc":"2.0","method":42}\n',
        b'{"jsonrpc":"1.0","method":"notifications/initialized"}\n',
    ]
    mark = p.mark()
    p.send_raw(b"".join(lines))
    marker = ctx.marker_request(p)
    p.send(marker)
    p.wait_response(marker["id"], ctx.options.timeout)
    time.sleep(0.3)
    stray = [r.msg for r in p.since(mark) if r.is_response and r.msg.get("id") != marker["id"]]
    ctx.add(
        "notifications.never-answered",
        FAIL if stray else PASS,
        rule,
        f"{len(stray)} replies to notifications: {short(stray[:2])}"
        if stray
        else (
            f"{len(lines)} notifications (unknown, malformed, cancel of an unknown id) drew "
            "no reply"
        ),
    )


def unsolicited(ctx: CheckContext) -> None:
    logs, progress = 0, []
    for p in ctx.processes:
        if p.legacy_session or p.log_requested:
            continue
        for r in p.received:
            method = r.msg.get("method")
            if method == MESSAGE:
                logs += 1
            elif method == PROGRESS:
                params = r.msg.get("params")
                token = params.get(PROGRESS_TOKEN_KEY) if isinstance(params, dict) else None
                if idkey(token) not in p.progress_tokens:
                    progress.append(token)
    ctx.add(
        "notifications.no-log-without-level",
        FAIL if logs else PASS,
        (
            "S·MUST NOT emit notifications/message for a request whose _meta lacks logLevel "
            "(spec: server/utilities/logging#per-request-log-level)"
        ),
        f"{logs} {MESSAGE} although no request asked for logs"
        if logs
        else "no log notifications without logLevel",
    )
    ctx.add(
        "notifications.progress-tokens",
        FAIL if progress else PASS,
        "S·MUST echo the request's progressToken; no token → no progress (spec: "
        "basic/patterns/progress#behavior-requirements)",
        f"progress for tokens never sent: {progress[:5]}"
        if progress
        else "progress only for tokens the checker sent",
    )
