"""The Streamable HTTP binding's request headers, sans-I/O: ``Mcp-Name``, the Base64 sentinel
and the ``x-mcp-header`` tool-parameter mirroring (the specification's page
basic/transports/streamable-http, "Request Metadata" and "Custom Headers from Tool
Parameters").

Pure functions on JSON values, shared by any peer that writes or checks these headers::

    params = header_params(tool["inputSchema"])       # raises InvalidHeaderAnnotation
    headers = param_headers(params, arguments)         # {"Mcp-Param-Region": "us-west1"}
    encode_value("Hello, 世界")                         # "=?base64?SGVsbG8sIOS4lueVjA==?="
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec

from ..spec import PROMPTS_GET, RESOURCES_READ, TOOLS_CALL

ANNOTATION = "x-mcp-header"
PARAM_PREFIX = "Mcp-Param-"
SENTINEL_START = "=?base64?"
SENTINEL_END = "?="
MAX_SAFE_INTEGER = 2**53 - 1
HEADER_TYPES = ("string", "integer", "boolean")

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
"""RFC 9110 ``token`` (``1*tchar``): no space, colon, control or non-ASCII character."""
_PLAIN = r"[\x20-\x7e]*"
_B64 = r"[A-Za-z0-9+/]*={0,2}"
# Patterns as text: `re` compiles (and caches) each on its first use, not at import.

NAMED_METHODS: Mapping[str, str] = {TOOLS_CALL: "name", PROMPTS_GET: "name", RESOURCES_READ: "uri"}
"""Methods whose ``Mcp-Name`` header mirrors a param, and which param."""


class InvalidHeaderAnnotation(ValueError):
    """A tool's ``x-mcp-header`` annotations break the spec's constraints (the message says
    which and why)."""


class HeaderParam(msgspec.Struct, frozen=True):
    """One annotated tool parameter: header ``Mcp-Param-{name}`` mirrors the argument at
    ``path`` (a chain of ``properties`` keys), of JSON type ``type``."""

    name: str
    path: tuple[str, ...]
    type: str

    @property
    def header(self) -> str:
        return PARAM_PREFIX + self.name


def is_plain(value: str) -> bool:
    """True when ``value`` can be sent as it is: printable ASCII and spaces, no leading or
    trailing space, and not itself shaped like the sentinel."""
    return (
        re.fullmatch(_PLAIN, value) is not None
        and value == value.strip(" ")
        and not (value.startswith(SENTINEL_START) and value.endswith(SENTINEL_END))
    )


def encode_value(value: str) -> str:
    """``value`` as a header value: as it is when plain, else ``=?base64?…?=`` of its UTF-8."""
    if is_plain(value):
        return value
    return SENTINEL_START + base64.b64encode(value.encode("utf-8")).decode("ascii") + SENTINEL_END


def decode_value(value: str) -> str:
    """The text a header value stands for (strict: a malformed sentinel raises ValueError).

    Optional whitespace around the value is not part of it (RFC 9110, section 5.5)."""
    value = value.strip(" \t")
    if not (
        value.startswith(SENTINEL_START)
        and value.endswith(SENTINEL_END)
        and len(value) >= len(SENTINEL_START) + len(SENTINEL_END)
    ):
        return value
    body = value[len(SENTINEL_START) : -len(SENTINEL_END)]
    if len(body) % 4 or re.fullmatch(_B64, body) is None:
        raise ValueError("malformed Base64 in a sentinel-encoded header value")
    try:
        return base64.b64decode(body, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("malformed Base64 in a sentinel-encoded header value") from None


def name_header(method: str, params: Mapping[str, Any]) -> str | None:
    """The ``Mcp-Name`` value of a request (None for methods that have none)."""
    key = NAMED_METHODS.get(method)
    if key is None:
        return None
    value = params.get(key)
    return encode_value(value) if isinstance(value, str) else None


DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are data, not schemas (a key spelled ``x-mcp-header`` there is data)."""
SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
"""Keywords whose values map names to schemas: their keys are names, not keywords (a
definition or property named ``x-mcp-header`` is no annotation)."""


def _annotations(
    node: Any, path: tuple[str, ...], where: str, reachable: bool
) -> Iterator[tuple[tuple[str, ...], str, bool, Any]]:
    """Every ``x-mcp-header`` in a schema: (property path, JSON pointer of the schema that
    holds it, statically reachable?, value). Only ``properties`` keep a schema reachable."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _annotations(item, path, f"{where}/{i}", False)
        return
    if not isinstance(node, dict):
        return
    if ANNOTATION in node:
        yield path, where, reachable, node[ANNOTATION]
    for key, child in node.items():
        if key in DATA_KEYWORDS or key == ANNOTATION:
            continue
        if key in SCHEMA_MAPS and isinstance(child, dict):
            for name, sub in child.items():
                inside = reachable and key == "properties"
                yield from _annotations(
                    sub, (*path, name) if inside else path, f"{where}/{key}/{name}", inside
                )
        else:
            yield from _annotations(child, path, f"{where}/{key}", False)


def _at(schema: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = schema
    for key in path:
        node = node["properties"][key]
    return node


def header_params(schema: Any) -> tuple[HeaderParam, ...]:
    """The annotated parameters of an ``inputSchema``; `InvalidHeaderAnnotation` naming the
    property and the rule broken: the value must be a non-empty HTTP token, unique in any
    case within the schema, on a ``string``, ``integer`` or ``boolean`` property reachable
    from the root through ``properties`` alone."""
    if not isinstance(schema, dict):
        return ()
    found: list[HeaderParam] = []
    seen: dict[str, str] = {}
    for path, pointer, reachable, value in _annotations(schema, (), "", True):
        if not reachable or not path:
            raise InvalidHeaderAnnotation(
                f"{ANNOTATION} at {pointer or '/'}: only properties reached from the root "
                "through 'properties' alone may carry it (it is not reachable under items, "
                "anyOf/oneOf/allOf/not, if/then/else or $defs/$ref targets)"
            )
        where = f"property {'.'.join(path)!r}"
        if not isinstance(value, str) or not value:
            raise InvalidHeaderAnnotation(
                f"{where}: {ANNOTATION} must be a non-empty string, not {value!r}"
            )
        if re.fullmatch(_TOKEN, value) is None:
            raise InvalidHeaderAnnotation(
                f"{where}: {ANNOTATION} {value!r} is not an HTTP token (letters, digits and "
                "!#$%&'*+-.^_`|~; no spaces, colons, control or non-ASCII characters)"
            )
        folded = value.lower()
        if folded in seen:
            raise InvalidHeaderAnnotation(
                f"{where}: {ANNOTATION} {value!r} repeats that of property {seen[folded]!r} "
                "(names are compared case-insensitively)"
            )
        seen[folded] = ".".join(path)
        kind = _at(schema, path).get("type")
        if kind not in HEADER_TYPES:
            raise InvalidHeaderAnnotation(
                f"{where}: {ANNOTATION} {value!r} is on type {kind or 'absent'!r}; it needs "
                f'"type" to be one of {", ".join(HEADER_TYPES)} (for an optional parameter '
                "give a default rather than None)"
            )
        found.append(HeaderParam(value, path, kind))
    return tuple(found)


def param_value(param: HeaderParam, arguments: Any) -> str | None:
    """The header value for ``param`` from a call's arguments (None: no header)."""
    node = arguments
    for key in param.path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if node is None:
        return None
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, int):
        if abs(node) > MAX_SAFE_INTEGER:
            raise ValueError(f"{param.header}: {node} is outside the safe integer range")
        return str(node)
    if isinstance(node, float) and node.is_integer() and param.type == "integer":
        return str(int(node))
    if isinstance(node, str):
        return encode_value(node)
    raise ValueError(f"{param.header}: a {type(node).__name__} cannot be mirrored in a header")


def param_headers(params: Sequence[HeaderParam], arguments: Any) -> dict[str, str]:
    """``Mcp-Param-*`` headers for a ``tools/call`` of a tool with these ``params``."""
    out: dict[str, str] = {}
    for p in params:
        value = param_value(p, arguments)
        if value is not None:
            out[p.header] = value
    return out


__all__ = [
    "ANNOTATION",
    "DATA_KEYWORDS",
    "HeaderParam",
    "InvalidHeaderAnnotation",
    "NAMED_METHODS",
    "PARAM_PREFIX",
    "SCHEMA_MAPS",
    "decode_value",
    "encode_value",
    "header_params",
    "is_plain",
    "name_header",
    "param_headers",
    "param_value",
]
