"""Seeded fuzzing and soak of a stdio server.

`Fuzzer` derives malformed, truncated, mutated and oversized lines from valid traffic (the
requests the server's own ``tools/list`` etc. make possible); the same seed and corpus give
the same lines. `fuzz_server` sends them interleaved with valid requests and accounts for
every reply; `soak_server` sends valid requests only and samples the server's RSS.

**Readable id** (what "every readable id answered exactly once" means): a line has one when
it is at most `READABLE_MAX` bytes, strict UTF-8, strict JSON that is also I-JSON (RFC 7493:
no duplicate member names, no lone surrogates, only finite numbers), nested at most
`MAX_DEPTH` deep, and a top-level object with ``"jsonrpc": "2.0"``, a string ``method`` and
an ``id`` that is a string or an integer within ±(2**53-1). Such a line is a JSON-RPC request
and is owed exactly one response carrying that id — unless a later readable
``notifications/cancelled`` names it, which makes the answer optional. Every other line may
be answered (an error, with or without a recovered id) or not.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..jsonrpc import MISSING, notification, request
from ..protocol.meta import modern_meta
from ..spec import MODERN, PROTOCOL_VERSION_KEY
from ..wire import encode
from .runner import CLIENT_INFO, ServerProcess, idkey

if TYPE_CHECKING:
    from .checks import Checker, SlowTool

READABLE_MAX = 1 << 20
MAX_DEPTH = 64
MAX_SAFE_INT = 2**53 - 1
WINDOW = 64
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_ID_TOKEN = re.compile(rb'"id"\s*:\s*(-?\d{1,30}|"(?:[^"\\]|\\.){0,4096}")')


def id_tokens(line: bytes) -> set[tuple[str, Any]]:
    """Every id-looking member in a line, as keys: what a lenient server might recover."""
    out = set()
    for m in _ID_TOKEN.finditer(line):
        try:
            out.add(idkey(json.loads(m.group(1))))
        except ValueError:
            continue
    return out


class _Unreadable(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Unreadable("duplicate member name")
    return out


def _reject_constant(name: str) -> Any:
    raise _Unreadable(f"non-finite number {name}")


def _i_json_ok(obj: Any, check_strings: bool) -> bool:
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        t = type(value)
        if t is dict:
            for k, v in value.items():
                if check_strings and _has_surrogate(k):
                    return False
                stack.append((v, depth + 1))
        elif t is list:
            stack.extend((v, depth + 1) for v in value)
        elif t is float:
            if value != value or value in (float("inf"), float("-inf")):
                return False
        elif t is str and check_strings and _has_surrogate(value):
            return False
    return True


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse_strict(line: bytes) -> Any:
    """The line as I-JSON, or `MISSING` when it is not (see the module docstring)."""
    if len(line) > READABLE_MAX:
        return MISSING
    try:
        text = line.decode("utf-8")
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return MISSING
    if not _i_json_ok(obj, bool(_SURROGATE.search(text))):
        return MISSING
    return obj


def readable_id(line: bytes) -> Any:
    """The line's readable id, or `MISSING` (definition in the module docstring)."""
    obj = parse_strict(line)
    if type(obj) is not dict or obj.get("jsonrpc") != "2.0" or type(obj.get("method")) is not str:
        return MISSING
    rid = obj.get("id", MISSING)
    if type(rid) is str or (type(rid) is int and -MAX_SAFE_INT <= rid <= MAX_SAFE_INT):
        return rid
    return MISSING


def cancelled_id(line: bytes) -> Any:
    """The requestId of a readable ``notifications/cancelled`` line, else `MISSING`."""
    obj = parse_strict(line)
    if type(obj) is not dict or "id" in obj or obj.get("method") != "notifications/cancelled":
        return MISSING
    params = obj.get("params")
    return params.get("requestId", MISSING) if isinstance(params, dict) else MISSING


# --- the corpus: valid traffic derived from what the server offers -------------------------


def sample_value(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A small value that probably satisfies ``schema`` (best effort, any JSON is fine)."""
    if not isinstance(schema, dict) or depth > 4:
        return "x"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "string":
        return rng.choice(["", "a", "hello", "mcpline", "ünïcødé", "x" * rng.randint(1, 40)])
    if t == "integer":
        return rng.randint(0, 9)
    if t == "number":
        return round(rng.uniform(-10, 10), 3)
    if t == "boolean":
        return rng.random() < 0.5
    if t == "array":
        return [sample_value(schema.get("items"), rng, depth + 1) for _ in range(rng.randint(0, 2))]
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        required = schema.get("required") or []
        return {
            k: sample_value(props.get(k), rng, depth + 1)
            for k in props
            if k in required or rng.random() < 0.3
        }
    return "x"


@dataclass
class Corpus:
    """Valid requests (method, params without _meta) a fuzzer may start from."""

    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @classmethod
    def from_server(
        cls,
        tools: list[dict[str, Any]] | None,
        capabilities: dict[str, Any],
        *,
        prompts: list[dict[str, Any]] | None = None,
        resources: list[dict[str, Any]] | None = None,
        exclude_tools: set[str] | None = None,
        seed: int = 0,
    ) -> Corpus:
        rng = random.Random(seed)
        reqs: list[tuple[str, dict[str, Any]]] = [("server/discover", {})]
        if "tools" in capabilities:
            reqs.append(("tools/list", {}))
        for tool in tools or []:
            name = tool.get("name")
            if not isinstance(name, str) or name in (exclude_tools or set()):
                continue
            for _ in range(2):
                reqs.append(
                    (
                        "tools/call",
                        {"name": name, "arguments": sample_value(tool.get("inputSchema"), rng)},
                    )
                )
        if "prompts" in capabilities:
            reqs.append(("prompts/list", {}))
            for p in prompts or []:
                args = {
                    a["name"]: "value"
                    for a in p.get("arguments") or []
                    if isinstance(a, dict) and "name" in a
                }
                reqs.append(("prompts/get", {"name": p.get("name"), "arguments": args}))
        if "resources" in capabilities:
            reqs.append(("resources/list", {}))
            reqs.append(("resources/templates/list", {}))
            for r in (resources or [])[:10]:
                reqs.append(("resources/read", {"uri": r.get("uri")}))
        return cls(reqs)


# --- the generator ------------------------------------------------------------------------------

_JUNK = [
    b"",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b",",
    b":",
    b"\\",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xe2\x80\xa8",
    b"\r",
    b"\t",
    b" ",
    b"null",
    b"NaN",
    b"-Infinity",
    b"1e999",
    b"\\ud800",
    b"true",
]
_METHODS = [
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/get",
    "resources/read",
    "completion/complete",
    "ping",
    "logging/setLevel",
    "notifications/cancelled",
    "nope/nope",
    "",
    "TOOLS/LIST",
    "tools/list ",
]
_ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    1e300,
    2**64,
    -(2**63),
    "",
    "0",
    [],
    {},
    [1, [2, [3]]],
    {"a": {"b": None}},
    "\u2028",
    "\ud83d\ude00",
    "x" * 300,
]


class Fuzzer:
    """Reproducible malformed lines: the same seed and corpus give the same lines."""

    def __init__(
        self, corpus: Corpus, seed: int = 0, *, oversize_rate: float = 0.002, valid_every: int = 4
    ) -> None:
        self.corpus = corpus
        self.rng = random.Random(seed)
        self.oversize_rate = oversize_rate
        self.valid_every = valid_every
        self.counter = 0
        self.kinds: dict[str, int] = {}

    def _fresh_id(self) -> Any:
        self.counter += 1
        return self.counter if self.rng.random() < 0.5 else f"fz-{self.counter}"

    def valid(self) -> dict[str, Any]:
        method, params = self.rng.choice(self.corpus.requests)
        p = json.loads(json.dumps(params))
        p["_meta"] = modern_meta(MODERN, {}, CLIENT_INFO)
        return request(self._fresh_id(), method, p)

    def lines(self, n: int) -> Iterator[tuple[bytes, bool]]:
        """``n`` fuzzed lines, each followed now and then by a valid request: (line, is_fuzz)."""
        for i in range(n):
            yield self.fuzzed(), True
            if self.valid_every and i % self.valid_every == self.valid_every - 1:
                yield encode(self.valid()), False

    def fuzzed(self) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < self.oversize_rate:
            kind, line = "oversized", self._oversized()
        elif r < 0.25:
            kind, line = "truncated", self._truncated()
        elif r < 0.45:
            kind, line = "bytes", self._byte_mutation()
        elif r < 0.80:
            kind, line = "structure", self._structural()
        else:
            kind, line = "shape", self._shape()
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        line = line.replace(b"\n", b" ")
        return line + b"\n"

    def _base_line(self) -> bytes:
        return encode(self.valid())[:-1]

    def _oversized(self) -> bytes:
        msg = self.valid()
        size = self.rng.randint(64 * 1024, 2 * 1024 * 1024)
        msg["params"]["_meta"]["dev.mcpline-check/padding"] = "p" * size
        return encode(msg)[:-1]

    def mutate(self, msg: Any) -> bytes:
        """One malformed line derived from any message (used to fuzz a client with server
        output): truncated, byte-mutated, a member replaced or removed, oversized, or reshaped."""
        rng = self.rng
        base = encode(msg)[:-1]
        r = rng.random()
        if r < 0.2:
            line = self._truncated(base)
        elif r < 0.4:
            line = self._byte_mutation(base)
        elif r < 0.75:
            copy = json.loads(base)
            node, key = self._random_slot(copy)
            if node is None:
                line = self._byte_mutation(base)
            else:
                if rng.random() < 0.3 and isinstance(node, dict):
                    del node[key]
                else:
                    node[key] = rng.choice(_ODD_VALUES)
                line = encode(copy)[:-1]
        elif r < 0.78:
            pad = "p" * rng.randint(64 * 1024, 2 * 1024 * 1024)
            line = (
                base[:-1] + b',"padding":"' + pad.encode() + b'"}' if base.endswith(b"}") else base
            )
        else:
            line = rng.choice(
                [b"", b"[]", b"42", b"null", base + base, b"[" + base + b"]", base[::-1]]
            )
        return line.replace(b"\n", b" ") + b"\n"

    def _random_slot(self, obj: Any) -> tuple[Any, Any]:
        """A random (container, key) inside ``obj``."""
        slots: list[tuple[Any, Any]] = []
        stack = [obj]
        while stack and len(slots) < 500:
            node = stack.pop()
            items = (
                node.items()
                if isinstance(node, dict)
                else enumerate(node)
                if isinstance(node, list)
                else ()
            )
            for k, v in items:
                slots.append((node, k))
                if isinstance(v, (dict, list)):
                    stack.append(v)
        return self.rng.choice(slots) if slots else (None, None)

    def _truncated(self, line: bytes | None = None) -> bytes:
        line = self._base_line() if line is None else line
        return line[: self.rng.randint(0, len(line) - 1)]

    def _byte_mutation(self, base: bytes | None = None) -> bytes:
        rng = self.rng
        line = bytearray(self._base_line() if base is None else base)
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            pos = rng.randint(0, len(line))
            if op < 0.4 and line:
                line[min(pos, len(line) - 1)] = rng.randint(0, 255)
            elif op < 0.7:
                line[pos:pos] = rng.choice(_JUNK)
            elif line:
                del line[pos : pos + rng.randint(1, 8)]
        return bytes(line)

    def _structural(self) -> bytes:
        rng = self.rng
        msg: dict[str, Any] = self.valid()
        choice = rng.randrange(12)
        if choice == 0:
            msg["id"] = rng.choice(_ODD_VALUES)
        elif choice == 1:
            del msg["id"]
        elif choice == 2:
            msg["method"] = rng.choice(_METHODS + _ODD_VALUES)
        elif choice == 3:
            msg["jsonrpc"] = rng.choice(["1.0", "2", 2.0, None, "2.0 "])
        elif choice == 4:
            msg["params"] = rng.choice(_ODD_VALUES)
        elif choice == 5:
            meta = msg["params"]["_meta"]
            key = rng.choice(list(meta))
            if rng.random() < 0.5:
                del meta[key]
            else:
                meta[key] = rng.choice(_ODD_VALUES)
        elif choice == 6:
            msg["params"]["_meta"][PROTOCOL_VERSION_KEY] = rng.choice(
                ["2025-11-25", "2099-01-01", "", "2026-07-28x"]
            )
        elif choice == 7:
            msg["params"][rng.choice(["name", "arguments", "uri", "cursor", "zzz"])] = rng.choice(
                _ODD_VALUES
            )
        elif choice == 8:
            depth = rng.choice([10, 40, 100, 3000])
            msg["params"]["deep"] = "@DEEP@"
            line = encode(msg)[:-1]
            return line.replace(b'"@DEEP@"', b"[" * depth + b"]" * depth)
        elif choice == 9:
            line = encode(msg)[:-1]
            return line.replace(
                b'"jsonrpc":"2.0"',
                b'"jsonrpc":"2.0","id":' + rng.choice([b"1", b'"dup"', b"null"]),
                1,
            )
        elif choice == 10:
            msg = notification(
                rng.choice(
                    [
                        "notifications/cancelled",
                        "notifications/progress",
                        "notifications/x",
                        "initialized",
                    ]
                ),
                rng.choice([{"requestId": f"never-{rng.randrange(1000)}"}, {}, None, [1]]),
            )
        else:
            msg.pop("params", None)
            msg["result"] = {}
        return encode(msg)[:-1]

    def _shape(self) -> bytes:
        rng = self.rng
        options: list[bytes] = [
            b"",
            b"   ",
            b"\r",
            b"[]",
            b"{}",
            b"null",
            b"42",
            b'"just a string"',
            b"[" + self._base_line() + b"," + self._base_line() + b"]",
            self._base_line() + self._base_line(),
            self._base_line() + b" trailing",
            b"\xef\xbb\xbf" + self._base_line(),
            bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))),
            b'{"jsonrpc":"2.0","id":"nan","method":"server/discover","params":{"x":NaN}}',
            b'{"jsonrpc":"2.0","id":"surrogate-\\ud800","method":"server/discover","params":{}}',
        ]
        return rng.choice(options)


# --- running a fuzz session


@dataclass
class FuzzReport:
    lines_sent: int = 0
    fuzz_lines: int = 0
    valid_requests: int = 0
    readable: int = 0
    answered_once: int = 0
    lost: list[Any] = field(default_factory=list)
    duplicated: list[Any] = field(default_factory=list)
    optional_unanswered: int = 0
    anonymous_errors: int = 0
    replies: int = 0
    crashed: bool = False
    exit_status: int | None = None
    hung: bool = False
    impure: int = 0
    schema_problems: int = 0
    problem_examples: list[str] = field(default_factory=list)
    rss_start: int | None = None
    rss_end: int | None = None
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    stderr_tail: str = ""

    @property
    def rss_growth(self) -> float | None:
        if not self.rss_start or not self.rss_end:
            return None
        return (self.rss_end - self.rss_start) / self.rss_start


class _Accounting:
    def __init__(self) -> None:
        self.counts: dict[tuple[str, Any], int] = {}
        self.anon = 0
        self.replies = 0

    def __call__(self, msg: dict[str, Any]) -> None:
        if "method" in msg or ("result" not in msg and "error" not in msg):
            return
        self.replies += 1
        rid = msg.get("id")
        if rid is None:
            self.anon += 1
            return
        key = idkey(rid)
        self.counts[key] = self.counts.get(key, 0) + 1


def fuzz_server(
    argv: list[str],
    fuzzer: Fuzzer,
    n: int,
    *,
    timeout: float = 10.0,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    process: ServerProcess | None = None,
) -> tuple[FuzzReport, ServerProcess]:
    """Send ``n`` fuzzed lines (plus interleaved valid requests) and account for every reply."""
    acct = _Accounting()
    p = process or ServerProcess(argv, label="fuzz", env=env, cwd=cwd, record=False, sink=acct)
    if process is not None:
        p.sink, p.record = acct, False
    rep = FuzzReport()
    readable: dict[tuple[str, Any], Any] = {}
    optional: set[tuple[str, Any]] = set()
    ambiguous: dict[tuple[str, Any], int] = {}
    seen_ids: set[tuple[str, Any]] = set()
    outstanding: list[tuple[str, Any]] = []
    t0 = time.monotonic()
    warm = max(1, n // 10)

    def settled() -> bool:
        while outstanding and (acct.counts.get(outstanding[0], 0) or outstanding[0] in optional):
            outstanding.pop(0)
        return len(outstanding) < WINDOW

    for line, is_fuzz in fuzzer.lines(n):
        if not p.alive:
            break
        rid = readable_id(line[:-1])
        for _ in range(100):
            if rid is MISSING or idkey(rid) not in seen_ids:
                break
            # A mutation reproduced an id already used (a duplicate): draw another line.
            line = fuzzer.fuzzed() if is_fuzz else encode(fuzzer.valid())
            rid = readable_id(line[:-1])
        tokens = id_tokens(line)
        if rid is not MISSING:
            key = idkey(rid)
            if key in seen_ids:
                continue
            seen_ids.update(tokens)
            seen_ids.add(key)
            readable[key] = rid
            outstanding.append(key)
            obj = parse_strict(line[:-1])
            p.note_request(obj)
        else:
            seen_ids.update(tokens)
            # A broken line carrying a readable request's id may draw an error with that id.
            for t in tokens:
                if t in readable:
                    ambiguous[t] = ambiguous.get(t, 0) + 1
            cid = cancelled_id(line[:-1])
            if cid is not MISSING and (type(cid) in (str, int)):
                optional.add(idkey(cid))
        if not p.send_raw(line):
            break
        rep.lines_sent += 1
        if is_fuzz:
            rep.fuzz_lines += 1
            if rep.fuzz_lines == warm:
                rep.rss_start = p.rss_bytes()
        else:
            rep.valid_requests += 1
        if not p.wait_until(settled, timeout):
            rep.hung = True
            break
    # One last valid request: if it comes back, the server is still serving.
    final = fuzzer.valid()
    final["id"] = "fuzz-final"
    readable[idkey("fuzz-final")] = "fuzz-final"
    p.send(final)
    got_final = p.wait_until(lambda: acct.counts.get(idkey("fuzz-final"), 0) > 0, timeout)
    p.wait_until(
        lambda: all(acct.counts.get(k, 0) or k in optional for k in readable),
        timeout if got_final else 0.1,
    )
    if not got_final and p.alive:
        rep.hung = True
    time.sleep(0.2)
    rep.rss_end = p.rss_bytes()
    rep.seconds = time.monotonic() - t0
    crashed_before_close = not p.alive
    code = p.stop()
    rep.crashed = crashed_before_close
    rep.exit_status = code
    rep.readable = len(readable)
    for key, rid in readable.items():
        c = acct.counts.get(key, 0)
        if c == 1 or 1 < c <= 1 + ambiguous.get(key, 0):
            rep.answered_once += 1
        elif c == 0 and key in optional:
            rep.optional_unanswered += 1
        elif c == 0:
            rep.lost.append(rid)
        else:
            rep.duplicated.append(rid)
    rep.anonymous_errors = acct.anon
    rep.replies = acct.replies
    rep.impure = p.stats.problem_counts.get("impure", 0) + p.stats.problem_counts.get("crlf", 0)
    rep.schema_problems = p.stats.problem_counts.get("schema", 0) + p.stats.problem_counts.get(
        "request", 0
    )
    rep.problem_examples = [f"{x.kind}: {x.detail}: {x.excerpt}" for x in p.stats.problems[:5]]
    rep.kinds = dict(fuzzer.kinds)
    rep.stderr_tail = p.stderr_text[-2000:] if rep.crashed else ""
    return rep, p


@dataclass
class SoakReport:
    requests: int = 0
    answered: int = 0
    seconds: float = 0.0
    samples: list[tuple[int, int]] = field(default_factory=list)
    """(requests sent, RSS bytes) pairs."""
    baseline: int | None = None
    final: int | None = None
    peak: int | None = None
    hung: bool = False
    crashed: bool = False
    problems: int = 0

    @property
    def growth(self) -> float | None:
        if not self.baseline or not self.final:
            return None
        return (self.final - self.baseline) / self.baseline


def soak_server(
    argv: list[str],
    corpus: Corpus,
    n: int,
    *,
    timeout: float = 10.0,
    samples: int = 50,
    warmup: float = 0.1,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    seed: int = 0,
) -> SoakReport:
    """``n`` valid requests, pipelined ``WINDOW`` deep; RSS sampled ``samples`` times.

    Growth is measured from the end of the warm-up (the median of three samples there) to
    the end (the median of the last three samples).
    """
    answered = [0]
    unexpected = [0]
    outstanding: set[Any] = set()

    def sink(msg: dict[str, Any]) -> None:
        if "method" in msg:
            return
        rid = msg.get("id")
        if rid in outstanding:
            outstanding.discard(rid)
            answered[0] += 1
        else:
            unexpected[0] += 1

    p = ServerProcess(argv, label="soak", env=env, cwd=cwd, record=False, sink=sink)
    rep = SoakReport()
    rng = random.Random(seed)
    prepared = [(m, json.loads(json.dumps(params))) for m, params in corpus.requests]
    every = max(1, n // samples)
    t0 = time.monotonic()
    meta = modern_meta(MODERN, {}, CLIENT_INFO)
    try:
        for i in range(n):
            method, params = prepared[rng.randrange(len(prepared))]
            msg = request(i, method, {**params, "_meta": meta})
            with p.cond:
                outstanding.add(i)
            if not p.send_raw(encode(msg)):
                rep.crashed = True
                break
            rep.requests += 1
            if len(outstanding) >= WINDOW and not p.wait_until(
                lambda: len(outstanding) < WINDOW, timeout
            ):
                rep.hung = True
                break
            if i % every == every - 1:
                p.wait_until(lambda: not outstanding, timeout)
                rss = p.rss_bytes()
                if rss is not None:
                    rep.samples.append((i + 1, rss))
        if not p.wait_until(lambda: not outstanding, timeout):
            rep.hung = True
    finally:
        rep.seconds = time.monotonic() - t0
        rep.crashed = rep.crashed or not p.alive
        p.stop()
    rep.answered = answered[0]
    rep.problems = sum(p.stats.problem_counts.values()) + unexpected[0]
    if len(rep.samples) >= 6:
        values = [v for _, v in rep.samples]
        k = max(1, int(len(values) * warmup))
        rep.baseline = int(statistics.median(values[k : k + 3]))
        rep.final = int(statistics.median(values[-3:]))
        rep.peak = max(values[k:])
    return rep


# --- as checks


def corpus_for(checker: Checker, slow: SlowTool | None, seed: int) -> Corpus:
    p = checker.spawn("corpus")
    try:
        p.request("server/discover", timeout=checker.startup_timeout)
        prompts = checker.list_all(p, "prompts") if "prompts" in checker.capabilities else None
        resources = (
            checker.list_all(p, "resources") if "resources" in checker.capabilities else None
        )
    finally:
        p.stop()
    exclude = {slow.name} if slow else set()
    return Corpus.from_server(
        checker.tools,
        checker.capabilities,
        prompts=prompts,
        resources=resources,
        exclude_tools=exclude,
        seed=seed,
    )


def _mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1048576:.1f} MiB"


def run_fuzz_check(checker: Checker, corpus: Corpus, n: int, seed: int) -> FuzzReport:
    from .checks import FAIL, PASS, WARN

    fuzzer = Fuzzer(corpus, seed)
    p = checker.spawn("fuzz", record=False)
    rep, _ = fuzz_server(checker.argv, fuzzer, n, timeout=max(checker.timeout, 5.0), process=p)
    checker.facts["fuzz"] = {
        "seed": seed,
        "lines": rep.lines_sent,
        "fuzz_lines": rep.fuzz_lines,
        "valid_requests": rep.valid_requests,
        "readable_ids": rep.readable,
        "answered_once": rep.answered_once,
        "lost": len(rep.lost),
        "duplicated": len(rep.duplicated),
        "anonymous_errors": rep.anonymous_errors,
        "seconds": round(rep.seconds, 1),
        "rss_start": rep.rss_start,
        "rss_end": rep.rss_end,
        "kinds": rep.kinds,
    }
    tag = (
        f"seed {seed}, {rep.fuzz_lines} fuzzed + {rep.valid_requests} valid lines in "
        f"{rep.seconds:.1f} s"
    )
    checker.add(
        "fuzz.no-crash",
        FAIL if rep.crashed else PASS,
        (
            "the server survives any input: malformed lines are answered or ignored, never fatal "
            "(spec: basic/index#error-responses; JSON-RPC 2.0: error_object)"
        ),
        f"{tag}: exited with status {rep.exit_status} mid-run; stderr: {rep.stderr_tail[-300:]!r}"
        if rep.crashed
        else f"{tag}: still running at the end",
    )
    checker.add(
        "fuzz.no-hang",
        FAIL if rep.hung else PASS,
        "every request is answered; the reader keeps reading after bad input (spec: "
        "basic/index#responses)",
        "requests stopped being answered"
        if rep.hung
        else "a valid request after the fuzz was answered",
    )
    checker.add(
        "fuzz.stdout-pure",
        FAIL if rep.impure or rep.schema_problems else PASS,
        (
            "S·MUST NOT write anything but valid MCP messages to stdout, whatever the input "
            "(spec: basic/transports/stdio)"
        ),
        (
            f"{rep.impure} impure and {rep.schema_problems} schema-invalid lines: "
            f"{rep.problem_examples[:2]}"
        )
        if rep.impure or rep.schema_problems
        else f"{rep.replies} replies, all pure and schema-valid",
    )
    bad = rep.lost or rep.duplicated
    checker.add(
        "fuzz.readable-ids-answered-once",
        FAIL if bad else PASS,
        (
            "S·MUST answer each request exactly once with its id; 'readable id' as defined in "
            "docs/check.md (spec: basic/index#responses)"
        ),
        (
            f"{rep.readable} readable ids: {len(rep.lost)} never answered {rep.lost[:5]}, "
            f"{len(rep.duplicated)} answered twice {rep.duplicated[:5]}"
        )
        if bad
        else (
            f"{rep.readable} readable ids each answered exactly once ({rep.optional_unanswered} "
            f"cancelled by a fuzzed notification); {rep.anonymous_errors} id-less errors"
        ),
    )
    growth = rep.rss_growth
    checker.add(
        "fuzz.memory",
        WARN if growth is not None and growth > 0.25 else PASS,
        "mcpline rec: bounded memory whatever the peer sends (refines spec: "
        "basic/transports/stdio)",
        f"RSS {_mib(rep.rss_start)} after warm-up → {_mib(rep.rss_end)} at the end ({growth:+.1%})"
        if growth is not None
        else "RSS not available (/proc)",
    )
    return rep


def run_soak_check(checker: Checker, corpus: Corpus, n: int) -> SoakReport:
    from .checks import FAIL, PASS, WARN

    rep = soak_server(
        checker.argv,
        corpus,
        n,
        timeout=max(checker.timeout, 10.0),
        env=checker.env,
        cwd=checker.cwd,
        seed=checker.seed,
    )
    growth = rep.growth
    checker.facts["soak"] = {
        "requests": rep.requests,
        "answered": rep.answered,
        "seconds": round(rep.seconds, 1),
        "rss_baseline": rep.baseline,
        "rss_final": rep.final,
        "rss_peak": rep.peak,
        "growth": None if growth is None else round(growth, 4),
    }
    ok = (
        not rep.hung and not rep.crashed and rep.answered == rep.requests == n and rep.problems == 0
    )
    rate = rep.requests / rep.seconds if rep.seconds else 0
    checker.add(
        "soak.all-answered",
        PASS if ok else FAIL,
        "S·MUST answer every request exactly once; pure stdout (spec: basic/index#responses, "
        "basic/transports/stdio)",
        (
            f"{rep.answered}/{n} answered in {rep.seconds:.1f} s ({rate:.0f} req/s); "
            f"{rep.problems} problems; hung={rep.hung} crashed={rep.crashed}"
        ),
    )
    checker.add(
        "soak.memory",
        (PASS if growth < 0.05 else WARN) if growth is not None else WARN,
        "mcpline rec: memory stays flat under sustained load (growth after warm-up under 5 %) "
        "(refines spec: basic/transports/stdio)",
        (
            f"RSS {_mib(rep.baseline)} after warm-up → {_mib(rep.final)} at the end "
            f"({growth:+.2%}), peak {_mib(rep.peak)}"
        )
        if growth is not None
        else "too few RSS samples",
    )
    return rep
