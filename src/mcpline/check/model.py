"""What every check group shares: the statuses, the result type, and the check context.

Every check names the rule it enforces, cites the MCP 2026-07-28 specification or JSON-RPC 2.0
in the compact form of `cite.py` (`docs/check.md` lists them), and says what it saw. Severity
follows the rule's keyword: a broken MUST is a FAIL, a broken SHOULD or recommendation is a
WARN. Checks that need something the server does not offer are SKIPped with the reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..jsonrpc import MISSING
from ..spec import DISCOVER, LISTS
from ..wire import encode
from .runner import ServerProcess, idkey

if TYPE_CHECKING:
    from .corpus import Corpus


class Status(str, Enum):
    """A check's verdict; it formats, compares and serializes as its plain name."""

    PASS = "PASS"
    FAIL = "FAIL"
    WARN = "WARN"
    SKIP = "SKIP"

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)


PASS, FAIL, WARN, SKIP = Status.PASS, Status.FAIL, Status.WARN, Status.SKIP
SETTLE = 0.5
"""How long a probe's reply may trail the reply to the request written after it."""


@dataclass
class CheckResult:
    id: str
    group: str
    status: Status
    rule: str
    seen: str

    def to_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "group": self.group,
            "status": str(self.status),
            "rule": self.rule,
            "seen": self.seen,
        }


def summarize(results: Iterable[CheckResult]) -> dict[str, int]:
    """How many results have each status, every status present."""
    counts = {str(s): 0 for s in Status}
    for r in results:
        counts[str(r.status)] += 1
    return counts


@dataclass(frozen=True)
class Options:
    """How a run is paced and what it adds to the default groups."""

    timeout: float = 5.0
    """How long to wait for one reply."""
    exit_timeout: float = 5.0
    startup_timeout: float = 20.0
    """How long the first request to a fresh process may take (slow starters exist)."""
    fuzz: int = 0
    """Fuzzed lines to send (the fuzz group runs only when > 0)."""
    seed: int = 0
    soak: int = 0
    """Valid requests to send (the soak group runs only when > 0)."""
    env: dict[str, str] | None = None
    cwd: str | None = None


# --- what the server offers ----------------------------------------------------------------

SLOW_NAME = re.compile(r"sleep|slow|delay|wait", re.I)
DURATION_PROP = re.compile(
    r"^(ms|millis|milliseconds|seconds|secs|sec|s|duration|delay|time|t)$", re.I
)


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


NO_SLOW_TOOL = (
    "no sleep-like tool in tools/list (a tool named sleep/slow/delay/wait with one duration "
    "argument)"
)
"""Why the checks that need a slow tool are skipped."""


# --- reading replies -------------------------------------------------------------------------


def short(value: Any, limit: int = 220) -> str:
    """``value`` as compact JSON, cut at ``limit`` characters (``nothing`` for None)."""
    text = encode(value).decode("utf-8", "replace").rstrip("\n") if value is not None else "nothing"
    return text if len(text) <= limit else text[:limit] + "…"


def error_code(msg: dict[str, Any] | None) -> int | None:
    """The integer error code of a reply, or None."""
    if not msg or not isinstance(msg.get("error"), dict):
        return None
    code = msg["error"].get("code")
    return code if type(code) is int else None


def is_discover_result(msg: dict[str, Any] | None) -> bool:
    res = msg.get("result") if msg else None
    return (
        isinstance(res, dict)
        and isinstance(res.get("supportedVersions"), list)
        and isinstance(res.get("capabilities"), dict)
    )


# --- the context ---------------------------------------------------------------------------------


class CheckContext:
    """What the groups of one run share: the command, the options, the processes started,
    what the first probe found, the results so far, and the probing helpers."""

    def __init__(
        self,
        argv: list[str],
        options: Options,
        groups: Iterable[str],
        on_result: Callable[[CheckResult], None] | None = None,
    ) -> None:
        self.argv = argv
        self.options = options
        self.groups = list(groups)
        self.on_result = on_result
        self.results: list[CheckResult] = []
        self.processes: list[ServerProcess] = []
        self.facts: dict[str, Any] = {}
        self.discover: dict[str, Any] | None = None
        """The DiscoverResult of the first probe (None when it was not one)."""
        self.capabilities: dict[str, Any] = {}
        self.tools: list[dict[str, Any]] | None = None
        """Every listed tool (None when the server is not modern or tools/list failed)."""
        self.tools_error = ""
        self.probe_outcome = "not probed"
        self.modern = False
        self.slow: SlowTool | None = None
        """The sleep-like tool the concurrency, cancellation and lifecycle checks use."""
        self.corpus: Corpus | None = None
        """The valid traffic the fuzz and soak groups share (built by the first that runs)."""
        self._marker = 0

    def add(self, cid: str, status: Status, rule: str, seen: str) -> CheckResult:
        res = CheckResult(cid, cid.split(".", 1)[0], status, rule, seen)
        self.results.append(res)
        if self.on_result is not None:
            self.on_result(res)
        return res

    def spawn(self, label: str, **kw: Any) -> ServerProcess:
        """Start one more server process; every process started is judged by the framing group."""
        o = self.options
        p = ServerProcess(self.argv, label=label, env=o.env, cwd=o.cwd, **kw)
        self.processes.append(p)
        return p

    def wants(self, group: str) -> bool:
        return group in self.groups

    def wait_ready(self, p: ServerProcess) -> None:
        """Let a fresh process start: one answered probe, or a short pause for a legacy one."""
        if self.modern:
            p.request(DISCOVER, timeout=self.options.startup_timeout)
        else:
            time.sleep(min(1.0, self.options.timeout))

    def list_all(self, p: ServerProcess, kind: str) -> list[dict[str, Any]] | None:
        """Every item of a paginated list (None when the list fails)."""
        method, key = LISTS[kind]
        items: list[dict[str, Any]] = []
        cursor: Any = MISSING
        for _ in range(1000):
            params = {} if cursor is MISSING else {"cursor": cursor}
            resp = p.request(method, params, timeout=self.options.timeout)
            res = resp.get("result") if resp else None
            if not isinstance(res, dict) or not isinstance(res.get(key), list):
                if kind == "tools":
                    self.tools_error = f"{method} answered {short(resp)}"
                return None
            items.extend(x for x in res[key] if isinstance(x, dict))
            if "nextCursor" not in res or not isinstance(res["nextCursor"], str):
                return items
            cursor = res["nextCursor"]
        return items

    # --- probing -----------------------------------------------------------------------------

    def marker_request(self, p: ServerProcess) -> dict[str, Any]:
        self._marker += 1
        return p.request_msg(DISCOVER, id=f"mcpline-check-marker-{self._marker}")

    def probe(
        self, p: ServerProcess, data: bytes | dict[str, Any], id: Any = MISSING
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
        """Send one line; return (replies carrying ``id``, id-less error replies, marker answered).

        A valid marker request is written right behind the probe: once the marker is
        answered (and a short settle has passed) a probe that drew nothing is taken to draw
        nothing, instead of waiting out the full timeout for every silent probe.
        """
        timeout = self.options.timeout
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
            timeout,
        )
        marker_ok = (
            p.wait_response(
                marker["id"], 0.0 if pkey is None or not p.responses.get(pkey) else timeout
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

    def expect(
        self,
        cid: str,
        rule: str,
        p: ServerProcess,
        data: bytes | dict[str, Any],
        *,
        code: int,
        id: Any = MISSING,
        severity: Status = FAIL,
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
                cid, severity, rule, f"{what}: a result instead of error {code}: {short(reply)}"
            )
            return
        if error_code(reply) != code:
            problems.append(f"code {error_code(reply)} instead of {code}")
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
            f"{what}: {'; '.join(problems) + ' — ' if problems else ''}{short(reply)}",
        )
