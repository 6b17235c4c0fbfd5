"""Which protocol era a server speaks: the stdio binding's ``server/discover`` probe and the
legacy ``initialize`` handshake (spec: basic/transports/stdio#backward-compatibility)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    ConnectionLost,
    NothingListening,
    ProtocolError,
    RequestTimeout,
    ServerError,
    VersionMismatch,
)
from ..protocol.meta import modern_meta
from ..spec import (
    DISCOVER,
    INITIALIZE,
    INITIALIZED,
    INVALID_PARAMS,
    LEGACY_URL_ELICITATION_FROM,
    LEGACY_VERSIONS,
    MODERN_ERROR_CODES,
    MODERN_VERSIONS,
    SERVER_INFO_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .session import Session, header_channel

log = logging.getLogger("mcpline.client")

MODERN = "modern"
LEGACY = "legacy"


@dataclass
class ServerDescription:
    """What the client learned about a server."""

    era: str
    protocol_version: str
    server_info: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)
    supported_versions: list[str] = field(default_factory=list)
    instructions: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "era": self.era,
            "protocolVersion": self.protocol_version,
            "supportedVersions": self.supported_versions,
            "serverInfo": self.server_info,
            "capabilities": self.capabilities,
        }
        if self.instructions:
            out["instructions"] = self.instructions
        return out


class FallBack(Exception):
    """The probe says legacy; ``version`` is a mutual legacy version when one is known."""

    def __init__(self, why: str, version: str | None = None, *, died: bool = False) -> None:
        super().__init__(why)
        self.version = version
        self.died = died


def _pick(ours: Sequence[str], theirs: Any) -> str | None:
    if not isinstance(theirs, list):
        return None
    for v in ours:  # ours is newest first
        if v in theirs:
            return v
    return None


def describe_discover(result: dict[str, Any], version: str) -> ServerDescription:
    meta = result.get("_meta")
    info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
    instructions = result.get("instructions")
    return ServerDescription(
        era=MODERN,
        protocol_version=version,
        server_info=info if isinstance(info, dict) else {},
        capabilities=result.get("capabilities") or {},
        supported_versions=[v for v in result.get("supportedVersions", []) if isinstance(v, str)],
        instructions=instructions if isinstance(instructions, str) else None,
        raw=result,
    )


def is_discover_result(result: Any) -> bool:
    return (
        isinstance(result, dict)
        and isinstance(result.get("supportedVersions"), list)
        and isinstance(result.get("capabilities"), dict)
    )


async def probe(
    session: Session,
    *,
    caps: dict[str, Any],
    info: dict[str, Any],
    timeout: float,
    modern_versions: Sequence[str] = MODERN_VERSIONS,
    legacy_versions: Sequence[str] = LEGACY_VERSIONS,
) -> ServerDescription:
    """Send ``server/discover``; return the modern description or raise `FallBack`.

    A -32022 answer is retried with a version from ``data.supported`` (at most once per
    version); when only a legacy version is mutual, `FallBack` carries it; when none is,
    `VersionMismatch` (and no ``initialize`` is ever sent).
    """
    version = modern_versions[0]
    tried: dict[str, int] = {}
    while True:
        tried[version] = tried.get(version, 0) + 1
        try:
            result = await session.request(
                DISCOVER,
                {"_meta": modern_meta(version, caps, info)},
                timeout=timeout,
                max_timeout=timeout,
            )
        except RequestTimeout:
            raise FallBack(f"no answer to {DISCOVER} within {timeout:g}s") from None
        except ConnectionLost as exc:
            if not exc.retriable or isinstance(exc, NothingListening):
                raise  # e.g. it failed at start-up, or is not running: no era is to blame
            raise FallBack(f"the server went away during the probe ({exc})", died=True) from None
        except ServerError as exc:
            if exc.code not in MODERN_ERROR_CODES and not _names_meta(exc):
                raise FallBack(
                    f"{DISCOVER} answered with error {exc.code}: {exc.message}"
                ) from None
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                # A modern server that refuses discover for another modern reason: stay modern.
                log.info("%s refused with %s; assuming the modern era", DISCOVER, exc.code)
                return ServerDescription(era=MODERN, protocol_version=version)
            supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
            theirs = (
                [v for v in supported if isinstance(v, str)] if isinstance(supported, list) else []
            )
            nxt = _pick(modern_versions, theirs)
            if nxt is not None and tried.get(nxt, 0) < 2:
                version = nxt
                continue
            legacy = _pick(legacy_versions, theirs)
            if legacy is not None:
                raise FallBack(f"the only mutual version is the legacy {legacy}", legacy) from None
            raise VersionMismatch([*modern_versions, *legacy_versions], theirs) from None
        if not is_discover_result(result):
            raise FallBack(
                f"{DISCOVER} returned something that is not a DiscoverResult: {result!r:.200}"
            )
        chosen = _pick(modern_versions, result["supportedVersions"])
        if chosen is None:
            legacy = _pick(legacy_versions, result["supportedVersions"])
            if legacy is not None:
                raise FallBack(f"the only mutual version is the legacy {legacy}", legacy)
            raise VersionMismatch([*modern_versions, *legacy_versions], result["supportedVersions"])
        if chosen != version:
            version = chosen
            # The result came under a version we will not use; ask again under the chosen one.
            continue
        return describe_discover(result, version)


def _names_meta(exc: ServerError) -> bool:
    """-32602 about ``_meta``: a modern server that could not use this request's ``_meta``."""
    return exc.code == INVALID_PARAMS and "_meta" in exc.message


def points_to_modern(exc: ServerError, modern_versions: Sequence[str] = MODERN_VERSIONS) -> bool:
    """An error to ``initialize`` that says the server is modern after all (a modern error
    code, or ``data.supported`` naming a modern version we speak)."""
    if exc.code in MODERN_ERROR_CODES:
        return True
    supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
    return _pick(modern_versions, supported) is not None


async def initialize(
    session: Session,
    *,
    caps: dict[str, Any],
    info: dict[str, Any],
    timeout: float,
    version: str | None = None,
    legacy_versions: Sequence[str] = LEGACY_VERSIONS,
) -> ServerDescription:
    """The 2025-11-25 handshake; accepts a server that negotiates down to a version we know."""
    offered = version or legacy_versions[0]
    legacy_caps = dict(caps)
    if "roots" in legacy_caps:
        legacy_caps["roots"] = {"listChanged": False}
    if "elicitation" in legacy_caps and offered != LEGACY_URL_ELICITATION_FROM:
        legacy_caps["elicitation"] = {}
    result = await session.request(
        INITIALIZE,
        {"protocolVersion": offered, "capabilities": legacy_caps, "clientInfo": info},
        timeout=timeout,
        max_timeout=timeout,
        cancellable=False,  # the binding forbids cancelling initialize
    )
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        raise ProtocolError(
            f"{INITIALIZE} returned something that is not an InitializeResult: {result!r:.200}"
        )
    agreed = result["protocolVersion"]
    if agreed not in legacy_versions:
        raise VersionMismatch(list(legacy_versions), [agreed])
    if (headed := header_channel(session.channel)) is not None:
        headed.agreed_version = agreed
    await session.notify(INITIALIZED)
    info_out = result.get("serverInfo")
    caps_out = result.get("capabilities")
    instructions = result.get("instructions")
    return ServerDescription(
        era=LEGACY,
        protocol_version=agreed,
        server_info=info_out if isinstance(info_out, dict) else {},
        capabilities=caps_out if isinstance(caps_out, dict) else {},
        supported_versions=[agreed],
        instructions=instructions if isinstance(instructions, str) else None,
        raw=result,
    )


__all__ = [
    "LEGACY",
    "MODERN",
    "FallBack",
    "ServerDescription",
    "describe_discover",
    "initialize",
    "is_discover_result",
    "points_to_modern",
    "probe",
]
