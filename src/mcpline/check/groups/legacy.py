"""legacy: the 2025-11-25 initialize handshake, the era the server speaks, and what a
dual-era client's first probe sees; in a process of its own."""

from __future__ import annotations

from ...spec import DISCOVER, INITIALIZE, INITIALIZED, MODERN, PING, TOOLS_LIST
from ..model import FAIL, PASS, WARN, CheckContext, is_discover_result, short
from ..runner import CLIENT_INFO
from ..schema import LEGACY


def run(ctx: CheckContext) -> None:
    timeout = ctx.options.timeout
    p = ctx.spawn("legacy")
    init = p.request_msg(
        INITIALIZE,
        {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO},
        id=0,
        meta=None,
    )
    p.send(init)
    resp = p.wait_response(0, ctx.options.startup_timeout)
    res = resp.get("result") if resp else None
    legacy_ok = (
        isinstance(res, dict)
        and isinstance(res.get("protocolVersion"), str)
        and isinstance(res.get("capabilities"), dict)
    )
    if legacy_ok:
        assert isinstance(res, dict)
        p.legacy_session = True
        p.notify(INITIALIZED)
        ctx.add(
            "legacy.initialize",
            PASS,
            "S·MAY serve the 2025-11-25 initialize handshake (spec: basic/versioning)",
            (
                f"{INITIALIZE} → protocolVersion {res.get('protocolVersion')!r}, serverInfo "
                f"{short(res.get('serverInfo'), 80)}"
            ),
        )
        ping = p.request(PING, meta=None, timeout=timeout)
        pres = ping.get("result") if ping else None
        ctx.add(
            "legacy.ping-empty",
            PASS if pres == {} else FAIL,
            (
                "legacy session follows 2025-11-25 wholesale: ping answers a literally empty "
                "{} (spec: basic/versioning#compatibility-matrix; "
                "conformance: ping)"
            ),
            f"{PING} answered {short(ping)}",
        )
        if "tools" in res.get("capabilities", {}):
            tl = p.request(TOOLS_LIST, meta=None, timeout=timeout)
            ok = bool(
                tl
                and isinstance(tl.get("result"), dict)
                and isinstance(tl["result"].get("tools"), list)
            )
            ctx.add(
                "legacy.tools-list",
                PASS if ok else FAIL,
                (
                    "legacy session: tools/list without _meta is served under 2025-11-25 "
                    "rules (spec: basic/versioning)"
                ),
                f"{TOOLS_LIST} answered {short(tl, 160)}",
            )
        if ctx.modern:
            d = p.request(DISCOVER, timeout=timeout)
            ctx.add(
                "legacy.modern-after-initialize",
                PASS if is_discover_result(d) else WARN,
                (
                    "mcpline rec: after initialize, requests with modern _meta are still "
                    "served statelessly (refines spec: basic/versioning#compatibility-matrix)"
                ),
                f"{DISCOVER} inside the legacy session answered {short(d, 160)}",
            )
    else:
        rule = (
            "legacy client → modern-only server: initialize is rejected; S·SHOULD name the "
            "supported versions in that error (spec: basic/versioning)"
        )
        err = resp.get("error") if resp else None
        if resp is None:
            ctx.add(
                "legacy.initialize",
                FAIL,
                rule + "; every request gets a response (spec: basic/index#responses)",
                f"{INITIALIZE} got no reply: a legacy client would hang",
            )
        elif err is None:
            ctx.add(
                "legacy.initialize",
                FAIL,
                rule,
                (f"{INITIALIZE} answered something that is not an InitializeResult: {short(resp)}"),
            )
        else:
            text = short(err, 400)
            names = any(v in text for v in (ctx.discover or {}).get("supportedVersions", [MODERN]))
            ctx.add(
                "legacy.initialize",
                PASS if names else WARN,
                rule,
                (
                    f"{INITIALIZE} "
                    f"rejected {'naming' if names else 'without naming'} the versions: "
                    f"{short(resp)}"
                ),
            )
    era = (
        "dual-era"
        if ctx.modern and legacy_ok
        else "modern-only"
        if ctx.modern
        else "legacy-only"
        if legacy_ok
        else "neither era"
    )
    ctx.facts["era"] = era
    ctx.add(
        "legacy.era",
        FAIL if era == "neither era" else PASS,
        (
            "a server speaks 2026-07-28 (per-request _meta), the initialize handshake, or "
            "both (spec: basic/versioning#compatibility-matrix)"
        ),
        (
            f"{era} (modern probe: {ctx.probe_outcome}; initialize: "
            f"{'accepted' if legacy_ok else 'refused'})"
        ),
    )
    rule = (
        "what a dual-era client's server/discover probe sees: a DiscoverResult or a modern "
        "error (-32020/-32021/-32022) means modern; any other error or a non-discover result "
        "means fall back to initialize; silence costs the probe timeout (spec: "
        "basic/transports/stdio#backward-compatibility)"
    )
    outcome = ctx.probe_outcome
    if ctx.modern:
        status, seen = PASS, f"{outcome}: a modern client proceeds without initialize"
    elif outcome in ("timeout", "exited"):
        status = WARN
        seen = (
            (
                f"the probe got no answer within {timeout:g} s: a dual-era client stalls "
                "for its probe timeout before falling back"
            )
            if outcome == "timeout"
            else (
                "the server exited on the probe: a dual-era client must restart it and go "
                "straight to initialize"
            )
        )
    else:
        status, seen = (
            PASS,
            (
                f"{outcome}: a dual-era client falls back to initialize at once "
                f"({short(ctx.facts.get('first_probe'), 160)})"
            ),
        )
    ctx.add("legacy.modern-probe", status, rule, seen)
    p.stop()
