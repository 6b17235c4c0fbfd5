"""The link of a `mcpline.client.Client` to its server (`Link`: one session and channel) and
`LinkKeeper`, which a `Client` holds to keep it: opening it and learning the era, opening it
again after a loss (with backoff), handing on what the session receives, and sending a
request on it (again on a new link when it was lost and may be resent)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING, Any

from .._version import version
from ..errors import (
    ClientClosed,
    ClientError,
    ConnectionLost,
    NothingListening,
    ProtocolError,
    ServerError,
)
from ..protocol.meta import modern_meta
from ..spec import (
    INITIALIZE,
    MESSAGE,
    MRTR_METHODS,
    PYTHON_LOG_LEVEL,
    SET_LEVEL,
    TASKS_EXTENSION,
)
from . import era as era_mod
from .era import LEGACY, MODERN, FallBack, ServerDescription
from .mrtr import InputHandlers, result_type, run_rounds
from .options import ClientOptions
from .session import CallbackTasks, Channel, ProgressCallback, Session, header_channel
from .transports import Transport

if TYPE_CHECKING:
    from ._listener import Listener

log = logging.getLogger("mcpline.client")

CANCELLED_START_GRACE = 0.25
"""Seconds a server whose start was cancelled (its caller gave up) is given to stop: half
after the end of its input, half after SIGTERM, then SIGKILL."""


@dataclass
class Link:
    session: Session
    channel: Channel
    description: ServerDescription
    opened_at: float = 0.0
    meta: dict[str, Any] | None = None
    """The ``_meta`` of this connection's modern requests (the same for each of them)."""

    @property
    def alive(self) -> bool:
        return not self.session.closed


class LinkKeeper:
    """The link of one `Client` to its server, kept open: ``transport`` reaches the server,
    ``options`` are the client's, ``handlers`` answer the server's requests for input,
    ``client_info`` is the ``Implementation`` sent (None: mcpline's own)."""

    def __init__(
        self,
        transport: Transport,
        options: ClientOptions,
        handlers: InputHandlers,
        client_info: dict[str, Any] | None,
    ) -> None:
        self.transport = transport
        self.options = options
        self.handlers = handlers
        """What answers the server's requests for input (elicitation, sampling, roots)."""
        self.link: Link | None = None
        """The open link, if any (it may have died since: see `Link.alive`)."""
        self.opening: Channel | None = None
        """The channel whose handshake is under way."""
        self.description: ServerDescription | None = None
        """What the last handshake learned of the server."""
        self.closed = False
        """Whether the client was closed: no link opens any more."""
        self.restarts = 0
        """How many times the server was restarted (or reconnected) so far."""
        self.tool_headers: dict[str, Any] = {}
        """Each listed tool's ``x-mcp-header`` parameters (an HTTP channel mirrors them)."""
        self.listeners: set[Listener] = set()
        """The client's listens, told of a legacy server's notifications."""
        self.callbacks = CallbackTasks()
        self._info = client_info
        self._ids = count(1)
        self._start_lock: asyncio.Lock | None = None
        self._failures = 0
        self._last_loss = ""
        self._probe_deaths = 0

    def _lock(self) -> asyncio.Lock:
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        return self._start_lock

    async def ensure(self) -> Link:
        """The open link, opened (again) if need be."""
        link = self.link
        if link is not None and link.alive:
            return link
        async with self._lock():
            while True:
                if self.closed:
                    raise ClientClosed("the client is closed")
                link = self.link
                if link is not None and link.alive:
                    return link
                if link is not None:
                    self.link = None
                    if (
                        asyncio.get_running_loop().time() - link.opened_at
                        >= self.options.stable_after
                    ):
                        self._failures = 0  # it ran fine for a while: a new series of restarts
                    reason = link.session.close_reason
                    self._last_loss = str(reason) if reason else "connection lost"
                    await link.channel.aclose()
                    await self._backoff()
                try:
                    self.link = await self._open_link()
                except ClientError as exc:
                    if self.closed:
                        raise ClientClosed("the client is closed") from exc
                    if not (isinstance(exc, ConnectionLost) and exc.retriable):
                        raise
                    if isinstance(exc, NothingListening) and self.description is None:
                        raise ConnectionLost(str(exc), retriable=False) from None
                    self._last_loss = str(exc)
                    await self._backoff()
                    continue
                if self.closed:
                    # aclose() ran while this link was opening and could not see it.
                    link, self.link = self.link, None
                    await link.channel.aclose()
                    raise ClientClosed("the client is closed")
                return self.link

    async def aclose(self, within: float | None = None) -> int | None:
        """Close the listens, then the link (a start under way too); the exit status of a
        server process, when there was one."""
        if self.closed:
            return None
        self.closed = True
        for listener in list(self.listeners):
            await listener.aclose()
        link, self.link = self.link, None
        opening = self.opening
        if opening is not None:  # a start in progress: stop it (its request sees ClientClosed)
            await opening.aclose(within)
        if link is None:
            return None
        await link.channel.aclose(within)
        return getattr(link.channel, "returncode", None)

    async def _backoff(self) -> None:
        o = self.options
        self._failures += 1
        if self._failures > o.max_restarts:
            self._failures = 0  # the next request starts a fresh series of attempts
            raise ConnectionLost(
                f"gave up after {o.max_restarts} restarts; last failure: {self._last_loss}",
                retriable=False,
            )
        self.restarts += 1
        delay = min(o.restart_backoff * 2 ** (self._failures - 1), o.max_backoff)
        log.warning("server unavailable (%s); retrying in %.2fs", self._last_loss, delay)
        await asyncio.sleep(delay)

    async def _open_link(self) -> Link:
        o = self.options
        session = Session(
            self._on_notification,
            self.handlers.answer,
            ids=self._ids,
            max_line_bytes=o.max_line_bytes,
            trace=o.trace,
            label=self.transport.label,
            max_server_requests=o.max_server_requests,
            max_outbound_bytes=o.max_outbound_bytes,
        )
        channel = await self.transport.open(session)
        if (headed := header_channel(channel)) is not None:
            headed.tool_headers = self.tool_headers
        self.opening = channel
        try:
            description = await self._handshake(session)
        except asyncio.CancelledError:
            await channel.aclose(CANCELLED_START_GRACE)
            raise
        except BaseException:
            await channel.aclose()
            raise
        finally:
            self.opening = None
        return Link(session, channel, description, asyncio.get_running_loop().time())

    async def _handshake(self, session: Session) -> ServerDescription:
        caps = self.handlers.capabilities()
        cached = self.description
        want = cached.era if cached is not None else self.options.era
        if want == MODERN and cached is not None:
            desc = cached
        elif want == LEGACY or (want == "auto" and self._probe_deaths >= 2):
            version = cached.protocol_version if cached is not None else None
            desc = await self._initialize(session, caps, version, reprobe=want == "auto")
        else:
            try:
                desc = await era_mod.probe(
                    session,
                    caps=self._modern_caps(),
                    info=self.client_info(),
                    timeout=self.options.probe_timeout,
                )
            except FallBack as fb:
                if want == MODERN:
                    raise ProtocolError(
                        f"the server did not answer as a modern server: {fb}"
                    ) from None
                if fb.died:
                    # Restart: probe once more, then (a legacy server that exits on
                    # unknown traffic) go straight to initialize.
                    self._probe_deaths += 1
                    raise ConnectionLost(str(fb)) from None
                log.info("falling back to the legacy handshake: %s", fb)
                desc = await self._initialize(session, caps, fb.version, reprobe=fb.version is None)
        session.accept_requests = desc.era == LEGACY
        level = self.options.log_level
        if desc.era == LEGACY and level is not None and "logging" in desc.capabilities:
            await session.request(SET_LEVEL, {"level": level}, timeout=self.options.timeout)
        self.description = desc
        return desc

    async def _initialize(
        self, session: Session, caps: dict[str, Any], version: str | None, *, reprobe: bool
    ) -> ServerDescription:
        """The legacy handshake; if the answer shows a modern server after all (a slow
        starter that missed the probe), probe again with the full request timeout."""
        session.accept_requests = True  # a legacy server may ping before initialize is answered
        try:
            return await era_mod.initialize(
                session,
                caps=caps,
                info=self.client_info(),
                timeout=self.options.timeout,
                version=version,
            )
        except ServerError as exc:
            if not (reprobe and era_mod.points_to_modern(exc)):
                raise
            log.info("%s refused in a modern way (%s); probing again", INITIALIZE, exc)
            try:
                return await era_mod.probe(
                    session,
                    caps=self._modern_caps(),
                    info=self.client_info(),
                    timeout=self.options.timeout,
                )
            except FallBack as fb:
                raise ProtocolError(f"the server answers neither era: {fb}") from None

    # --- what the session hands on --------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        if method == MESSAGE and isinstance(params, dict):
            if self.options.on_log is not None:
                res = self.options.on_log(params)
                if asyncio.iscoroutine(res):
                    self.callbacks.run(res, "on_log")
            else:
                level = PYTHON_LOG_LEVEL.get(str(params.get("level")), logging.INFO)
                logging.getLogger("mcpline.client.server_log").log(
                    level, "%s", params.get("data"), extra={"logger_name": params.get("logger")}
                )
            return
        if self.description is not None and self.description.era == LEGACY:
            for listener in list(self.listeners):
                listener.legacy_notification(method, params)
        if self.options.on_notification is not None:
            self.options.on_notification(method, params)
        else:
            log.debug("notification %s from the server", method)

    def client_info(self) -> dict[str, Any]:
        """``client_info``, by default mcpline's name and installed version: read when the
        first request needs it, once the server is starting (loading the package metadata
        takes longer than importing the client)."""
        if self._info is None:
            self._info = {"name": "mcpline", "version": version()}
        return self._info

    def _modern_caps(self) -> dict[str, Any]:
        """The client capabilities of a modern request: the input callbacks' and, unless
        ``tasks=False``, the tasks extension."""
        caps = self.handlers.capabilities()
        if self.options.tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    def params(self, link: Link, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` as sent on ``link``: with the ``_meta`` of a modern request."""
        if link.description.era != MODERN:
            return params
        if link.meta is None:
            link.meta = modern_meta(
                link.description.protocol_version,
                self._modern_caps(),
                self.client_info(),
                log_level=self.options.log_level,
            )
        p = dict(params)
        meta = dict(p.get("_meta") or {})
        meta.update(link.meta)
        p["_meta"] = meta
        return p

    # --- requests on the link ------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        t: float | None,
        mt: float | None,
        on_progress: ProgressCallback | None,
        idempotent: bool,
    ) -> dict[str, Any]:
        """One request and its input rounds (sent again on a new link when it was lost and
        is ``idempotent``); a task handle is returned as it came."""
        resent = 0
        while True:
            link = await self.ensure()
            try:
                result = await self._once(link, method, params, t, mt, on_progress)
            except ConnectionLost as exc:
                if not (idempotent and exc.retriable) or self.closed:
                    raise
                resent += 1
                if resent > self.options.max_restarts:  # whatever the restart series says
                    raise ConnectionLost(
                        f"{method} was lost {resent} times with the server; gave up ({exc})",
                        retriable=False,
                    ) from exc
                log.info("%s lost with the server (%s); sending it again", method, exc)
                continue
            self._failures = 0
            return result

    async def _once(
        self,
        link: Link,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        max_timeout: float | None,
        on_progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        sent = self.params(link, params)
        if method in MRTR_METHODS:
            return await run_rounds(
                link.session,
                method,
                sent,
                self.handlers,
                self.options.max_rounds,
                timeout=timeout,
                max_timeout=max_timeout,
                on_progress=on_progress,
            )
        result: dict[str, Any] = await link.session.request(
            method, sent, timeout=timeout, max_timeout=max_timeout, on_progress=on_progress
        )
        result_type(result, method)
        return result


__all__ = ["Link", "LinkKeeper"]
