"""JSON-RPC 2.0 message rules, sans-I/O.

`parse` turns one line into exactly one of `Request`, `Notification`, `Response` or
`Invalid`. An `Invalid` carries the error reply owed to the peer (or ``None`` when the
broken message was a notification, which is never answered). Each envelope rule lives here
and nowhere else.
"""

from __future__ import annotations

from typing import Any, TypeGuard

import msgspec

from .errors import JsonRpcError
from .spec import INVALID_REQUEST, PARSE_ERROR
from .wire import encode

RequestId = str | int

_decoder = msgspec.json.Decoder()


# Message types are frozen msgspec structs: like frozen slotted dataclasses (fields, eq,
# hash, repr), but built in microseconds at import and cheaper to create per message.


class Request(msgspec.Struct, frozen=True):
    id: RequestId
    method: str
    params: Any
    """The raw ``params`` member; `_MISSING` when absent."""


class Notification(msgspec.Struct, frozen=True):
    method: str
    params: Any


class Response(msgspec.Struct, frozen=True):
    id: RequestId | None
    result: Any = None
    error: Any = None

    @property
    def is_error(self) -> bool:
        return self.error is not None


class Invalid(msgspec.Struct, frozen=True):
    """A message that breaks the envelope rules; `reply` is what we owe, if anything."""

    reason: str
    reply: dict[str, Any] | None
    line: bytes = b""
    """The line as received (to look for an id the peer's policy can use)."""


Message = Request | Notification | Response | Invalid


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


def is_valid_id(value: Any) -> TypeGuard[RequestId]:
    """String or integer, never bool, float or null."""
    t = type(value)
    return t is str or t is int


def error_response(
    id: RequestId | None, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """An error reply; without ``id`` when none could be read (the MCP schema forbids null)."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    if id is None:
        return {"jsonrpc": "2.0", "error": err}
    return {"jsonrpc": "2.0", "id": id, "error": err}


def result_response(id: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def duplicate_id_reply(id: RequestId) -> dict[str, Any]:
    """The reply to a request whose id is already in flight: -32600 without an id, so that
    only the original's reply carries it."""
    shown = encode(id)[:-1].decode()
    why = f"Invalid Request: a request with id {shown} is already in flight"
    return error_response(None, INVALID_REQUEST, why)


def request(id: RequestId, method: str, params: Any = MISSING) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not MISSING:
        msg["params"] = params
    return msg


def notification(method: str, params: Any = MISSING) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not MISSING:
        msg["params"] = params
    return msg


def decode(line: bytes) -> Any:
    """Strict JSON: UTF-8 only, no NaN/Infinity; raises `JsonRpcError` (-32700)."""
    try:
        return _decoder.decode(line)
    except (msgspec.DecodeError, RecursionError, ValueError) as exc:
        raise JsonRpcError(PARSE_ERROR, _parse_message(exc)) from None


def parse(line: bytes) -> Message:
    """Classify one line. Never raises."""
    try:
        obj = decode(line)
    except JsonRpcError as exc:
        return unparsable(line, exc.message)
    msg = classify(obj)
    if type(msg) is Invalid:
        return Invalid(msg.reason, msg.reply, line)
    return msg


def _parse_message(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "Parse error: JSON nested too deeply to process"
    return f"Parse error: {exc}"


def unparsable(line: bytes, message: str) -> Invalid:
    """The verdict on a line we could not decode whole.

    A line whose top level reads as an object with a ``method`` and no ``id`` is a
    notification and gets no reply; otherwise the -32700 reply carries the id when one can
    be recovered.
    """
    env = scan_envelope(line)
    if env.complete and env.has_method and not env.has_id:
        return Invalid(message, None, line)
    rid = env.id
    if rid is None and not env.complete:
        rid = trailing_id(line[-4096:])
    return Invalid(message, error_response(rid, PARSE_ERROR, message), line)


def classify(obj: Any) -> Message:
    """Apply the JSON-RPC envelope rules to a decoded value."""
    if type(obj) is not dict:
        if type(obj) is list:
            why = "Invalid Request: batch arrays are not supported; send one message per line"
        else:
            why = "Invalid Request: a message must be a JSON object"
        return Invalid(why, error_response(None, INVALID_REQUEST, why))
    if "method" in obj:
        method = obj["method"]
        if "id" not in obj:
            if type(method) is not str or obj.get("jsonrpc") != "2.0":
                return Invalid("malformed notification", None)
            return Notification(method, obj.get("params", MISSING))
        rid = obj["id"]
        if not is_valid_id(rid):
            why = "Invalid Request: id must be a string or an integer"
            return Invalid(why, error_response(None, INVALID_REQUEST, why))
        if obj.get("jsonrpc") != "2.0":
            why = 'Invalid Request: "jsonrpc" must be "2.0"'
            return Invalid(why, error_response(rid, INVALID_REQUEST, why))
        if type(method) is not str:
            why = "Invalid Request: method must be a string"
            return Invalid(why, error_response(rid, INVALID_REQUEST, why))
        return Request(rid, method, obj.get("params", MISSING))
    if "id" in obj and ("result" in obj or "error" in obj):
        rid = obj["id"]
        if rid is not None and not is_valid_id(rid):
            return Invalid("response with an invalid id", None)
        if "error" in obj:
            return Response(rid, error=obj["error"])
        return Response(rid, result=obj["result"])
    rid = obj.get("id")
    why = "Invalid Request: not a request, notification or response"
    return Invalid(why, error_response(rid if is_valid_id(rid) else None, INVALID_REQUEST, why))


# --- id recovery from lines we could not (or would not) parse whole ---------------------

_WS = frozenset(b" \t\r\n")
_NUM = frozenset(b"-+0123456789.eE")


def _skip_ws(data: bytes, i: int) -> int:
    n = len(data)
    while i < n and data[i] in _WS:
        i += 1
    return i


def _scan_string(data: bytes, i: int) -> int:
    """``data[i]`` is an opening quote; return the index after the closing one, or -1."""
    i += 1
    n = len(data)
    while i < n:
        q = data.find(b'"', i)
        if q < 0:
            return -1
        b = q - 1
        slashes = 0
        while b >= i and data[b] == 0x5C:
            slashes += 1
            b -= 1
        if slashes % 2 == 0:
            return q + 1
        i = q + 1
    return -1


def _skip_value(data: bytes, i: int) -> int:
    """Skip one JSON value starting at ``i``; return the index after it, or -1."""
    n = len(data)
    depth = 0
    while i < n:
        c = data[i]
        if c == 0x22:
            i = _scan_string(data, i)
            if i < 0:
                return -1
            if depth == 0:
                return i
            continue
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            if depth == 0:
                return i  # the end of the enclosing container ends a scalar
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and c == 0x2C:
            return i
        i += 1
    return -1


class Envelope(msgspec.Struct, frozen=True):
    """What the top level of a (possibly broken or truncated) JSON object shows."""

    id: RequestId | None
    """A well-typed top-level ``id``, if one was read."""
    has_id: bool
    has_method: bool
    complete: bool
    """The object's closing brace was reached."""


def _read_id(data: bytes, i: int) -> RequestId | None:
    if i < len(data) and data[i] == 0x22:
        end = _scan_string(data, i)
        if end < 0:
            return None
        value = msgspec.json.decode(data[i:end])
        return value if isinstance(value, str) else None
    j = i
    while j < len(data) and data[j] in _NUM:
        j += 1
    token = data[i:j]
    if j >= len(data) or not token:
        return None
    value = msgspec.json.decode(token)
    return value if type(value) is int else None


def scan_envelope(data: bytes) -> Envelope:
    """Read the top-level members of JSON object text without decoding nested values.

    Used only for lines that could not be decoded whole (too deep, too large, or broken
    somewhere inside), to decide whether an error reply is owed and where to address it.
    """
    rid: RequestId | None = None
    has_id = has_method = False
    n = len(data)
    try:
        i = _skip_ws(data, 0)
        if i >= n or data[i] != 0x7B:
            return Envelope(None, False, False, False)
        i = _skip_ws(data, i + 1)
        if i < n and data[i] == 0x7D:
            return Envelope(None, False, False, True)
        while True:
            if i >= n or data[i] != 0x22:
                break
            end = _scan_string(data, i)
            if end < 0:
                break
            key = msgspec.json.decode(data[i:end])
            i = _skip_ws(data, end)
            if i >= n or data[i] != 0x3A:
                break
            i = _skip_ws(data, i + 1)
            if key == "id":
                has_id = True
                if rid is None:
                    rid = _read_id(data, i)
            elif key == "method":
                has_method = True
            i = _skip_value(data, i)
            if i < 0:
                break
            i = _skip_ws(data, i)
            if i < n and data[i] == 0x7D:
                return Envelope(rid, has_id, has_method, True)
            if i >= n or data[i] != 0x2C:
                break
            i = _skip_ws(data, i + 1)
    except (msgspec.DecodeError, RecursionError, ValueError):
        pass
    return Envelope(rid, has_id, has_method, False)


def trailing_id(data: bytes) -> RequestId | None:
    """An ``"id"`` written as the last member of a JSON object that ends ``data``.

    The member right before an object's final brace is at the top level, so this is
    reliable for peers that serialise the id last, even when only the line's tail is kept.
    """
    try:
        i = len(data) - 1
        while i >= 0 and data[i] in _WS:
            i -= 1
        if i < 0 or data[i] != 0x7D:
            return None
        i -= 1
        while i >= 0 and data[i] in _WS:
            i -= 1
        if i < 0:
            return None
        value: Any
        if data[i] == 0x22:
            q = i - 1
            while True:
                q = data.rfind(b'"', 0, q + 1)
                if q < 0:
                    return None
                b = q - 1
                while b >= 0 and data[b] == 0x5C:
                    b -= 1
                if (q - 1 - b) % 2 == 0:
                    break
                q -= 1
            value = msgspec.json.decode(data[q : i + 1])
            if not isinstance(value, str):
                return None
            i = q - 1
        else:
            j = i
            while j >= 0 and data[j] in _NUM:
                j -= 1
            if j == i:
                return None
            value = msgspec.json.decode(data[j + 1 : i + 1])
            if type(value) is not int:
                return None
            i = j
        while i >= 0 and data[i] in _WS:
            i -= 1
        if i < 0 or data[i] != 0x3A:
            return None
        i -= 1
        while i >= 0 and data[i] in _WS:
            i -= 1
        if i < 3 or data[i - 3 : i + 1] != b'"id"':
            return None
        i -= 4
        while i >= 0 and data[i] in _WS:
            i -= 1
        if i < 0 or data[i] not in b",{":
            return None
        return value  # type: ignore[no-any-return]
    except (msgspec.DecodeError, ValueError):
        return None


def recover_id(data: bytes, suffix: bytes = b"") -> RequestId | None:
    """Find a top-level ``"id"`` in (possibly truncated or over-deep) JSON object text.

    ``data`` is the start of the text; ``suffix``, when given, is its end (for lines of
    which only both ends were kept). Used only to address an error reply for a line that
    could not be processed whole; ``None`` unless a well-typed id is found.
    """
    rid = scan_envelope(data).id
    if rid is None and suffix:
        rid = trailing_id(suffix)
    return rid


__all__ = [
    "classify",
    "decode",
    "duplicate_id_reply",
    "Envelope",
    "error_response",
    "Invalid",
    "is_valid_id",
    "Message",
    "MISSING",
    "Notification",
    "notification",
    "parse",
    "recover_id",
    "Request",
    "request",
    "RequestId",
    "Response",
    "result_response",
    "scan_envelope",
    "trailing_id",
    "unparsable",
]
