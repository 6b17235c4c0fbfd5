"""The HTTP header rules of MCP's Streamable HTTP binding, as pure functions.

Header names are compared in any case (ASGI servers hand them over in lower case), values
exactly, after trimming optional whitespace (RFC 9110, section 5.5). ``Mcp-Name`` and
``Mcp-Param-*`` values may come as the Base64 sentinel ``=?base64?…?=``, decoded strictly (the
alphabet and the padding are checked). `mirror_problem` says what is wrong with the mirrored
headers of a 2026-07-28 request; `status_for` maps a JSON-RPC error code to the HTTP status of
its reply.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...spec import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_VERSIONS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    PROMPTS_GET,
    RESOURCES_READ,
    TASKS_CANCEL,
    TASKS_GET,
    TASKS_UPDATE,
    TOOLS_CALL,
    UNSUPPORTED_PROTOCOL_VERSION,
)

if TYPE_CHECKING:
    from ...protocol.headers import HeaderParam

PROTOCOL_VERSION = "mcp-protocol-version"
METHOD = "mcp-method"
NAME = "mcp-name"
PARAM_PREFIX = "mcp-param-"
SESSION_ID = "mcp-session-id"
LAST_EVENT_ID = "last-event-id"

NAME_SOURCE = {
    TOOLS_CALL: "name",
    PROMPTS_GET: "name",
    RESOURCES_READ: "uri",
    TASKS_GET: "taskId",
    TASKS_UPDATE: "taskId",
    TASKS_CANCEL: "taskId",
}
"""The methods whose ``Mcp-Name`` header mirrors a body field, and that field of ``params``
(the tasks extension's methods mirror ``params.taskId``, SEP-2663)."""

SENTINEL_PREFIX = "=?base64?"
SENTINEL_SUFFIX = "?="
_OWS = " \t"
_SAFE_VALUE = re.compile(r"^[\x20-\x7e\t]*$")
"""A header value of visible ASCII, space and tab only (RFC 9110 field-value)."""
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
"""Canonical Base64: whole quanta, padding only where the last one needs it."""

_BAD_REQUEST_CODES = frozenset(
    {
        PARSE_ERROR,
        INVALID_REQUEST,
        INVALID_PARAMS,
        HEADER_MISMATCH,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        UNSUPPORTED_PROTOCOL_VERSION,
    }
)


_KNOWN_NAMES = {
    name.encode("latin-1"): name
    for name in (
        "accept",
        "accept-encoding",
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "host",
        "origin",
        "traceparent",
        "tracestate",
        "user-agent",
        LAST_EVENT_ID,
        METHOD,
        NAME,
        PROTOCOL_VERSION,
        SESSION_ID,
    )
}
"""Lower-case header names as ASGI servers send them, already decoded: the names requests
usually carry (a fixed set: any other name is decoded as it comes)."""


class HeaderError(ValueError):
    """A header that cannot be read: repeated, with invalid characters, or bad Base64."""


class Headers:
    """The request headers of an ASGI scope: lower-case names, latin-1 values."""

    __slots__ = ("_repeated", "_values", "size")

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        if not isinstance(raw, (list, tuple)):
            raw = list(raw)
        values: dict[str, str] = {}
        size = 4 * len(raw)
        known = _KNOWN_NAMES
        for name, value in raw:
            size += len(name) + len(value)
            key = known.get(name)
            if key is None:
                key = name.decode("latin-1").lower()
            values[key] = value.decode("latin-1")
        repeated: dict[str, list[str]] = {}
        if len(values) != len(raw):  # a name sent more than once: keep every value
            for name, value in raw:
                key = name.decode("latin-1").lower()
                repeated.setdefault(key, []).append(value.decode("latin-1"))
            repeated = {k: v for k, v in repeated.items() if len(v) > 1}
            values.update((k, ", ".join(v)) for k, v in repeated.items())
        self._values = values
        """Each name's value, repeated fields joined by commas (RFC 9110, section 5.3)."""
        self._repeated = repeated
        """The names sent more than once, with each of their values."""
        self.size = size
        """Bytes of the header block, roughly as sent (name, ``: ``, value, CRLF)."""

    def get(self, name: str) -> str | None:
        """The value of ``name`` with repeated fields joined by commas (RFC 9110, section 5.3)."""
        return self._values.get(name)

    def one(self, name: str) -> str | None:
        """The single value of ``name``, OWS-trimmed; `HeaderError` when it is repeated."""
        if name in self._repeated:
            raise HeaderError(f"the {name} header is repeated")
        found = self._values.get(name)
        return None if found is None else found.strip(_OWS)

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def view(self) -> Mapping[str, str]:
        """Every header as a read-only mapping, repeated fields joined by commas."""
        return MappingProxyType({name: self.get(name) or "" for name in self._values})


@functools.lru_cache(maxsize=256)  # clients repeat the same few method and tool names
def plain(value: str, header: str) -> str:
    """``value`` when it is a valid header value; `HeaderError` otherwise."""
    if not _SAFE_VALUE.match(value):
        raise HeaderError(f"the {header} header has characters outside visible ASCII")
    return value


@functools.lru_cache(maxsize=256)
def decode_value(value: str, header: str) -> str:
    """A ``Mcp-Name``/``Mcp-Param-*`` value as its sender meant it: the Base64 sentinel
    ``=?base64?…?=`` decoded (strict alphabet, padding required, UTF-8), anything else as is.
    `HeaderError` for invalid characters or a sentinel that does not decode."""
    plain(value, header)
    if not (
        value.startswith(SENTINEL_PREFIX)
        and value.endswith(SENTINEL_SUFFIX)
        and len(value) >= len(SENTINEL_PREFIX) + len(SENTINEL_SUFFIX)
    ):
        return value
    inner = value[len(SENTINEL_PREFIX) : len(value) - len(SENTINEL_SUFFIX)]
    if not _BASE64.match(inner):
        raise HeaderError(f"the {header} header is not valid Base64 (alphabet or padding)")
    try:
        return base64.b64decode(inner.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise HeaderError(f"the {header} header is not valid Base64 of UTF-8 text") from None


def value_matches(text: str, value: Any) -> bool:
    """Whether a mirrored header's (decoded) text stands for the body ``value``: strings
    exactly, booleans as ``true``/``false``, numbers numerically (``42.0`` is ``42``)."""
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, str):
        return text == value
    if isinstance(value, (int, float)):
        try:
            number = decimal.Decimal(text)
        except decimal.InvalidOperation:
            return False
        if not number.is_finite():
            return False
        return number == decimal.Decimal(value if isinstance(value, int) else repr(value))
    return False


def value_at(arguments: Any, path: Sequence[str]) -> Any:
    """The value at a chain of object keys, or None when a step is missing."""
    node = arguments
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def mirror_problem(
    method: str,
    params: Any,
    headers: Headers,
    header_params: Sequence[HeaderParam] = (),
) -> str | None:
    """What is wrong with the headers that mirror a 2026-07-28 request's body, or None.

    ``Mcp-Method`` must equal ``method``; for tools/call, prompts/get and resources/read
    ``Mcp-Name`` must equal ``params.name`` or ``params.uri`` (when that is a string; a body
    without one is the body's problem; tasks/* mirror ``params.taskId``, see `NAME_SOURCE`).
    ``header_params`` are the tool's mirrored parameters: a value present and not null
    needs its ``Mcp-Param-*`` header with the same value, and a header without a value in
    the body is a mismatch too.
    """
    try:
        got = headers.one(METHOD)
        if got is None:
            return "the Mcp-Method header is missing"
        plain(got, "Mcp-Method")
        if got != method:
            return f"the Mcp-Method header {got!r} does not match the body's method {method!r}"
        field = NAME_SOURCE.get(method)
        body = params.get(field) if field is not None and isinstance(params, dict) else None
        if isinstance(body, str):
            got = headers.one(NAME)
            if got is None:
                return f"the Mcp-Name header is missing (it mirrors params.{field})"
            name = decode_value(got, "Mcp-Name")
            if name != body:
                return f"the Mcp-Name header {name!r} does not match params.{field} {body!r}"
        if header_params:
            arguments = params.get("arguments") if isinstance(params, dict) else None
            for param in header_params:
                header = param.header
                got = headers.one(PARAM_PREFIX + param.name.lower())
                value = value_at(arguments, param.path)
                if value is None:
                    if got is not None:
                        return f"the {header} header is sent but the argument is absent"
                    continue
                if got is None:
                    return f"the {header} header is missing (it mirrors the argument)"
                if not value_matches(decode_value(got, header), value):
                    return f"the {header} header does not match the argument's value"
    except HeaderError as exc:
        return str(exc)
    return None


def is_modern_version(value: str | None) -> bool:
    """Whether an ``MCP-Protocol-Version`` header sends a request down the 2026-07-28 path:
    present and not one of the legacy (initialize-handshake) revisions."""
    return value is not None and value not in LEGACY_VERSIONS


@functools.lru_cache(maxsize=256)  # clients repeat the same few Accept/Content-Type values
def media_types(header: str | None) -> tuple[str, ...]:
    """The media types of an ``Accept`` or ``Content-Type`` value, lower case, no params."""
    if not header:
        return ()
    return tuple(
        part.split(";", 1)[0].strip().lower() for part in header.split(",") if part.strip()
    )


@functools.lru_cache(maxsize=256)
def accepts(header: str | None, wanted: str) -> bool:
    """Whether an ``Accept`` value admits ``wanted`` (``type/*`` and ``*/*`` count)."""
    major = wanted.split("/", 1)[0]
    return any(t in (wanted, f"{major}/*", "*/*") for t in media_types(header))


@functools.lru_cache(maxsize=256)
def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` value is ``application/json`` (any parameters)."""
    types = media_types(content_type)
    return len(types) == 1 and types[0] == "application/json"


def status_for(code: int) -> int:
    """The HTTP status of a 2026-07-28 reply with JSON-RPC error ``code``: 404 for an unknown
    method, 400 for a malformed, mismatched or unsupported request, 200 otherwise."""
    if code == METHOD_NOT_FOUND:
        return 404
    return 400 if code in _BAD_REQUEST_CODES else 200


__all__ = [
    "accepts",
    "decode_value",
    "HeaderError",
    "Headers",
    "is_json",
    "is_modern_version",
    "LAST_EVENT_ID",
    "media_types",
    "METHOD",
    "mirror_problem",
    "NAME",
    "NAME_SOURCE",
    "PARAM_PREFIX",
    "plain",
    "PROTOCOL_VERSION",
    "SENTINEL_PREFIX",
    "SENTINEL_SUFFIX",
    "SESSION_ID",
    "status_for",
    "value_at",
    "value_matches",
]
