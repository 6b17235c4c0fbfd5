"""discover: server/discover, the capabilities it declares against what the handlers do,
tool definitions, list order, cursors and resource errors."""

from __future__ import annotations

import re

from ...spec import (
    COMPLETE,
    DISCOVER,
    INVALID_PARAMS,
    LISTS,
    METHOD_NOT_FOUND,
    MODERN,
    RESOURCES_LIST,
    RESOURCES_READ,
    TOOL_NAME_MAX,
    TOOLS_LIST,
)
from ..model import FAIL, PASS, SKIP, WARN, CheckContext, error_code, short
from ..runner import ServerProcess

LIST_KINDS = ("tools", "prompts", "resources")
"""The paginated lists checked against the capabilities, in the order they are probed."""
TOOL_NAME = re.compile(rf"^[A-Za-z0-9_.\-]{{1,{TOOL_NAME_MAX}}}$")


def run(ctx: CheckContext, p: ServerProcess) -> None:
    timeout = ctx.options.timeout
    first = ctx.facts.get("first_probe")
    rule = (
        "S·MUST implement server/discover: resultType, supportedVersions, capabilities "
        "(spec: server/discover)"
    )
    if not ctx.modern:
        ctx.add(
            "discover.implemented",
            FAIL,
            rule,
            f"{DISCOVER} answered {short(first)} ({ctx.probe_outcome})",
        )
        for cid in (
            "discover.result-fields",
            "discover.capabilities-match",
            "discover.tool-definitions",
            "discover.deterministic-order",
        ):
            ctx.add(
                cid,
                SKIP,
                rule,
                f"the server did not answer {DISCOVER} with a DiscoverResult",
            )
        return
    assert ctx.discover is not None
    d = ctx.discover
    ctx.add(
        "discover.implemented",
        PASS,
        rule,
        (
            f"supportedVersions={d.get('supportedVersions')} "
            f"capabilities={short(d.get('capabilities'), 160)}"
        ),
    )
    problems = []
    if d.get("resultType") != "complete":
        problems.append(f"resultType={d.get('resultType')!r}")
    if MODERN not in d.get("supportedVersions", []):
        problems.append(f"{MODERN} not in supportedVersions")
    ttl = d.get("ttlMs")
    if type(ttl) is not int or ttl < 0:
        problems.append(f"ttlMs={ttl!r} (need an integer >= 0)")
    if d.get("cacheScope") not in ("public", "private"):
        problems.append(f"cacheScope={d.get('cacheScope')!r}")
    ctx.add(
        "discover.result-fields",
        FAIL if problems else PASS,
        (
            "S·MUST: resultType on every result; ttlMs (integer >= 0) and cacheScope on "
            "cacheable results (spec: basic/index#result-responses, "
            "server/utilities/caching#cacheable-results)"
        ),
        "; ".join(problems) or f"resultType=complete ttlMs={ttl} cacheScope={d.get('cacheScope')}",
    )
    # What the server declares vs what its handlers do.
    mismatches, notes = [], []
    for cap in LIST_KINDS:
        method = LISTS[cap][0]
        resp = p.request(method, timeout=timeout)
        declared = cap in ctx.capabilities
        missing = error_code(resp) == METHOD_NOT_FOUND
        got = "result" if resp and "result" in resp else short(resp, 60)
        outcome = str(METHOD_NOT_FOUND) if missing else got
        notes.append(f"{cap}: declared={declared} {method}→{outcome}")
        if declared and (resp is None or "result" not in resp):
            mismatches.append(f"{cap} declared but {method} answered {short(resp, 100)}")
        if not declared and resp is not None and not missing:
            mismatches.append(
                f"{cap} not declared but {method} answered {short(resp, 100)} instead of "
                f"{METHOD_NOT_FOUND}"
            )
    resp = p.request(
        COMPLETE,
        {
            "ref": {"type": "ref/prompt", "name": "mcpline-check-none"},
            "argument": {"name": "x", "value": ""},
        },
        timeout=timeout,
    )
    declared = "completions" in ctx.capabilities
    if not declared and resp is not None and error_code(resp) != METHOD_NOT_FOUND:
        mismatches.append(
            f"completions not declared but {COMPLETE} answered "
            f"{short(resp, 100)} instead of {METHOD_NOT_FOUND}"
        )
    if declared and error_code(resp) == METHOD_NOT_FOUND:
        mismatches.append(f"completions declared but {COMPLETE} answered {METHOD_NOT_FOUND}")
    ctx.add(
        "discover.capabilities-match",
        FAIL if mismatches else PASS,
        (
            "S·MUST declare the capabilities its handlers honour; an undeclared feature "
            "answers -32601 (spec: server/tools#capabilities, "
            "server/utilities/completion#error-handling)"
        ),
        "; ".join(mismatches) or "; ".join(notes),
    )
    _tool_definitions(ctx)
    # Deterministic order.
    diffs, compared = [], []
    for cap in LIST_KINDS:
        if cap not in ctx.capabilities:
            continue
        a = ctx.list_all(p, cap)
        b = ctx.list_all(p, cap)
        if a is None or b is None:
            continue
        key = "uri" if cap == "resources" else "name"
        ka, kb = [x.get(key) for x in a], [x.get(key) for x in b]
        compared.append(f"{cap} ({len(ka)})")
        if ka != kb:
            diffs.append(f"{cap}: {ka[:5]} then {kb[:5]}")
    ctx.add(
        "discover.deterministic-order",
        WARN if diffs else (PASS if compared else SKIP),
        (
            "S·SHOULD: deterministic order for an unchanged list; lists MUST NOT vary as a "
            "side effect of other requests (spec: server/tools#capabilities)"
        ),
        "; ".join(diffs)
        or (f"same order twice for {', '.join(compared)}" if compared else "no lists declared"),
    )
    _invalid_cursor(ctx, p)
    _resources(ctx, p)


def _tool_definitions(ctx: CheckContext) -> None:
    if ctx.tools is None:
        ctx.add(
            "discover.tool-definitions",
            SKIP,
            "S·MUST: tool definitions are valid (spec: server/tools#tool)",
            f"{TOOLS_LIST} failed: {ctx.tools_error}",
        )
        return
    bad_schema = [
        t.get("name")
        for t in ctx.tools
        if not isinstance(t.get("inputSchema"), dict) or t["inputSchema"].get("type") != "object"
    ]
    bad_name = [
        t.get("name")
        for t in ctx.tools
        if not isinstance(t.get("name"), str) or not TOOL_NAME.match(t["name"])
    ]
    names = [t.get("name") for t in ctx.tools]
    dups = sorted({n for n in names if names.count(n) > 1}, key=str)
    if bad_schema:
        status, seen = (
            FAIL,
            f"inputSchema is not an object schema with type 'object' for {bad_schema[:5]}",
        )
    elif bad_name or dups:
        status, seen = (
            WARN,
            (
                f"names outside 1-{TOOL_NAME_MAX} chars of [A-Za-z0-9_.-]: {bad_name[:5]}; "
                f"duplicates: {dups[:5]}"
            ),
        )
    else:
        status, seen = PASS, f"{len(ctx.tools)} tools, object input schemas, names well-formed"
    ctx.add(
        "discover.tool-definitions",
        status,
        (
            "S·MUST: inputSchema is a JSON Schema object with type 'object'; S·SHOULD: "
            "unique names of 1-128 chars [A-Za-z0-9_.-] (spec: server/tools#tool, "
            "server/tools#tool-names)"
        ),
        seen,
    )


def _invalid_cursor(ctx: CheckContext, p: ServerProcess) -> None:
    rule = (
        "S·SHOULD answer -32602 for an invalid cursor (spec: "
        "server/utilities/pagination#error-handling)"
    )
    cap = next((c for c in LIST_KINDS if c in ctx.capabilities), None)
    if cap is None:
        ctx.add("discover.invalid-cursor", SKIP, rule, "no paginated list is declared")
        return
    method = LISTS[cap][0]
    resp = p.request(method, {"cursor": "mcpline-check-not-a-cursor"}, timeout=ctx.options.timeout)
    code = error_code(resp)
    status = PASS if code == INVALID_PARAMS else (FAIL if resp is None else WARN)
    ctx.add(
        "discover.invalid-cursor",
        status,
        rule,
        f"{method} with a made-up cursor answered {short(resp)}",
    )


def _resources(ctx: CheckContext, p: ServerProcess) -> None:
    rule = (
        "S·MUST answer -32602 for an unknown resource, never -32002 nor empty contents; "
        "S·SHOULD put {uri} in data (spec: server/resources#error-handling, "
        "basic/index#error-codes)"
    )
    if "resources" not in ctx.capabilities:
        ctx.add("discover.resource-not-found", SKIP, rule, "the server does not declare resources")
        return
    uri = "mcpline-check://no/such/resource"
    resp = p.request(RESOURCES_READ, {"uri": uri}, timeout=ctx.options.timeout)
    code = error_code(resp)
    data = resp["error"].get("data") if code is not None and resp else None
    if code == INVALID_PARAMS:
        status = PASS if isinstance(data, dict) and data.get("uri") == uri else WARN
    else:
        status = FAIL
    ctx.add(
        "discover.resource-not-found",
        status,
        rule,
        f"{RESOURCES_READ} of an unknown URI answered {short(resp)}",
    )
    resources = ctx.list_all(p, "resources") or []
    rule = (
        "S·MUST: resources/read results carry contents, ttlMs and cacheScope (spec: "
        "server/resources#reading-resources, server/utilities/caching#cacheable-results)"
    )
    if not resources:
        ctx.add("discover.resource-read", SKIP, rule, f"{RESOURCES_LIST} is empty")
        return
    first = resources[0].get("uri")
    resp = p.request(RESOURCES_READ, {"uri": first}, timeout=ctx.options.timeout)
    res = resp.get("result") if resp else None
    ok = (
        isinstance(res, dict)
        and isinstance(res.get("contents"), list)
        and res["contents"]
        and type(res.get("ttlMs")) is int
        and res["ttlMs"] >= 0
        and res.get("cacheScope") in ("public", "private")
    ) or (isinstance(res, dict) and res.get("resultType") == "input_required")
    ctx.add(
        "discover.resource-read",
        PASS if ok else FAIL,
        rule,
        f"{RESOURCES_READ} {first!r} answered {short(resp)}",
    )
