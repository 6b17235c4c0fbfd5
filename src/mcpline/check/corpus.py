"""Valid traffic derived from what a server offers, and the malformed lines derived from it.

`Corpus` holds the requests the server's own ``tools/list`` etc. make possible; `Fuzzer`
derives malformed, truncated, mutated and oversized lines from them, and the same seed and
corpus give the same lines.

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..jsonrpc import MISSING, notification, request
from ..protocol.meta import modern_meta
from ..spec import (
    CANCELLED,
    COMPLETE,
    DISCOVER,
    LEGACY_VERSIONS,
    MODERN,
    PING,
    PROGRESS,
    PROMPTS_GET,
    PROMPTS_LIST,
    PROTOCOL_VERSION_KEY,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    SET_LEVEL,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ..wire import encode
from .runner import CLIENT_INFO, idkey

READABLE_MAX = 1 << 20
MAX_DEPTH = 64
MAX_SAFE_INT = 2**53 - 1
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
    if type(obj) is not dict or "id" in obj or obj.get("method") != CANCELLED:
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
        reqs: list[tuple[str, dict[str, Any]]] = [(DISCOVER, {})]
        if "tools" in capabilities:
            reqs.append((TOOLS_LIST, {}))
        for tool in tools or []:
            name = tool.get("name")
            if not isinstance(name, str) or name in (exclude_tools or set()):
                continue
            for _ in range(2):
                reqs.append(
                    (
                        TOOLS_CALL,
                        {"name": name, "arguments": sample_value(tool.get("inputSchema"), rng)},
                    )
                )
        if "prompts" in capabilities:
            reqs.append((PROMPTS_LIST, {}))
            for p in prompts or []:
                args = {
                    a["name"]: "value"
                    for a in p.get("arguments") or []
                    if isinstance(a, dict) and "name" in a
                }
                reqs.append((PROMPTS_GET, {"name": p.get("name"), "arguments": args}))
        if "resources" in capabilities:
            reqs.append((RESOURCES_LIST, {}))
            reqs.append((RESOURCES_TEMPLATES_LIST, {}))
            for r in (resources or [])[:10]:
                reqs.append((RESOURCES_READ, {"uri": r.get("uri")}))
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
    DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    PROMPTS_GET,
    RESOURCES_READ,
    COMPLETE,
    PING,
    SET_LEVEL,
    CANCELLED,
    "nope/nope",
    "",
    TOOLS_LIST.upper(),
    TOOLS_LIST + " ",
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
                [LEGACY_VERSIONS[0], "2099-01-01", "", MODERN + "x"]
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
                        CANCELLED,
                        PROGRESS,
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
