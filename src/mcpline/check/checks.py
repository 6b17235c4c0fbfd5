"""The checks `mcpline check` runs against a stdio server, grouped.

Every check names the rule it enforces, cites the MCP 2026-07-28 specification or JSON-RPC 2.0
in the compact form of `cite.py` (`docs/check.md` lists them), and says what it saw. Severity
follows the rule's keyword: a broken MUST is a FAIL, a broken SHOULD or recommendation is a
WARN. Checks that need something the server does not offer are SKIPped with the reason.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ..jsonrpc import MISSING, notification, request
from ..protocol.meta import modern_meta
from ..spec import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    MODERN,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
)
from ..wire import encode
from .runner import CLIENT_INFO, ServerProcess, idkey
from .schema import LEGACY

PASS, FAIL, WARN, SKIP = "PASS", "FAIL", "WARN", "SKIP"
SETTLE = 0.5
"""How long a probe's reply may trail the reply to the request written after it."""
GROUPS = (
    "framing",
    "errors",
    "discover",
    "notifications",
    "concurrency",
    "cancellation",
    "lifecycle",
    "legacy",
)
EXTRA_GROUPS = ("fuzz", "soak")
MODERN_ERRORS = frozenset({-32020, -32021, -32022})
CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
LISTS = {
    "tools": ("tools/list", "tools"),
    "prompts": ("prompts/list", "prompts"),
    "resources": ("resources/list", "resources"),
}
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
SLOW_NAME = re.compile(r"sleep|slow|delay|wait", re.I)
DURATION_PROP = re.compile(
    r"^(ms|millis|milliseconds|seconds|secs|sec|s|duration|delay|time|t)$", re.I
)
REMOVED_METHODS = (
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "initialize",
)


@dataclass
class CheckResult:
    id: str
    group: str
    status: str
    rule: str
    seen: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class SlowTool:
    """A tool that can be made to take a chosen time (found via tools/list)."""

    name: str
    prop: str
    per_second: float
    """Argument units per second (1000 for milliseconds, 1 for seconds)."""
    integer: bool

    def arguments(self, seconds: float) -> dict[str, Any]:
        value = seconds * self.per_second
        return {self.prop: int(round(value)) if self.integer else value}


def find_slow_tool(tools: Iterable[dict[str, Any]]) -> SlowTool | None:
    """A sleep-like tool: its name says sleep/slow/delay/wait and it takes one duration number."""
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not SLOW_NAME.search(name):
            continue
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict):
            continue
        props = schema.get("properties")
        if not isinstance(props, dict):
            continue
        required = schema.get("required") or []
        numeric = {
            k: v
            for k, v in props.items()
            if isinstance(v, dict) and v.get("type") in ("integer", "number")
        }
        if len(numeric) != 1 or any(r not in numeric for r in required):
            continue
        prop, spec = next(iter(numeric.items()))
        if not DURATION_PROP.match(prop):
            continue
        desc = f"{prop} {spec.get('description', '')} {tool.get('description', '')}".lower()
        millis = (
            prop.lower() in ("ms", "millis", "milliseconds")
            or "millisecond" in desc
            or " ms" in desc
        )
        return SlowTool(name, prop, 1000.0 if millis else 1.0, spec.get("type") == "integer")
    return None


def _short(value: Any, limit: int = 220) -> str:
    text = encode(value).decode("utf-8", "replace").rstrip("\n") if value is not None else "nothing"
    return text if len(text) <= limit else text[:limit] + "…"


def _code(msg: dict[str, Any] | None) -> int | None:
    if not msg or not isinstance(msg.get("error"), dict):
        return None
    code = msg["error"].get("code")
    return code if type(code) is int else None


def _is_discover_result(msg: dict[str, Any] | None) -> bool:
    res = msg.get("result") if msg else None
    return (
        isinstance(res, dict)
        and isinstance(res.get("supportedVersions"), list)
        and isinstance(res.get("capabilities"), dict)
    )


class Checker:
    """Runs the selected groups against ``argv`` and collects `CheckResult`s."""

    def __init__(
        self,
        argv: list[str],
        *,
        groups: Iterable[str] = GROUPS,
        timeout: float = 5.0,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        fuzz: int = 0,
        seed: int = 0,
        soak: int = 0,
        exit_timeout: float = 5.0,
        startup_timeout: float = 20.0,
        on_result: Callable[[CheckResult], None] | None = None,
    ) -> None:
        self.argv = argv
        self.groups = list(groups)
        self.timeout = timeout
        self.env = env
        self.cwd = cwd
        self.fuzz_lines = fuzz
        self.seed = seed
        self.soak_requests = soak
        self.exit_timeout = exit_timeout
        self.startup_timeout = max(startup_timeout, timeout)
        """How long the first request to a fresh process may take (slow starters exist)."""
        self.on_result = on_result
        self.results: list[CheckResult] = []
        self.processes: list[ServerProcess] = []
        self.facts: dict[str, Any] = {}
        self.discover: dict[str, Any] | None = None
        self.capabilities: dict[str, Any] = {}
        self.tools: list[dict[str, Any]] | None = None
        self.tools_error = ""
        self.probe_outcome = "not probed"
        self.modern = False
        self._marker = 0
        self.main: ServerProcess | None = None

    # --- bookkeeping ------------------------------------------------------------------------

    def add(self, cid: str, status: str, rule: str, seen: str) -> CheckResult:
        res = CheckResult(cid, cid.split(".", 1)[0], status, rule, seen)
        self.results.append(res)
        if self.on_result is not None:
            self.on_result(res)
        return res

    def spawn(self, label: str, **kw: Any) -> ServerProcess:
        p = ServerProcess(self.argv, label=label, env=self.env, cwd=self.cwd, **kw)
        self.processes.append(p)
        return p

    def wants(self, group: str) -> bool:
        return group in self.groups

    # --- probing helpers ------------------------------------------------------------------

    def marker_request(self, p: ServerProcess) -> dict[str, Any]:
        self._marker += 1
        return p.request_msg("server/discover", id=f"mcpline-check-marker-{self._marker}")

    def probe(
        self, p: ServerProcess, data: bytes | dict[str, Any], id: Any = MISSING
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
        """Send one line; return (replies carrying ``id``, id-less error replies, marker answered).

        A valid marker request is written right behind the probe: once the marker is
        answered (and a short settle has passed) a probe that drew nothing is taken to draw
        nothing, instead of waiting out the full timeout for every silent probe.
        """
        mark = p.mark()
        if isinstance(data, dict):
            p.send(data)
        else:
            p.send_raw(data)
        marker = self.marker_request(p)
        p.send(marker)
        mkey = idkey(marker["id"])
        pkey = idkey(id) if id is not MISSING else None
        p.wait_until(
            lambda: (
                bool(p.responses.get(mkey)) or (pkey is not None and bool(p.responses.get(pkey)))
            ),
            self.timeout,
        )
        marker_ok = (
            p.wait_response(
                marker["id"], 0.0 if pkey is None or not p.responses.get(pkey) else self.timeout
            )
            is not None
        )
        if pkey is not None and not p.responses.get(pkey):
            p.wait_response(id, SETTLE)
        time.sleep(0.15)
        got = p.since(mark)
        anon = [r.msg for r in got if r.is_anonymous_error]
        replies = p.responses_for(id) if id is not MISSING else []
        return replies, anon, marker_ok

    # --- main flow ------------------------------------------------------------------------

    def run(self) -> list[CheckResult]:
        try:
            self._run()
        finally:
            for p in self.processes:
                if p.alive or not p.stdout_closed:
                    p.stop()
        if self.wants("framing"):
            self.check_purity()
        order = {g: i for i, g in enumerate(GROUPS + EXTRA_GROUPS)}
        self.results.sort(key=lambda r: order.get(r.group, len(order)))
        return self.results

    def _run(self) -> None:
        main = self.main = self.spawn("main")
        self.probe_modern(main)
        if self.wants("framing"):
            self.check_framing_probes(main)
        if self.wants("discover"):
            self.check_discover(main)
        if self.wants("errors"):
            self.check_errors(main)
        if self.wants("notifications"):
            self.check_notifications(main)
        slow = find_slow_tool(self.tools or [])
        if slow is not None:
            self.facts["slow_tool"] = slow.name
        if self.wants("concurrency"):
            self.check_concurrency(main, slow)
        if self.wants("cancellation"):
            self.check_cancellation(main, slow)
        if self.wants("notifications"):
            self.check_unsolicited()
        main.stop()
        if self.wants("legacy"):
            self.check_legacy()
        if self.wants("lifecycle"):
            self.check_lifecycle(slow)
        fuzz = self.wants("fuzz") and self.fuzz_lines > 0
        soak = self.wants("soak") and self.soak_requests > 0
        if fuzz or soak:
            from .fuzz import corpus_for, run_fuzz_check, run_soak_check

            corpus = corpus_for(self, slow, self.seed)
            if fuzz:
                run_fuzz_check(self, corpus, self.fuzz_lines, self.seed)
            if soak:
                run_soak_check(self, corpus, self.soak_requests)

    def probe_modern(self, p: ServerProcess) -> None:
        """The first request a modern client sends: ``server/discover``
        (spec: basic/transports/stdio#backward-compatibility)."""
        resp = p.request("server/discover", timeout=self.startup_timeout)
        self.facts["first_probe"] = resp
        if resp is None:
            self.probe_outcome = "exited" if not p.alive else "timeout"
        elif _is_discover_result(resp):
            self.probe_outcome = "modern"
            self.discover = resp["result"]
            self.capabilities = resp["result"]["capabilities"]
        elif _code(resp) in MODERN_ERRORS:
            self.probe_outcome = f"modern error {_code(resp)}"
        elif "error" in resp:
            self.probe_outcome = f"error {_code(resp)}"
        else:
            self.probe_outcome = "non-discover result"
        self.modern = self.probe_outcome.startswith("modern")
        info = (self.discover or {}).get("_meta", {}) if self.discover else {}
        server_info = info.get(SERVER_INFO_KEY) if isinstance(info, dict) else None
        if isinstance(server_info, dict):
            self.facts["server"] = f"{server_info.get('name')} {server_info.get('version')}"
        self.tools = self.list_all(p, "tools") if self.modern else None

    def list_all(self, p: ServerProcess, kind: str) -> list[dict[str, Any]] | None:
        """Every item of a paginated list (None when the list fails)."""
        method, key = LISTS[kind]
        items: list[dict[str, Any]] = []
        cursor: Any = MISSING
        for _ in range(1000):
            params = {} if cursor is MISSING else {"cursor": cursor}
            resp = p.request(method, params, timeout=self.timeout)
            res = resp.get("result") if resp else None
            if not isinstance(res, dict) or not isinstance(res.get(key), list):
                if kind == "tools":
                    self.tools_error = f"{method} answered {_short(resp)}"
                return None
            items.extend(x for x in res[key] if isinstance(x, dict))
            if "nextCursor" not in res or not isinstance(res["nextCursor"], str):
                return items
            cursor = res["nextCursor"]
        return items

    # --- framing ---------------------------------------------------------------------------

    def check_framing_probes(self, p: ServerProcess) -> None:
        rule = (
            "B·MUST: newline-delimited JSON-RPC over a byte stream; a message may arrive in any "
            "number of reads (spec: basic/transports/stdio)"
        )
        msg = p.request_msg("server/discover", id="split-write")
        data = encode(msg)
        cuts = (len(data) // 3, 2 * len(data) // 3)
        p.note_request(msg)
        p.send_raw(data[: cuts[0]])
        time.sleep(0.1)
        p.send_raw(data[cuts[0] : cuts[1]])
        time.sleep(0.1)
        p.send_raw(data[cuts[1] :])
        got = p.wait_response("split-write", self.timeout)
        self.add(
            "framing.split-writes",
            PASS if got else FAIL,
            rule,
            "a request written in three pieces was answered"
            if got
            else "a request written in three pieces got no answer",
        )
        batch = [p.request_msg("server/discover", id=f"coalesced-{i}") for i in range(3)]
        for m in batch:
            p.note_request(m)
        p.send_raw(b"".join(encode(m) for m in batch))
        ok = [p.wait_response(m["id"], self.timeout) is not None for m in batch]
        self.add(
            "framing.coalesced-writes",
            PASS if all(ok) else FAIL,
            rule,
            f"{sum(ok)} of 3 requests written in one chunk were answered",
        )
        m = p.request_msg("server/discover", id="crlf")
        p.note_request(m)
        p.send_raw(b"\n  \n" + encode(m)[:-1] + b"\r\n")
        got = p.wait_response("crlf", self.timeout)
        anon = [r.msg for r in p.since(0) if r.is_anonymous_error]
        self.add(
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
        big = p.request_msg(
            "server/discover",
            id="large",
            meta={
                **modern_meta(MODERN, {}, CLIENT_INFO),
                "dev.mcpline-check/padding": "x" * (1 << 20),
            },
        )
        p.send(big)
        got = p.wait_response("large", max(self.timeout, 10.0))
        self.add(
            "framing.large-message",
            PASS if got else WARN,
            (
                "mcpline rec: accept lines far above 64 KiB; a base64 blob overflows default "
                "stream limits (refines spec: basic/transports/stdio)"
            ),
            "a 1 MiB request was answered" if got else "a 1 MiB request got no answer",
        )

    def check_purity(self) -> None:
        counts: dict[str, int] = {}
        examples: dict[str, list[str]] = {}
        lines = early = 0
        for p in self.processes:
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

        self.add(
            "framing.stdout-pure",
            FAIL if counts.get("impure") else PASS,
            (
                "S·MUST NOT write anything to stdout that is not a valid MCP message; UTF-8, one "
                "JSON object per line (spec: basic/transports/stdio, basic/transports#messages)"
            ),
            seen(
                "impure",
                (
                    f"all {lines} stdout lines from {len(self.processes)} processes were UTF-8 "
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
        self.add(
            "framing.schema-valid",
            FAIL if counts.get("schema") else PASS,
            (
                "B·MUST: every message valid against the official 2026-07-28 schema (2025-11-25 "
                "inside a legacy session) (spec: schema, basic/index#schema)"
            ),
            seen("schema", "every message matched the schema"),
        )
        self.add(
            "framing.no-server-requests",
            FAIL if counts.get("request") else PASS,
            (
                "S·MUST NOT send JSON-RPC requests outside a legacy session; server-to-client "
                "input goes through MRTR (spec: basic/transports/stdio#receiving-messages)"
            ),
            seen("request", "no server-initiated requests"),
        )
        self.add(
            "framing.lf-line-endings",
            WARN if counts.get("crlf") else PASS,
            (
                "B·MUST: messages are delimited by \\n; \\r\\n leaves a stray \\r in every line "
                "(spec: basic/transports/stdio)"
            ),
            seen("crlf", "lines end with a bare \\n"),
        )

    # --- discover and results ----------------------------------------------------------------

    def check_discover(self, p: ServerProcess) -> None:
        first = self.facts.get("first_probe")
        rule = (
            "S·MUST implement server/discover: resultType, supportedVersions, capabilities "
            "(spec: server/discover)"
        )
        if not self.modern:
            self.add(
                "discover.implemented",
                FAIL,
                rule,
                f"server/discover answered {_short(first)} ({self.probe_outcome})",
            )
            for cid in (
                "discover.result-fields",
                "discover.capabilities-match",
                "discover.tool-definitions",
                "discover.deterministic-order",
            ):
                self.add(
                    cid,
                    SKIP,
                    rule,
                    "the server did not answer server/discover with a DiscoverResult",
                )
            return
        assert self.discover is not None
        d = self.discover
        self.add(
            "discover.implemented",
            PASS,
            rule,
            (
                f"supportedVersions={d.get('supportedVersions')} "
                f"capabilities={_short(d.get('capabilities'), 160)}"
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
        self.add(
            "discover.result-fields",
            FAIL if problems else PASS,
            (
                "S·MUST: resultType on every result; ttlMs (integer >= 0) and cacheScope on "
                "cacheable results (spec: basic/index#result-responses, "
                "server/utilities/caching#cacheable-results)"
            ),
            "; ".join(problems)
            or f"resultType=complete ttlMs={ttl} cacheScope={d.get('cacheScope')}",
        )
        # What the server declares vs what its handlers do.
        mismatches, notes = [], []
        for cap, (method, _key) in LISTS.items():
            resp = p.request(method, timeout=self.timeout)
            declared = cap in self.capabilities
            missing = _code(resp) == -32601
            got = "result" if resp and "result" in resp else _short(resp, 60)
            outcome = "-32601" if missing else got
            notes.append(f"{cap}: declared={declared} {method}→{outcome}")
            if declared and (resp is None or "result" not in resp):
                mismatches.append(f"{cap} declared but {method} answered {_short(resp, 100)}")
            if not declared and resp is not None and not missing:
                mismatches.append(
                    f"{cap} not declared but {method} answered {_short(resp, 100)} instead of "
                    "-32601"
                )
        resp = p.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "mcpline-check-none"},
                "argument": {"name": "x", "value": ""},
            },
            timeout=self.timeout,
        )
        declared = "completions" in self.capabilities
        if not declared and resp is not None and _code(resp) != -32601:
            mismatches.append(
                "completions not declared but completion/complete answered "
                f"{_short(resp, 100)} instead of -32601"
            )
        if declared and _code(resp) == -32601:
            mismatches.append("completions declared but completion/complete answered -32601")
        self.add(
            "discover.capabilities-match",
            FAIL if mismatches else PASS,
            (
                "S·MUST declare the capabilities its handlers honour; an undeclared feature "
                "answers -32601 (spec: server/tools#capabilities, "
                "server/utilities/completion#error-handling)"
            ),
            "; ".join(mismatches) or "; ".join(notes),
        )
        # Tool definitions.
        if self.tools is None:
            self.add(
                "discover.tool-definitions",
                SKIP,
                "S·MUST: tool definitions are valid (spec: server/tools#tool)",
                f"tools/list failed: {self.tools_error}",
            )
        else:
            bad_schema = [
                t.get("name")
                for t in self.tools
                if not isinstance(t.get("inputSchema"), dict)
                or t["inputSchema"].get("type") != "object"
            ]
            bad_name = [
                t.get("name")
                for t in self.tools
                if not isinstance(t.get("name"), str) or not TOOL_NAME.match(t["name"])
            ]
            names = [t.get("name") for t in self.tools]
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
                        f"names outside 1-128 chars of [A-Za-z0-9_.-]: {bad_name[:5]}; "
                        f"duplicates: {dups[:5]}"
                    ),
                )
            else:
                status, seen = (
                    PASS,
                    f"{len(self.tools)} tools, object input schemas, names well-formed",
                )
            self.add(
                "discover.tool-definitions",
                status,
                (
                    "S·MUST: inputSchema is a JSON Schema object with type 'object'; S·SHOULD: "
                    "unique names of 1-128 chars [A-Za-z0-9_.-] (spec: server/tools#tool, "
                    "server/tools#tool-names)"
                ),
                seen,
            )
        # Deterministic order.
        diffs, compared = [], []
        for cap in LISTS:
            if cap not in self.capabilities:
                continue
            a = self.list_all(p, cap)
            b = self.list_all(p, cap)
            if a is None or b is None:
                continue
            key = "uri" if cap == "resources" else "name"
            ka, kb = [x.get(key) for x in a], [x.get(key) for x in b]
            compared.append(f"{cap} ({len(ka)})")
            if ka != kb:
                diffs.append(f"{cap}: {ka[:5]} then {kb[:5]}")
        self.add(
            "discover.deterministic-order",
            WARN if diffs else (PASS if compared else SKIP),
            (
                "S·SHOULD: deterministic order for an unchanged list; lists MUST NOT vary as a "
                "side effect of other requests (spec: server/tools#capabilities)"
            ),
            "; ".join(diffs)
            or (f"same order twice for {', '.join(compared)}" if compared else "no lists declared"),
        )
        self.check_invalid_cursor(p)
        self.check_resources(p)

    def check_invalid_cursor(self, p: ServerProcess) -> None:
        rule = (
            "S·SHOULD answer -32602 for an invalid cursor (spec: "
            "server/utilities/pagination#error-handling)"
        )
        cap = next((c for c in LISTS if c in self.capabilities), None)
        if cap is None:
            self.add("discover.invalid-cursor", SKIP, rule, "no paginated list is declared")
            return
        method = LISTS[cap][0]
        resp = p.request(method, {"cursor": "mcpline-check-not-a-cursor"}, timeout=self.timeout)
        code = _code(resp)
        status = PASS if code == -32602 else (FAIL if resp is None else WARN)
        self.add(
            "discover.invalid-cursor",
            status,
            rule,
            f"{method} with a made-up cursor answered {_short(resp)}",
        )

    def check_resources(self, p: ServerProcess) -> None:
        rule = (
            "S·MUST answer -32602 for an unknown resource, never -32002 nor empty contents; "
            "S·SHOULD put {uri} in data (spec: server/resources#error-handling, "
            "basic/index#error-codes)"
        )
        if "resources" not in self.capabilities:
            self.add(
                "discover.resource-not-found", SKIP, rule, "the server does not declare resources"
            )
            return
        uri = "mcpline-check://no/such/resource"
        resp = p.request("resources/read", {"uri": uri}, timeout=self.timeout)
        code = _code(resp)
        data = resp["error"].get("data") if code is not None and resp else None
        if code == -32602:
            status = PASS if isinstance(data, dict) and data.get("uri") == uri else WARN
        else:
            status = FAIL
        self.add(
            "discover.resource-not-found",
            status,
            rule,
            f"resources/read of an unknown URI answered {_short(resp)}",
        )
        resources = self.list_all(p, "resources") or []
        rule = (
            "S·MUST: resources/read results carry contents, ttlMs and cacheScope (spec: "
            "server/resources#reading-resources, server/utilities/caching#cacheable-results)"
        )
        if not resources:
            self.add("discover.resource-read", SKIP, rule, "resources/list is empty")
            return
        first = resources[0].get("uri")
        resp = p.request("resources/read", {"uri": first}, timeout=self.timeout)
        res = resp.get("result") if resp else None
        ok = (
            isinstance(res, dict)
            and isinstance(res.get("contents"), list)
            and res["contents"]
            and type(res.get("ttlMs")) is int
            and res["ttlMs"] >= 0
            and res.get("cacheScope") in ("public", "private")
        ) or (isinstance(res, dict) and res.get("resultType") == "input_required")
        self.add(
            "discover.resource-read",
            PASS if ok else FAIL,
            rule,
            f"resources/read {first!r} answered {_short(resp)}",
        )

    # --- the error table ---------------------------------------------------------------------

    def expect(
        self,
        cid: str,
        rule: str,
        p: ServerProcess,
        data: bytes | dict[str, Any],
        *,
        code: int,
        id: Any = MISSING,
        severity: str = FAIL,
        what: str,
        recoverable: Any = MISSING,
    ) -> None:
        """Send ``data``; expect one error ``code`` echoing ``id`` (or without id when MISSING).

        ``recoverable`` is an id a server may legitimately dig out of a broken line
        (spec: basic/index#error-responses):
        a reply carrying it counts like an id-less one.
        """
        replies, anon, marker_ok = self.probe(p, data, id)
        got = replies if id is not MISSING else anon
        if recoverable is not MISSING:
            got = got + p.responses_for(recoverable)
        if not got:
            extra = "" if marker_ok else " (and the server stopped answering)"
            if not p.alive:
                extra = f" (the server has exited with status {p.proc.returncode})"
            self.add(cid, FAIL if severity == FAIL else WARN, rule, f"{what}: no reply{extra}")
            return
        reply = got[0]
        problems = []
        if len(got) > 1:
            problems.append(f"{len(got)} replies")
        if "error" not in reply:
            self.add(
                cid, severity, rule, f"{what}: a result instead of error {code}: {_short(reply)}"
            )
            return
        if _code(reply) != code:
            problems.append(f"code {_code(reply)} instead of {code}")
        if (
            id is MISSING
            and "id" in reply
            and (recoverable is MISSING or reply["id"] != recoverable)
        ):
            problems.append(f"id {reply['id']!r} present (the schema forbids null; omit it)")
        status = PASS if not problems else severity
        self.add(
            cid,
            status,
            rule,
            f"{what}: {'; '.join(problems) + ' — ' if problems else ''}{_short(reply)}",
        )

    def check_errors(self, p: ServerProcess) -> None:
        rid = "err"
        env = (
            "JSON-RPC 2.0 envelope; -32600 for anything that is not a request object, id echoed "
            "only when it is a valid RequestId (spec: basic/index#requests, "
            "basic/index#error-responses; JSON-RPC 2.0: request_object, error_object)"
        )
        self.expect(
            "errors.parse-error",
            "-32700 for a line that is not JSON, without id (spec: basic/index#error-responses; "
            "JSON-RPC 2.0: error_object)",
            p,
            b'{"jsonrpc": "2.0", "method": \n',
            code=-32700,
            what="a truncated JSON line",
        )
        self.expect(
            "errors.invalid-utf8",
            (
                "B·MUST: messages are UTF-8; invalid UTF-8 is a parse error -32700 (spec: "
                "basic/transports#messages; JSON-RPC 2.0: error_object)"
            ),
            p,
            b'{"jsonrpc":"2.0","id":"utf8","method":"server/discover","params":{"_meta":{"x":"\xff\xfe"}}}\n',
            code=-32700,
            what="a line with invalid UTF-8 bytes",
            recoverable="utf8",
        )
        batch = (
            b"["
            + encode(p.request_msg("server/discover", id="batch-1"))[:-1]
            + b","
            + encode(p.request_msg("server/discover", id="batch-2"))[:-1]
            + b"]\n"
        )
        self.expect(
            "errors.batch",
            (
                "mcpline rec: a JSON array (batch) is one -32600 without id; elements are not "
                "processed (refines spec: basic/transports/stdio)"
            ),
            p,
            batch,
            code=-32600,
            severity=WARN,
            what="a batch array",
        )
        processed = p.responses_for("batch-1") + p.responses_for("batch-2")
        if processed:
            self.add(
                "errors.batch-not-processed",
                WARN,
                (
                    "mcpline rec: batch elements are not processed (refines spec: "
                    "basic/transports/stdio)"
                ),
                f"{len(processed)} batch elements were answered",
            )
        self.expect("errors.non-object", env, p, b"42\n", code=-32600, what="the JSON number 42")
        for label, raw_id in (
            ("null", "null"),
            ("bool", "true"),
            ("float", "1.5"),
            ("object", '{"a":1}'),
        ):
            line = (
                b'{"jsonrpc":"2.0","id":%s,"method":"server/discover","params":{}}\n'
                % raw_id.encode()
            )
            self.expect(
                f"errors.id-{label}",
                env + "; B·MUST: id is a string or integer, never null",
                p,
                line,
                code=-32600,
                what=f"a request with id {raw_id}",
            )
        for cid, member, value, what in (
            ("errors.jsonrpc-version", "jsonrpc", "1.0", '"jsonrpc": "1.0" with a valid id'),
            ("errors.method-not-string", "method", 7, "method 7 with a valid id"),
        ):
            m = p.request_msg("server/discover", id=f"{rid}-{member}")
            m[member] = value
            self.expect(cid, env, p, m, code=-32600, id=m["id"], what=what)
        m = p.request_msg("mcpline-check/no-such-method", id=f"{rid}-unknown")
        self.expect(
            "errors.unknown-method",
            "-32601 for an unknown method, id echoed (spec: basic/index#error-codes; JSON-RPC 2.0: "
            "error_object)",
            p,
            m,
            code=-32601,
            id=m["id"],
            what="an unknown method",
        )
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
                {
                    "params": {
                        "_meta": {k: v for k, v in full.items() if k != CLIENT_CAPABILITIES_KEY}
                    }
                },
                "_meta without clientCapabilities",
            ),
        ]
        for cid, extra, what in cases:
            msg = {"jsonrpc": "2.0", "id": cid, "method": "server/discover", **extra}
            self.expect(cid, meta_rule, p, msg, code=-32602, id=cid, what=what)
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
            msg = request(cid, "server/discover", {"_meta": meta})
            self.expect(cid, rec_rule, p, msg, code=-32602, id=cid, severity=WARN, what=what)
        no_info = {k: v for k, v in full.items() if k != CLIENT_INFO_KEY}
        resp = p.request("server/discover", meta=no_info, timeout=self.timeout)
        self.add(
            "errors.client-info-optional",
            PASS if resp and "result" in resp else FAIL,
            (
                "clientInfo is optional: a request without it is served normally (spec: "
                "basic/index#meta)"
            ),
            f"discover without clientInfo answered {_short(resp)}",
        )
        self.check_unsupported_version(p)
        m = p.request_msg(
            "server/discover",
            id="err-legacy-version",
            meta=modern_meta(LEGACY, {}, CLIENT_INFO),
        )
        self.expect(
            "errors.legacy-version-in-meta",
            "mcpline rec: a legacy version named in per-request _meta is -32022 (refines spec: "
            "basic/versioning#protocol-version-negotiation)",
            p,
            m,
            code=-32022,
            id=m["id"],
            severity=WARN,
            what=f"_meta protocolVersion {LEGACY}",
        )
        m = p.request_msg(
            "server/discover",
            id="err-loglevel",
            meta=modern_meta(MODERN, {}, CLIENT_INFO, log_level="verbose"),
        )
        self.expect(
            "errors.invalid-log-level",
            (
                "S·SHOULD answer -32602 for an unknown logLevel (spec: "
                "server/utilities/logging#error-handling)"
            ),
            p,
            m,
            code=-32602,
            id=m["id"],
            severity=WARN,
            what="logLevel 'verbose'",
        )
        wrong = []
        for method in REMOVED_METHODS:
            params: dict[str, Any] = {"level": "info"} if method == "logging/setLevel" else {}
            if method.startswith("resources/"):
                params = {"uri": "mcpline-check://x"}
            if method == "initialize":
                params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO}
            resp = p.request(method, params, timeout=self.timeout)
            if _code(resp) != -32601:
                wrong.append(f"{method}→{_short(resp, 90)}")
        self.add(
            "errors.removed-methods",
            FAIL if wrong else PASS,
            (
                "-32601 for handshake-era methods sent with modern _meta: initialize, ping, "
                "logging/setLevel, resources/(un)subscribe (spec: changelog#major-changes; "
                "JSON-RPC 2.0: error_object; conformance: "
                "sep-2575-http-server-method-not-found-404-*)"
            ),
            "; ".join(wrong) or f"all of {', '.join(REMOVED_METHODS)} answered -32601",
        )
        self.check_tool_errors(p)
        rule = "S·SHOULD answer -32602 for an unknown prompt (spec: server/prompts#error-handling)"
        if "prompts" in self.capabilities:
            m = p.request_msg(
                "prompts/get", {"name": "mcpline-check-no-such-prompt"}, id="err-prompt"
            )
            self.expect(
                "errors.unknown-prompt",
                rule,
                p,
                m,
                code=-32602,
                id=m["id"],
                severity=WARN,
                what="prompts/get of an unknown prompt",
            )
        else:
            self.add("errors.unknown-prompt", SKIP, rule, "the server does not declare prompts")

    def check_unsupported_version(self, p: ServerProcess) -> None:
        rule = (
            "S·MUST answer -32022 with data.supported (non-empty, ⊆ supportedVersions) and "
            "data.requested echoed (spec: basic/versioning#protocol-version-negotiation)"
        )
        requested = "v999.0.0"
        resp = p.request(
            "server/discover",
            meta=modern_meta(requested, {}, CLIENT_INFO),
            timeout=self.timeout,
        )
        problems = []
        if _code(resp) != -32022:
            problems.append(f"code {_code(resp)} instead of -32022")
        else:
            assert resp is not None
            data = resp["error"].get("data")
            if not isinstance(data, dict):
                problems.append("no data object")
            else:
                sup = data.get("supported")
                if not isinstance(sup, list) or not sup or not all(isinstance(v, str) for v in sup):
                    problems.append(f"data.supported={sup!r}")
                elif self.discover and not set(sup) <= set(
                    self.discover.get("supportedVersions", [])
                ):
                    problems.append(
                        f"data.supported {sup} not within supportedVersions "
                        f"{self.discover.get('supportedVersions')}"
                    )
                if data.get("requested") != requested:
                    problems.append(f"data.requested={data.get('requested')!r}")
        self.add(
            "errors.unsupported-version",
            FAIL if problems else PASS,
            rule,
            f"{'; '.join(problems) + ' — ' if problems else ''}{_short(resp)}",
        )

    def check_tool_errors(self, p: ServerProcess) -> None:
        rule = "-32602 for an unknown tool, a protocol error (spec: server/tools#error-handling)"
        if "tools" not in self.capabilities:
            for cid in (
                "errors.unknown-tool",
                "errors.arguments-not-object",
                "errors.bad-arguments",
            ):
                self.add(cid, SKIP, rule, "the server does not declare tools")
            return
        m = p.request_msg(
            "tools/call", {"name": "mcpline-check-no-such-tool", "arguments": {}}, id="err-tool"
        )
        self.expect(
            "errors.unknown-tool",
            rule,
            p,
            m,
            code=-32602,
            id=m["id"],
            what="tools/call of an unknown tool",
        )
        last = self.results[-1]
        if last.status == FAIL and '"isError":true' in last.seen:
            last.status = WARN
            last.seen += (
                " (an isError result: the spec classifies an unknown tool as a protocol error)"
            )
        tools = self.tools or []
        target = next((t for t in tools if (t.get("inputSchema") or {}).get("required")), None)
        if not tools:
            self.add("errors.arguments-not-object", SKIP, rule, "tools/list is empty")
        else:
            m = p.request_msg(
                "tools/call", {"name": tools[0]["name"], "arguments": [1, 2]}, id="err-args-array"
            )
            self.expect(
                "errors.arguments-not-object",
                (
                    "mcpline rec: tools/call 'arguments' that is not an object is -32602 "
                    "(refines spec: server/tools#error-handling)"
                ),
                p,
                m,
                code=-32602,
                id=m["id"],
                severity=WARN,
                what=f"tools/call {tools[0]['name']!r} with arguments [1, 2]",
            )
        rule = (
            "mcpline rec: arguments failing inputSchema are a tool execution error (isError: "
            "true), not a protocol error; S·MUST validate inputs (spec: "
            "server/tools#error-handling, server/tools#security-considerations)"
        )
        if target is None:
            self.add("errors.bad-arguments", SKIP, rule, "no listed tool has a required argument")
            return
        resp = p.request(
            "tools/call", {"name": target["name"], "arguments": {}}, timeout=self.timeout
        )
        res = resp.get("result") if resp else None
        if isinstance(res, dict) and res.get("isError") is True:
            status, seen = PASS, "isError result"
        elif _code(resp) == -32602:
            status, seen = WARN, "a -32602 protocol error (the model cannot see it)"
        elif resp is None:
            status, seen = FAIL, "no reply"
        else:
            status, seen = FAIL, "the call did not report an error"
        self.add(
            "errors.bad-arguments",
            status,
            rule,
            f"tools/call {target['name']!r} without its required arguments: {seen}: {_short(resp)}",
        )
        if any(t.get("name") == "test_missing_capability" for t in tools):
            m = p.request_msg(
                "tools/call",
                {"name": "test_missing_capability", "arguments": {}},
                id="err-capability",
            )
            replies, _, _ = self.probe(p, m, m["id"])
            reply = replies[0] if replies else None
            data = reply["error"].get("data") if _code(reply) == -32021 and reply else None
            ok = (
                isinstance(data, dict)
                and isinstance(data.get("requiredCapabilities"), dict)
                and isinstance(data["requiredCapabilities"].get("sampling"), dict)
            )
            self.add(
                "errors.missing-capability",
                PASS if ok else FAIL,
                (
                    "S·MUST answer -32021 with data.requiredCapabilities as a ClientCapabilities "
                    "object (spec: basic/index#meta; conformance: "
                    "sep-2575-server-rejects-undeclared-capability)"
                ),
                f"test_missing_capability without sampling answered {_short(reply)}",
            )

    # --- notifications ------------------------------------------------------------------------

    def check_notifications(self, p: ServerProcess) -> None:
        rule = (
            "B·MUST NOT answer a notification, not even with an error; malformed or unknown "
            "notifications are ignored (spec: basic/index#notifications, "
            "basic/patterns/cancellation#error-handling)"
        )
        lines = [
            encode(notification("notifications/initialized")),
            encode(notification("notifications/mcpline-check/unknown", {"x": 1})),
            encode(
                notification(
                    "notifications/cancelled",
                    {"requestId": "mcpline-check-never-sent", "reason": "check"},
                )
            ),
            encode(notification("notifications/cancelled", {"requestId": None})),
            encode(notification("notifications/cancelled", "not-an-object")),
            encode(notification("notifications/progress", {"progressToken": "x", "progress": 1})),
            encode(notification("notifications/roots/list_changed")),
            b'{"jsonrpc":"2.0","method":42}\n',
            b'{"jsonrpc":"1.0","method":"notifications/initialized"}\n',
        ]
        mark = p.mark()
        p.send_raw(b"".join(lines))
        marker = self.marker_request(p)
        p.send(marker)
        p.wait_response(marker["id"], self.timeout)
        time.sleep(0.3)
        stray = [r.msg for r in p.since(mark) if r.is_response and r.msg.get("id") != marker["id"]]
        self.add(
            "notifications.never-answered",
            FAIL if stray else PASS,
            rule,
            f"{len(stray)} replies to notifications: {_short(stray[:2])}"
            if stray
            else (
                f"{len(lines)} notifications (unknown, malformed, cancel of an unknown id) drew "
                "no reply"
            ),
        )

    def check_unsolicited(self) -> None:
        logs, progress = 0, []
        for p in self.processes:
            if p.legacy_session or p.log_requested:
                continue
            for r in p.received:
                method = r.msg.get("method")
                if method == "notifications/message":
                    logs += 1
                elif method == "notifications/progress":
                    params = r.msg.get("params")
                    token = params.get("progressToken") if isinstance(params, dict) else None
                    if idkey(token) not in p.progress_tokens:
                        progress.append(token)
        self.add(
            "notifications.no-log-without-level",
            FAIL if logs else PASS,
            (
                "S·MUST NOT emit notifications/message for a request whose _meta lacks logLevel "
                "(spec: server/utilities/logging#per-request-log-level)"
            ),
            f"{logs} notifications/message although no request asked for logs"
            if logs
            else "no log notifications without logLevel",
        )
        self.add(
            "notifications.progress-tokens",
            FAIL if progress else PASS,
            "S·MUST echo the request's progressToken; no token → no progress (spec: "
            "basic/patterns/progress#behavior-requirements)",
            f"progress for tokens never sent: {progress[:5]}"
            if progress
            else "progress only for tokens the checker sent",
        )

    # --- concurrency and cancellation ------------------------------------------------------------

    def check_concurrency(self, p: ServerProcess, slow: SlowTool | None) -> None:
        ids = [f"many-{i}" for i in range(20)]
        msgs = [
            p.request_msg("tools/list" if "tools" in self.capabilities else "server/discover", id=i)
            for i in ids
        ]
        for m in msgs:
            p.note_request(m)
        p.send_raw(b"".join(encode(m) for m in msgs))
        p.wait_until(lambda: all(p.responses.get(idkey(i)) for i in ids), self.timeout * 2)
        time.sleep(0.2)
        counts = [len(p.responses_for(i)) for i in ids]
        bad = [f"{i}×{c}" for i, c in zip(ids, counts, strict=True) if c != 1]
        self.add(
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
        if slow is None:
            reason = (
                "no sleep-like tool in tools/list (a tool named sleep/slow/delay/wait with one "
                "duration argument)"
            )
            self.add("concurrency.slow-does-not-block", SKIP, rule, reason)
            self.add(
                "concurrency.duplicate-id",
                SKIP,
                (
                    "mcpline rec: a duplicate in-flight id is -32600 (refines spec: "
                    "basic/index#requests)"
                ),
                reason,
            )
            return
        slow_msg = p.request_msg(
            "tools/call", {"name": slow.name, "arguments": slow.arguments(2.0)}, id="slow-1"
        )
        fast_msg = p.request_msg("server/discover", id="fast-1")
        dup_msg = p.request_msg("server/discover", id="slow-1")
        t0 = time.monotonic()
        p.send(slow_msg)
        time.sleep(0.2)
        p.send(fast_msg)
        fast = p.wait_response("fast-1", self.timeout + 2)
        t_fast = time.monotonic() - t0
        p.send(dup_msg)
        time.sleep(0.3)
        key = idkey("slow-1")
        p.wait_until(
            lambda: any("result" in r.msg for r in p.responses.get(key, [])), self.timeout + 4
        )
        t_slow = time.monotonic() - t0
        time.sleep(0.2)
        slow_replies = p.responses_for("slow-1")
        slow_reply = slow_replies[0] if slow_replies else None
        fast_first = fast is not None and (
            slow_reply is None
            or p.responses[idkey("fast-1")][0].seq < p.responses[idkey("slow-1")][0].seq
        )
        self.add(
            "concurrency.slow-does-not-block",
            PASS if fast_first else WARN,
            rule,
            (
                f"{slow.name}(2 s) in flight; server/discover answered after {t_fast:.2f} s, the "
                f"slow call after {t_slow:.2f} s"
            )
            if fast
            else f"server/discover got no answer while {slow.name} ran",
        )
        dup = [r for r in slow_replies if "error" in r] + [
            r for r in p.responses_for(None) if "slow-1" in str(r.get("error"))
        ]
        first = [
            r
            for r in slow_replies
            if isinstance(r.get("result"), dict) and "content" in r["result"]
        ]
        second = [r for r in slow_replies if _is_discover_result(r)]
        if len(first) == 1 and not second and dup and _code(dup[0]) == -32600:
            status, seen = (
                PASS,
                "the duplicate was refused with -32600 and the first request still answered",
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
                    "the first request (tools/call) was never answered; replies for the id: "
                    f"{_short(slow_replies)}"
                ),
            )
        else:
            status, seen = (
                WARN,
                f"both requests with the id were run; replies: {_short(slow_replies)}",
            )
        self.add(
            "concurrency.duplicate-id",
            status,
            (
                "mcpline rec: a second request reusing an in-flight id is refused with -32600 and "
                "the first is left untouched (refines spec: basic/index#requests)"
            ),
            seen,
        )

    def check_cancellation(self, p: ServerProcess, slow: SlowTool | None) -> None:
        rule = (
            "on stdio S·MUST NOT send any further message (response, progress, log) for a "
            "cancelled request (spec: basic/transports/stdio#cancellation)"
        )
        if slow is None:
            reason = (
                "no sleep-like tool in tools/list (a tool named sleep/slow/delay/wait with one "
                "duration argument)"
            )
            self.add("cancellation.no-reply-after-cancel", SKIP, rule, reason)
            return
        token = "mcpline-check-cancel"
        msg = p.request_msg(
            "tools/call",
            {"name": slow.name, "arguments": slow.arguments(2.0)},
            id="cancel-me",
            meta=modern_meta(MODERN, {}, CLIENT_INFO, progress_token=token),
        )
        mark = p.mark()
        p.send(msg)
        time.sleep(0.3)
        p.notify("notifications/cancelled", {"requestId": "cancel-me", "reason": "mcpline check"})
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
                    and r.msg["params"].get("progressToken") == token
                )
            )
        ]
        self.add(
            "cancellation.no-reply-after-cancel",
            FAIL if after else PASS,
            rule,
            f"after the cancel the server still sent {_short(after[:2])}"
            if after
            else f"{slow.name}(2 s) cancelled after 0.3 s: nothing more was sent for it",
        )
        resp = p.request("server/discover", timeout=self.timeout)
        self.add(
            "cancellation.server-continues",
            PASS if resp else FAIL,
            "S·SHOULD stop the work and free resources; the server keeps serving (spec: "
            "basic/patterns/cancellation#behavior-requirements)",
            "the next request was answered" if resp else "the next request got no answer",
        )

    # --- lifecycle ------------------------------------------------------------------------------

    def wait_ready(self, p: ServerProcess) -> None:
        if self.modern:
            p.request("server/discover", timeout=self.startup_timeout)
        else:
            time.sleep(min(1.0, self.timeout))

    def check_lifecycle(self, slow: SlowTool | None) -> None:
        p = self.spawn("eof")
        self.wait_ready(p)
        t0 = time.monotonic()
        p.close_stdin()
        code = p.wait_exit(self.exit_timeout)
        took = time.monotonic() - t0
        if code is None:
            status, seen = (
                WARN,
                (f"still running {self.exit_timeout:g} s after stdin closed (then killed)"),
            )
        elif code != 0:
            status, seen = (
                WARN,
                f"exited after {took:.2f} s with status {code} (0 expected for a clean shutdown)",
            )
        else:
            status, seen = PASS, f"exited with status 0 after {took:.2f} s"
        self.add(
            "lifecycle.stdin-eof",
            status,
            "S·SHOULD exit promptly when stdin reaches EOF; mcpline rec: exit 0 (spec: "
            "basic/transports/stdio#shutdown)",
            seen,
        )
        p.stop(grace=0.2)
        if slow is not None:
            p = self.spawn("eof-busy")
            self.wait_ready(p)
            p.send(
                p.request_msg(
                    "tools/call", {"name": slow.name, "arguments": slow.arguments(30.0)}, id="busy"
                )
            )
            time.sleep(0.3)
            t0 = time.monotonic()
            p.close_stdin()
            code = p.wait_exit(self.exit_timeout + 3.0)
            took = time.monotonic() - t0
            self.add(
                "lifecycle.stdin-eof-busy",
                PASS if code is not None else WARN,
                (
                    "S·SHOULD exit promptly at EOF; mcpline rec: cancel in-flight work rather than "
                    "wait for it (spec: basic/transports/stdio#shutdown)"
                ),
                f"with a 30 s {slow.name} call in flight, exited after {took:.2f} s (status {code})"
                if code is not None
                else (
                    f"with a 30 s {slow.name} call in flight, still running "
                    f"{self.exit_timeout + 3:g} s after EOF"
                ),
            )
            p.stop(grace=0.2)
        p = self.spawn("sigterm")
        self.wait_ready(p)
        t0 = time.monotonic()
        p.signal(signal.SIGTERM)
        code = p.wait_exit(self.exit_timeout)
        took = time.monotonic() - t0
        if code is None:
            status, seen = WARN, f"still running {self.exit_timeout:g} s after SIGTERM"
        else:
            how = (
                "status 0"
                if code == 0
                else (f"killed by signal {-code}" if code < 0 else f"status {code}")
            )
            status, seen = PASS, f"exited after {took:.2f} s ({how})"
        self.add(
            "lifecycle.sigterm",
            status,
            "mcpline rec: treat SIGTERM like EOF; clients escalate SIGTERM then SIGKILL (refines "
            "spec: basic/transports/stdio#shutdown)",
            seen,
        )
        p.stop()

    # --- legacy era

    def check_legacy(self) -> None:
        p = self.spawn("legacy")
        init = p.request_msg(
            "initialize",
            {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO},
            id=0,
            meta=None,
        )
        p.send(init)
        resp = p.wait_response(0, self.startup_timeout)
        res = resp.get("result") if resp else None
        legacy_ok = (
            isinstance(res, dict)
            and isinstance(res.get("protocolVersion"), str)
            and isinstance(res.get("capabilities"), dict)
        )
        if legacy_ok:
            assert isinstance(res, dict)
            p.legacy_session = True
            p.notify("notifications/initialized")
            self.add(
                "legacy.initialize",
                PASS,
                "S·MAY serve the 2025-11-25 initialize handshake (spec: basic/versioning)",
                (
                    f"initialize → protocolVersion {res.get('protocolVersion')!r}, serverInfo "
                    f"{_short(res.get('serverInfo'), 80)}"
                ),
            )
            ping = p.request("ping", meta=None, timeout=self.timeout)
            pres = ping.get("result") if ping else None
            self.add(
                "legacy.ping-empty",
                PASS if pres == {} else FAIL,
                (
                    "legacy session follows 2025-11-25 wholesale: ping answers a literally empty "
                    "{} (spec: basic/versioning#compatibility-matrix; "
                    "conformance: ping)"
                ),
                f"ping answered {_short(ping)}",
            )
            if "tools" in res.get("capabilities", {}):
                tl = p.request("tools/list", meta=None, timeout=self.timeout)
                ok = bool(
                    tl
                    and isinstance(tl.get("result"), dict)
                    and isinstance(tl["result"].get("tools"), list)
                )
                self.add(
                    "legacy.tools-list",
                    PASS if ok else FAIL,
                    (
                        "legacy session: tools/list without _meta is served under 2025-11-25 "
                        "rules (spec: basic/versioning)"
                    ),
                    f"tools/list answered {_short(tl, 160)}",
                )
            if self.modern:
                d = p.request("server/discover", timeout=self.timeout)
                self.add(
                    "legacy.modern-after-initialize",
                    PASS if _is_discover_result(d) else WARN,
                    (
                        "mcpline rec: after initialize, requests with modern _meta are still "
                        "served statelessly (refines spec: basic/versioning#compatibility-matrix)"
                    ),
                    f"server/discover inside the legacy session answered {_short(d, 160)}",
                )
        else:
            rule = (
                "legacy client → modern-only server: initialize is rejected; S·SHOULD name the "
                "supported versions in that error (spec: basic/versioning)"
            )
            err = resp.get("error") if resp else None
            if resp is None:
                self.add(
                    "legacy.initialize",
                    FAIL,
                    rule + "; every request gets a response (spec: basic/index#responses)",
                    "initialize got no reply: a legacy client would hang",
                )
            elif err is None:
                self.add(
                    "legacy.initialize",
                    FAIL,
                    rule,
                    (
                        "initialize answered something that is not an InitializeResult: "
                        f"{_short(resp)}"
                    ),
                )
            else:
                text = _short(err, 400)
                names = any(
                    v in text for v in (self.discover or {}).get("supportedVersions", [MODERN])
                )
                self.add(
                    "legacy.initialize",
                    PASS if names else WARN,
                    rule,
                    (
                        "initialize "
                        f"rejected {'naming' if names else 'without naming'} the versions: "
                        f"{_short(resp)}"
                    ),
                )
        era = (
            "dual-era"
            if self.modern and legacy_ok
            else "modern-only"
            if self.modern
            else "legacy-only"
            if legacy_ok
            else "neither era"
        )
        self.facts["era"] = era
        self.add(
            "legacy.era",
            FAIL if era == "neither era" else PASS,
            (
                "a server speaks 2026-07-28 (per-request _meta), the initialize handshake, or "
                "both (spec: basic/versioning#compatibility-matrix)"
            ),
            (
                f"{era} (modern probe: {self.probe_outcome}; initialize: "
                f"{'accepted' if legacy_ok else 'refused'})"
            ),
        )
        rule = (
            "what a dual-era client's server/discover probe sees: a DiscoverResult or a modern "
            "error (-32020/-32021/-32022) means modern; any other error or a non-discover result "
            "means fall back to initialize; silence costs the probe timeout (spec: "
            "basic/transports/stdio#backward-compatibility)"
        )
        outcome = self.probe_outcome
        if self.modern:
            status, seen = PASS, f"{outcome}: a modern client proceeds without initialize"
        elif outcome in ("timeout", "exited"):
            status = WARN
            seen = (
                (
                    f"the probe got no answer within {self.timeout:g} s: a dual-era client stalls "
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
                    f"({_short(self.facts.get('first_probe'), 160)})"
                ),
            )
        self.add("legacy.modern-probe", status, rule, seen)
        p.stop()


def summarize(results: list[CheckResult]) -> dict[str, int]:
    counts = {PASS: 0, FAIL: 0, WARN: 0, SKIP: 0}
    for r in results:
        counts[r.status] += 1
    return counts
