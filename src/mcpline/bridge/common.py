"""What the bridge's eras share: the `EraHost` their contexts see, the holder of an upstream,
progress relaying, and the reshaping of results and params between the eras."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InternalError, JsonRpcError
from ..jsonrpc import notification
from ..protocol.meta import RequestMeta
from ..server.outbound import Kind
from ..spec import (
    CACHEABLE_METHODS,
    INVALID_PARAMS,
    LEGACY_RESOURCE_NOT_FOUND,
    LIST_CHANGED,
    LOG_LEVEL_RANK,
    MESSAGE,
    META_PREFIX,
    PROGRESS,
    PROGRESS_TOKEN_KEY,
    RESOURCES_READ,
    SERVER_INFO_KEY,
)

if TYPE_CHECKING:
    from ..server.engine import Exchange
    from ..server.eras import Method

log = logging.getLogger("mcpline.bridge")

ProgressCallback = Callable[[float, "float | None", "str | None"], None]

_background: set[asyncio.Future[Any]] = set()


def incident(what: str, detail: object) -> str:
    """``what`` went wrong with the bridged server: log ``detail`` (its exit status, command,
    stderr tail: local facts) on the bridge's own log under a new random incident id, and
    return the public text, which names only ``what`` and the id.

    Every message the bridge builds from a local failure goes through here before it can
    reach a client, who may be remote (``bridge --http``) and must not read the child's
    stderr (a secret in an error message, an environment dump) or its command line."""
    ident = secrets.token_hex(4)
    log.warning("incident %s: %s: %s", ident, what, detail)
    return f"{what} (incident {ident}: the details are in the bridge's log)"


def upstream_error(what: str, exc: BaseException) -> InternalError:
    """The -32603 a client gets for ``what`` failing locally with ``exc`` (see `incident`)."""
    return InternalError(f"Internal error: {incident(what, exc)}")


def spawn(work: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
    """Run ``work`` in the background, kept referenced until it ends (the loop itself only
    keeps weak references to tasks); its failure is logged, not lost."""
    task = asyncio.ensure_future(work)
    _background.add(task)
    task.add_done_callback(_ended)
    return task


def _ended(task: asyncio.Future[Any]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("a background task of the bridge failed", exc_info=task.exception())


@dataclass
class StaticHost:
    """The `mcpline.server.eras.EraHost` of the bridge's contexts: who the bridge says it is
    (the bridged server's identity once known) and nothing else to run."""

    info: dict[str, Any] = field(default_factory=lambda: {"name": "mcpline-bridge"})
    instructions: str | None = None
    lifespan: Any = None
    caps: dict[str, Any] = field(default_factory=dict)

    def method(self, name: str) -> Method | None:
        return None

    def offers(self, capability: str) -> bool:
        return capability in self.caps

    def capabilities(self) -> dict[str, Any]:
        return dict(self.caps)

    async def wait_ready(self) -> None:
        return None


class Holder:
    """A request that holds an upstream alone: its exchange and what it asked for."""

    __slots__ = ("exchange", "meta")

    def __init__(self, exchange: Exchange, meta: RequestMeta | None) -> None:
        self.exchange = exchange
        self.meta = meta

    def log(self, params: Any) -> bool:
        """Relay a ``notifications/message`` of the upstream if this request asked for it."""
        level = params.get("level") if isinstance(params, dict) else None
        meta = self.meta
        if meta is None or not isinstance(level, str) or level not in LOG_LEVEL_RANK:
            return False
        if not meta.wants_log(level):
            return False
        return self.exchange.send(notification(MESSAGE, params))


def take_progress_token(params: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """``params`` without ``_meta.progressToken`` (the upstream gets a token of the bridge's
    own) and the client's token (None without one)."""
    meta = params.get("_meta")
    if type(meta) is not dict or PROGRESS_TOKEN_KEY not in meta:
        return params, None
    rest = {k: v for k, v in meta.items() if k != PROGRESS_TOKEN_KEY}
    out = dict(params)
    out["_meta"] = rest
    return out, meta[PROGRESS_TOKEN_KEY]


def progress_relay(exchange: Exchange, token: Any) -> ProgressCallback | None:
    """A callback that sends the upstream's progress on ``exchange`` under the client's own
    ``token`` (None when the client asked for no progress)."""
    if token is None:
        return None

    def relay(progress: float, total: float | None, message: str | None) -> None:
        params: dict[str, Any] = {PROGRESS_TOKEN_KEY: token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        exchange.send(notification(PROGRESS, params), Kind.ADVISORY)

    return relay


def request_params(params: Any) -> dict[str, Any]:
    """A request's params as a dict (absent or null params are ``{}``)."""
    return params if type(params) is dict else {}


def legacy_params(params: dict[str, Any]) -> dict[str, Any]:
    """A modern request's params for a legacy server: no modern ``_meta`` keys, no
    ``inputResponses``/``requestState`` (the bridge answers the server's requests itself)."""
    out = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
    meta = out.get("_meta")
    if type(meta) is dict:
        kept = {
            k: v for k, v in meta.items() if not k.startswith(META_PREFIX) and k != "progressToken"
        }
        if kept:
            out["_meta"] = kept
        else:
            del out["_meta"]
    elif "_meta" in out:
        del out["_meta"]
    return out


def modern_result(
    method: str,
    result: dict[str, Any],
    server_info: dict[str, Any] | None,
    *,
    ttl_ms: int = 0,
    cache_scope: str = "private",
) -> dict[str, Any]:
    """A legacy server's result as a 2026-07-28 one: ``resultType``, the caching hints of
    cacheable results (no caching by default: the legacy server said nothing about it) and the
    server's identity in ``_meta``."""
    out = dict(result)
    out.setdefault("resultType", "complete")
    if method in CACHEABLE_METHODS and out["resultType"] == "complete":
        out.setdefault("ttlMs", ttl_ms)
        out.setdefault("cacheScope", cache_scope)
    if server_info:
        meta = out.get("_meta")
        if type(meta) is not dict:
            out["_meta"] = {SERVER_INFO_KEY: server_info}
        elif SERVER_INFO_KEY not in meta:
            out["_meta"] = {**meta, SERVER_INFO_KEY: server_info}
    return out


def modern_error(exc: JsonRpcError, method: str, params: dict[str, Any]) -> JsonRpcError:
    """A legacy server's error as a 2026-07-28 one: a resource not found (-32002, or a -32602
    saying "not found", as some legacy servers answer) is -32602 with ``data.uri``."""
    if method != RESOURCES_READ:
        return exc
    missing = exc.code == LEGACY_RESOURCE_NOT_FOUND or (
        exc.code == INVALID_PARAMS and "not found" in exc.message.lower()
    )
    if not missing:
        return exc
    data = exc.data if isinstance(exc.data, dict) else {}
    return JsonRpcError(INVALID_PARAMS, exc.message, {"uri": params.get("uri"), **data})


def list_flags(caps: dict[str, Any]) -> dict[str, Any]:
    """The ``subscriptions/listen`` flags of the lists a server's capabilities say change."""
    return {
        flag: True
        for kind, (flag, _method) in LIST_CHANGED.items()
        if isinstance(caps.get(kind), dict) and caps[kind].get("listChanged")
    }


LEGACY_CAPABILITY_KEYS = ("experimental", "logging", "completions", "prompts", "resources", "tools")


def modern_capabilities(legacy: dict[str, Any]) -> dict[str, Any]:
    """A legacy ``ServerCapabilities`` as the bridge serves it to modern clients (list changes
    and resource updates reach them through ``subscriptions/listen``)."""
    caps: dict[str, Any] = {}
    for key in LEGACY_CAPABILITY_KEYS:
        value = legacy.get(key)
        if isinstance(value, dict):
            caps[key] = dict(value)
    return caps


__all__ = [
    "incident",
    "upstream_error",
    "Holder",
    "LEGACY_CAPABILITY_KEYS",
    "ProgressCallback",
    "StaticHost",
    "legacy_params",
    "list_flags",
    "modern_capabilities",
    "modern_error",
    "modern_result",
    "progress_relay",
    "request_params",
    "spawn",
    "take_progress_token",
]
