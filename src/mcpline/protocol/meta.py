"""Validation of a modern request's ``params._meta``, sans-I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..errors import JsonRpcError
from ..jsonrpc import MISSING
from ..spec import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    INVALID_PARAMS,
    LOG_LEVEL_KEY,
    LOG_LEVEL_RANK,
    LOG_LEVELS,
    PROGRESS_TOKEN_KEY,
    PROTOCOL_VERSION_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)


class RequestMeta(msgspec.Struct, frozen=True):
    """What one modern request says about its sender; valid for that request only."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None
    progress_token: str | int | None
    raw: dict[str, Any]

    def wants_log(self, level: str) -> bool:
        """True when a `notifications/message` at ``level`` may be sent for this request."""
        if self.log_level is None:
            return False
        return LOG_LEVEL_RANK[level] >= LOG_LEVEL_RANK[self.log_level]


def has_modern_meta(params: Any) -> bool:
    """True when ``params._meta`` names a protocol version (the modern era's marker)."""
    if type(params) is not dict:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and PROTOCOL_VERSION_KEY in meta


def modern_meta(
    version: str,
    caps: dict[str, Any],
    info: dict[str, Any] | None = None,
    *,
    log_level: str | None = None,
    progress_token: str | int | None = None,
) -> dict[str, Any]:
    """The ``_meta`` every modern request carries (plus a log level and a progress token)."""
    meta: dict[str, Any] = {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: caps}
    if info is not None:
        meta[CLIENT_INFO_KEY] = info
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    if progress_token is not None:
        meta[PROGRESS_TOKEN_KEY] = progress_token
    return meta


def _invalid(message: str, supported: tuple[str, ...]) -> JsonRpcError:
    return JsonRpcError(INVALID_PARAMS, message, {"supported": list(supported)})


def validate_request_meta(
    params: Any,
    supported: tuple[str, ...],
    check_version: Callable[[str], None] | None = None,
) -> RequestMeta:
    """Check the required per-request keys, in the order the spec's pipeline applies them.

    Raises `JsonRpcError` with -32602 for missing or ill-typed keys (naming the versions we
    speak, so that a legacy client learns what to do) and -32022 for a version we do not
    serve. ``check_version`` (a transport's own copy of the version, such as HTTP's
    ``MCP-Protocol-Version``) sees the version once the required keys are well formed and
    before it is judged, so its mismatch error comes first.
    """
    if params is MISSING:
        raise _invalid(
            f"Invalid params: missing params._meta; this server speaks MCP {', '.join(supported)}",
            supported,
        )
    if type(params) is not dict:
        raise _invalid("Invalid params: params must be an object", supported)
    meta = params.get("_meta", MISSING)
    if meta is MISSING:
        raise _invalid(
            "Invalid params: missing params._meta with io.modelcontextprotocol/protocolVersion; "
            f"this server speaks MCP {', '.join(supported)}",
            supported,
        )
    if type(meta) is not dict:
        raise _invalid("Invalid params: params._meta must be an object", supported)
    version = meta.get(PROTOCOL_VERSION_KEY, MISSING)
    if version is MISSING:
        raise _invalid(f"Invalid params: _meta lacks {PROTOCOL_VERSION_KEY}", supported)
    if type(version) is not str:
        raise _invalid(f"Invalid params: {PROTOCOL_VERSION_KEY} must be a string", supported)
    caps = meta.get(CLIENT_CAPABILITIES_KEY, MISSING)
    if caps is MISSING:
        raise _invalid(f"Invalid params: _meta lacks {CLIENT_CAPABILITIES_KEY}", supported)
    if type(caps) is not dict:
        raise _invalid(f"Invalid params: {CLIENT_CAPABILITIES_KEY} must be an object", supported)
    if check_version is not None:
        check_version(version)
    if version not in supported:
        raise JsonRpcError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version {version!r}; supported: {', '.join(supported)}",
            {"supported": list(supported), "requested": version},
        )
    level = meta.get(LOG_LEVEL_KEY)
    if level is not None and (type(level) is not str or level not in LOG_LEVEL_RANK):
        raise JsonRpcError(
            INVALID_PARAMS,
            f"Invalid params: {LOG_LEVEL_KEY} must be one of {', '.join(LOG_LEVELS)}",
        )
    token = meta.get("progressToken")
    if token is not None and type(token) not in (str, int):
        raise JsonRpcError(
            INVALID_PARAMS, "Invalid params: progressToken must be a string or integer"
        )
    info = meta.get(CLIENT_INFO_KEY)
    return RequestMeta(
        protocol_version=version,
        client_capabilities=caps,
        client_info=info if type(info) is dict else None,
        log_level=level,
        progress_token=token,
        raw=meta,
    )


__all__ = [
    "has_modern_meta",
    "modern_meta",
    "RequestMeta",
    "validate_request_meta",
]
