"""errors: the JSON-RPC envelope, the error table, ``_meta`` validation and tool, prompt and
version errors, each probed with a marker request behind it (`CheckContext.probe`)."""

from __future__ import annotations

from typing import Any

from ...jsonrpc import request
from ...protocol.meta import modern_meta
from ...spec import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    DISCOVER,
    INITIALIZE,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN,
    PARSE_ERROR,
    PING,
    PROMPTS_GET,
    PROTOCOL_VERSION_KEY,
    SET_LEVEL,
    SUBSCRIBE,
    TOOLS_CALL,
    TOOLS_LIST,
    UNSUBSCRIBE,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ...wire import encode
from ..model import FAIL, PASS, SKIP, WARN, CheckContext, error_code, short
from ..runner import CLIENT_INFO, ServerProcess
from ..schema import LEGACY

LEGACY_ONLY_PROBES = (PING, SET_LEVEL, SUBSCRIBE, UNSUBSCRIBE, INITIALIZE)
"""`mcpline.spec.LEGACY_ONLY_METHODS` in the order they are probed and reported."""


def run(ctx: CheckContext, p: ServerProcess) -> None:
    rid = "err"
    env = (
        "JSON-RPC 2.0 envelope; -32600 for anything that is not a request object, id echoed "
        "only when it is a valid RequestId (spec: basic/index#requests, "
        "basic/index#error-responses; JSON-RPC 2.0: request_object, error_object)"
    )
    ctx.expect(
        "errors.parse-error",
        "-32700 for a line that is not JSON, without id (spec: basic/index#error-responses; "
        "JSON-RPC 2.0: error_object)",
        p,
        b'{"jsonrpc": "2.0", "method": \n',
        code=PARSE_ERROR,
        what="a truncated JSON line",
    )
    ctx.expect(
        "errors.invalid-utf8",
        (
            "B·MUST: messages are UTF-8; invalid UTF-8 is a parse error -32700 (spec: "
            "basic/transports#messages; JSON-RPC 2.0: error_object)"
        ),
        p,
        b'{"jsonrpc":"2.0","id":"utf8","method":"server/discover","params":{"_meta":{"x":"\xff\xfe"}}}\n',
        code=PARSE_ERROR,
        what="a line with invalid UTF-8 bytes",
        recoverable="utf8",
    )
    batch = (
        b"["
        + encode(p.request_msg(DISCOVER, id="batch-1"))[:-1]
        + b","
        + encode(p.request_msg(DISCOVER, id="batch-2"))[:-1]
        + b"]\n"
    )
    ctx.expect(
        "errors.batch",
        (
            "mcpline rec: a JSON array (batch) is one -32600 without id; elements are not "
            "processed (refines spec: basic/transports/stdio)"
        ),
        p,
        batch,
        code=INVALID_REQUEST,
        severity=WARN,
        what="a batch array",
    )
    processed = p.responses_for("batch-1") + p.responses_for("batch-2")
    if processed:
        ctx.add(
            "errors.batch-not-processed",
            WARN,
            (
                "mcpline rec: batch elements are not processed (refines spec: "
                "basic/transports/stdio)"
            ),
            f"{len(processed)} batch elements were answered",
        )
    ctx.expect(
        "errors.non-object", env, p, b"42\n", code=INVALID_REQUEST, what="the JSON number 42"
    )
    for label, raw_id in (
        ("null", "null"),
        ("bool", "true"),
        ("float", "1.5"),
        ("object", '{"a":1}'),
    ):
        line = (
            b'{"jsonrpc":"2.0","id":%s,"method":"server/discover","params":{}}\n' % raw_id.encode()
        )
        ctx.expect(
            f"errors.id-{label}",
            env + "; B·MUST: id is a string or integer, never null",
            p,
            line,
            code=INVALID_REQUEST,
            what=f"a request with id {raw_id}",
        )
    for cid, member, value, what in (
        ("errors.jsonrpc-version", "jsonrpc", "1.0", '"jsonrpc": "1.0" with a valid id'),
        ("errors.method-not-string", "method", 7, "method 7 with a valid id"),
    ):
        m = p.request_msg(DISCOVER, id=f"{rid}-{member}")
        m[member] = value
        ctx.expect(cid, env, p, m, code=INVALID_REQUEST, id=m["id"], what=what)
    m = p.request_msg("mcpline-check/no-such-method", id=f"{rid}-unknown")
    ctx.expect(
        "errors.unknown-method",
        "-32601 for an unknown method, id echoed (spec: basic/index#error-codes; JSON-RPC 2.0: "
        "error_object)",
        p,
        m,
        code=METHOD_NOT_FOUND,
        id=m["id"],
        what="an unknown method",
    )
    _meta_errors(ctx, p)
    _unsupported_version(ctx, p)
    m = p.request_msg(DISCOVER, id="err-legacy-version", meta=modern_meta(LEGACY, {}, CLIENT_INFO))
    ctx.expect(
        "errors.legacy-version-in-meta",
        "mcpline rec: a legacy version named in per-request _meta is -32022 (refines spec: "
        "basic/versioning#protocol-version-negotiation)",
        p,
        m,
        code=UNSUPPORTED_PROTOCOL_VERSION,
        id=m["id"],
        severity=WARN,
        what=f"_meta protocolVersion {LEGACY}",
    )
    m = p.request_msg(
        DISCOVER,
        id="err-loglevel",
        meta=modern_meta(MODERN, {}, CLIENT_INFO, log_level="verbose"),
    )
    ctx.expect(
        "errors.invalid-log-level",
        (
            "S·SHOULD answer -32602 for an unknown logLevel (spec: "
            "server/utilities/logging#error-handling)"
        ),
        p,
        m,
        code=INVALID_PARAMS,
        id=m["id"],
        severity=WARN,
        what="logLevel 'verbose'",
    )
    _legacy_only_methods(ctx, p)
    _tool_errors(ctx, p)
    rule = "S·SHOULD answer -32602 for an unknown prompt (spec: server/prompts#error-handling)"
    if "prompts" in ctx.capabilities:
        m = p.request_msg(PROMPTS_GET, {"name": "mcpline-check-no-such-prompt"}, id="err-prompt")
        ctx.expect(
            "errors.unknown-prompt",
            rule,
            p,
            m,
            code=INVALID_PARAMS,
            id=m["id"],
            severity=WARN,
            what=f"{PROMPTS_GET} of an unknown prompt",
        )
    else:
        ctx.add("errors.unknown-prompt", SKIP, rule, "the server does not declare prompts")


def _meta_errors(ctx: CheckContext, p: ServerProcess) -> None:
    meta_rule = (
        "S·MUST reject a request missing a required _meta key with -32602, echoing the id "
        "(spec: basic/index#meta)"
    )
    full = modern_meta(MODERN, {}, CLIENT_INFO)
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("errors.meta-missing", {"params": {}}, "params without _meta"),
        ("errors.params-missing", {}, "no params at all"),
        (
            "errors.meta-no-version",
            {"params": {"_meta": {k: v for k, v in full.items() if k != PROTOCOL_VERSION_KEY}}},
            "_meta without protocolVersion",
        ),
        (
            "errors.meta-no-capabilities",
            {"params": {"_meta": {k: v for k, v in full.items() if k != CLIENT_CAPABILITIES_KEY}}},
            "_meta without clientCapabilities",
        ),
    ]
    for cid, extra, what in cases:
        msg = {"jsonrpc": "2.0", "id": cid, "method": DISCOVER, **extra}
        ctx.expect(cid, meta_rule, p, msg, code=INVALID_PARAMS, id=cid, what=what)
    rec_rule = (
        "mcpline rec: a required _meta key of the wrong type is -32602 (refines spec: "
        "basic/index#meta)"
    )
    for cid, meta, what in (
        ("errors.meta-not-object", "oops", "_meta is a string"),
        (
            "errors.meta-version-not-string",
            {**full, PROTOCOL_VERSION_KEY: 20260728},
            "protocolVersion is a number",
        ),
        (
            "errors.meta-capabilities-not-object",
            {**full, CLIENT_CAPABILITIES_KEY: ["sampling"]},
            "clientCapabilities is an array",
        ),
    ):
        msg = request(cid, DISCOVER, {"_meta": meta})
        ctx.expect(cid, rec_rule, p, msg, code=INVALID_PARAMS, id=cid, severity=WARN, what=what)
    no_info = {k: v for k, v in full.items() if k != CLIENT_INFO_KEY}
    resp = p.request(DISCOVER, meta=no_info, timeout=ctx.options.timeout)
    ctx.add(
        "errors.client-info-optional",
        PASS if resp and "result" in resp else FAIL,
        (
            "clientInfo is optional: a request without it is served normally (spec: "
            "basic/index#meta)"
        ),
        f"discover without clientInfo answered {short(resp)}",
    )


def _unsupported_version(ctx: CheckContext, p: ServerProcess) -> None:
    rule = (
        "S·MUST answer -32022 with data.supported (non-empty, ⊆ supportedVersions) and "
        "data.requested echoed (spec: basic/versioning#protocol-version-negotiation)"
    )
    requested = "v999.0.0"
    resp = p.request(
        DISCOVER, meta=modern_meta(requested, {}, CLIENT_INFO), timeout=ctx.options.timeout
    )
    problems = []
    if error_code(resp) != UNSUPPORTED_PROTOCOL_VERSION:
        problems.append(f"code {error_code(resp)} instead of {UNSUPPORTED_PROTOCOL_VERSION}")
    else:
        assert resp is not None
        data = resp["error"].get("data")
        if not isinstance(data, dict):
            problems.append("no data object")
        else:
            sup = data.get("supported")
            if not isinstance(sup, list) or not sup or not all(isinstance(v, str) for v in sup):
                problems.append(f"data.supported={sup!r}")
            elif ctx.discover and not set(sup) <= set(ctx.discover.get("supportedVersions", [])):
                problems.append(
                    f"data.supported {sup} not within supportedVersions "
                    f"{ctx.discover.get('supportedVersions')}"
                )
            if data.get("requested") != requested:
                problems.append(f"data.requested={data.get('requested')!r}")
    ctx.add(
        "errors.unsupported-version",
        FAIL if problems else PASS,
        rule,
        f"{'; '.join(problems) + ' — ' if problems else ''}{short(resp)}",
    )


def _legacy_only_methods(ctx: CheckContext, p: ServerProcess) -> None:
    wrong = []
    for method in LEGACY_ONLY_PROBES:
        params: dict[str, Any] = {"level": "info"} if method == SET_LEVEL else {}
        if method in (SUBSCRIBE, UNSUBSCRIBE):
            params = {"uri": "mcpline-check://x"}
        if method == INITIALIZE:
            params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO}
        resp = p.request(method, params, timeout=ctx.options.timeout)
        if error_code(resp) != METHOD_NOT_FOUND:
            wrong.append(f"{method}→{short(resp, 90)}")
    ctx.add(
        "errors.removed-methods",
        FAIL if wrong else PASS,
        (
            "-32601 for handshake-era methods sent with modern _meta: initialize, ping, "
            "logging/setLevel, resources/(un)subscribe (spec: changelog#major-changes; "
            "JSON-RPC 2.0: error_object; conformance: "
            "sep-2575-http-server-method-not-found-404-*)"
        ),
        "; ".join(wrong) or f"all of {', '.join(LEGACY_ONLY_PROBES)} answered {METHOD_NOT_FOUND}",
    )


def _tool_errors(ctx: CheckContext, p: ServerProcess) -> None:
    rule = "-32602 for an unknown tool, a protocol error (spec: server/tools#error-handling)"
    if "tools" not in ctx.capabilities:
        for cid in (
            "errors.unknown-tool",
            "errors.arguments-not-object",
            "errors.bad-arguments",
        ):
            ctx.add(cid, SKIP, rule, "the server does not declare tools")
        return
    m = p.request_msg(
        TOOLS_CALL, {"name": "mcpline-check-no-such-tool", "arguments": {}}, id="err-tool"
    )
    ctx.expect(
        "errors.unknown-tool",
        rule,
        p,
        m,
        code=INVALID_PARAMS,
        id=m["id"],
        what=f"{TOOLS_CALL} of an unknown tool",
    )
    last = ctx.results[-1]
    if last.status == FAIL and '"isError":true' in last.seen:
        last.status = WARN
        last.seen += " (an isError result: the spec classifies an unknown tool as a protocol error)"
    tools = ctx.tools or []
    target = next((t for t in tools if (t.get("inputSchema") or {}).get("required")), None)
    if not tools:
        ctx.add("errors.arguments-not-object", SKIP, rule, f"{TOOLS_LIST} is empty")
    else:
        m = p.request_msg(
            TOOLS_CALL, {"name": tools[0]["name"], "arguments": [1, 2]}, id="err-args-array"
        )
        ctx.expect(
            "errors.arguments-not-object",
            (
                "mcpline rec: tools/call 'arguments' that is not an object is -32602 "
                "(refines spec: server/tools#error-handling)"
            ),
            p,
            m,
            code=INVALID_PARAMS,
            id=m["id"],
            severity=WARN,
            what=f"{TOOLS_CALL} {tools[0]['name']!r} with arguments [1, 2]",
        )
    rule = (
        "mcpline rec: arguments failing inputSchema are a tool execution error (isError: "
        "true), not a protocol error; S·MUST validate inputs (spec: "
        "server/tools#error-handling, server/tools#security-considerations)"
    )
    if target is None:
        ctx.add("errors.bad-arguments", SKIP, rule, "no listed tool has a required argument")
        return
    resp = p.request(
        TOOLS_CALL, {"name": target["name"], "arguments": {}}, timeout=ctx.options.timeout
    )
    res = resp.get("result") if resp else None
    if isinstance(res, dict) and res.get("isError") is True:
        status, seen = PASS, "isError result"
    elif error_code(resp) == INVALID_PARAMS:
        status, seen = WARN, f"a {INVALID_PARAMS} protocol error (the model cannot see it)"
    elif resp is None:
        status, seen = FAIL, "no reply"
    else:
        status, seen = FAIL, "the call did not report an error"
    ctx.add(
        "errors.bad-arguments",
        status,
        rule,
        f"{TOOLS_CALL} {target['name']!r} without its required arguments: {seen}: {short(resp)}",
    )
    if any(t.get("name") == "test_missing_capability" for t in tools):
        m = p.request_msg(
            TOOLS_CALL, {"name": "test_missing_capability", "arguments": {}}, id="err-capability"
        )
        replies, _, _ = ctx.probe(p, m, m["id"])
        reply = replies[0] if replies else None
        data = (
            reply["error"].get("data")
            if error_code(reply) == MISSING_REQUIRED_CLIENT_CAPABILITY and reply
            else None
        )
        ok = (
            isinstance(data, dict)
            and isinstance(data.get("requiredCapabilities"), dict)
            and isinstance(data["requiredCapabilities"].get("sampling"), dict)
        )
        ctx.add(
            "errors.missing-capability",
            PASS if ok else FAIL,
            (
                "S·MUST answer -32021 with data.requiredCapabilities as a ClientCapabilities "
                "object (spec: basic/index#meta; conformance: "
                "sep-2575-server-rejects-undeclared-capability)"
            ),
            f"test_missing_capability without sampling answered {short(reply)}",
        )
