"""Legacy (``initialize``) clients of a 2026-07-28 server: the bridge translates.

The bridge's legacy era is mcpline's own (`mcpline.server.legacy.LegacyEra`): it answers
``initialize`` (capabilities, instructions and serverInfo from the upstream's
``server/discover``), ``ping``, ``logging/setLevel`` and ``resources/subscribe``, keeps the
session, reshapes results for the legacy schema and turns an ``InputRequiredResult`` into
real ``elicitation/create``, ``sampling/createMessage`` and ``roots/list`` requests to the
client, re-running the request with the answers. What it serves comes from `UpstreamHost`,
whose methods forward each request statelessly: modern ``_meta`` made from the session (the
client's capabilities and info, the session's log level), the client's progress token kept
on its side, ``inputResponses`` and the upstream's ``requestState`` on a retry.

List changes and resource updates reach legacy sessions through one ``subscriptions/listen``
the bridge keeps open on the upstream (`RemoteWatch`) while a legacy session exists; the
resources it names are those the sessions subscribed to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._version import version as mcpline_version
from ..errors import ClientError, ConnectionLost, InternalError, JsonRpcError
from ..protocol.meta import modern_meta
from ..server.context import Context
from ..server.eras import Handler, Method
from ..server.legacy import LegacyEra
from ..server.mrtr import InputRequest, InputRequired
from ..spec import (
    ACKNOWLEDGED,
    IDEMPOTENT_METHODS,
    INITIALIZE,
    INVALID_PARAMS,
    LEGACY_RESOURCE_NOT_FOUND,
    LISTEN,
    MRTR_METHODS,
    PROGRESS_TOKEN_KEY,
    RESOURCE_UPDATED,
    RESOURCES_READ,
    TOOLS_LIST,
)
from .common import list_flags, upstream_error
from .forward import RESEND, lost_error
from .pool import Pool
from .translate import LIST_NOTIFICATIONS, METHOD_CAPABILITY

if TYPE_CHECKING:
    from ..server.engine import Engine, Exchange, Routed

log = logging.getLogger("mcpline.bridge")


def bridge_info() -> dict[str, Any]:
    return {"name": "mcpline-bridge", "version": mcpline_version()}


class UpstreamHost:
    """The `mcpline.server.eras.EraHost` of the legacy era: a modern upstream's identity and
    capabilities, and methods that forward to it."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.lifespan: Any = None
        self._methods = {
            name: Method(self._forwarder(name), cap, waits_for_lifespan=False)
            for name, cap in METHOD_CAPABILITY.items()
        }

    @property
    def info(self) -> dict[str, Any]:
        first = self.pool.first
        found = (
            None if first is None or first.description is None else first.description.server_info
        )
        return dict(found) if found else bridge_info()

    @property
    def instructions(self) -> str | None:
        first = self.pool.first
        return (
            None if first is None or first.description is None else first.description.instructions
        )

    def method(self, name: str) -> Method | None:
        return self._methods.get(name)

    def capabilities(self) -> dict[str, Any]:
        first = self.pool.first
        return (
            {}
            if first is None or first.description is None
            else dict(first.description.capabilities)
        )

    def offers(self, capability: str) -> bool:
        return capability in self.capabilities()

    async def wait_ready(self) -> None:
        return None

    def version(self) -> str:
        first = self.pool.first
        assert first is not None and first.description is not None
        return first.description.protocol_version

    def _forwarder(self, name: str) -> Handler:
        async def forward(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
            return await self.forward(name, ctx, params)

        return forward

    async def forward(self, method: str, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """One request of a legacy session, sent as a stateless modern one."""
        meta = ctx.meta
        assert meta is not None
        body = dict(params)
        extra = body.get("_meta")
        kept = {k: v for k, v in (extra if isinstance(extra, dict) else {}).items()}
        kept.pop(PROGRESS_TOKEN_KEY, None)
        body["_meta"] = {
            **kept,
            **modern_meta(
                self.version(),
                dict(meta.client_capabilities),
                meta.client_info,
                log_level=meta.log_level,
            ),
        }
        if ctx.input_responses:
            body["inputResponses"] = ctx.input_responses
        state = ctx.state
        if isinstance(state, dict) and isinstance(state.get("s"), str):
            body["requestState"] = state["s"]

        def relay(progress: float, total: float | None, message: str | None) -> None:
            ctx.report_progress(progress, total, message)

        resent = 0
        while True:
            up = await self.pool.acquire()
            try:
                result = await up.request(
                    method, body, on_progress=relay if meta.progress_token is not None else None
                )
            except JsonRpcError as exc:
                raise legacy_error(exc, method) from None
            except ConnectionLost as exc:
                if method in IDEMPOTENT_METHODS and resent < RESEND and not ctx.cancelled:
                    resent += 1
                    continue
                raise lost_error(method, exc, resent) from None
            except ClientError as exc:
                raise upstream_error(f"{method} could not be forwarded", exc) from None
            finally:
                self.pool.release(up)
            break
        if method == TOOLS_LIST:
            up.remember_tools(result)
        if result.get("resultType") == "input_required" and method in MRTR_METHODS:
            raise input_required(result)
        return result


def legacy_error(exc: JsonRpcError, method: str) -> JsonRpcError:
    """A modern error as a legacy session expects it: a missing resource is -32002."""
    if (
        method == RESOURCES_READ
        and exc.code == INVALID_PARAMS
        and isinstance(exc.data, dict)
        and "uri" in exc.data
    ):
        return JsonRpcError(LEGACY_RESOURCE_NOT_FOUND, exc.message, exc.data)
    return exc


def input_required(result: dict[str, Any]) -> InputRequired:
    """An ``InputRequiredResult`` as the `InputRequired` the legacy era answers by asking
    the client; the upstream's ``requestState`` rides in the state, unopened."""
    requests: dict[str, InputRequest] = {}
    raw = result.get("inputRequests")
    for key, item in (raw if isinstance(raw, dict) else {}).items():
        if not isinstance(item, dict):
            continue
        params = item.get("params")
        try:
            requests[str(key)] = InputRequest(
                str(item.get("method")), params if isinstance(params, dict) else {}
            )
        except ValueError:
            raise InternalError(
                f"Internal error: the server asked for input of an unknown kind "
                f"({item.get('method')!r})"
            ) from None
    token = result.get("requestState")
    return InputRequired(requests, {"s": token if isinstance(token, str) else None})


class RemoteWatch:
    """The listen that brings list changes and resource updates to legacy sessions."""

    def __init__(self, pool: Pool, backoff: tuple[float, float] = (0.2, 10.0)) -> None:
        self.pool = pool
        self.backoff = backoff
        self.engine: Engine | None = None
        self.uris: Counter[str] = Counter()
        self._task: asyncio.Task[None] | None = None
        self._again = asyncio.Event()

    def want(self) -> None:
        """Keep the listen open from now on."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    def subscription(self, ctx: Context, uri: str, subscribed: bool) -> None:
        """`LegacyEra.on_subscribe`: the URIs listened to follow the sessions'."""
        before = set(self.uris)
        if subscribed:
            self.uris[uri] += 1
        else:
            self.uris[uri] -= 1
            if self.uris[uri] <= 0:
                del self.uris[uri]
        if set(self.uris) != before:
            self._again.set()

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _filter(self, caps: dict[str, Any]) -> dict[str, Any]:
        wanted = list_flags(caps)
        resources = caps.get("resources")
        if self.uris and isinstance(resources, dict) and resources.get("subscribe"):
            wanted["resourceSubscriptions"] = sorted(self.uris)
        return wanted

    def _deliver(self, method: str, params: Any) -> None:
        engine = self.engine
        if engine is None or method == ACKNOWLEDGED:
            return
        kind = LIST_NOTIFICATIONS.get(method)
        if kind is not None:
            engine.list_changed(kind)
        elif method == RESOURCE_UPDATED and isinstance(params, dict):
            uri = params.get("uri")
            if isinstance(uri, str):
                engine.resource_updated(uri)

    async def _run(self) -> None:
        failures = 0
        while True:
            first = self.pool.first
            caps = (
                {} if first is None or first.description is None else first.description.capabilities
            )
            wanted = self._filter(caps)
            if not wanted:
                self._again.clear()
                await self._again.wait()
                continue
            assert first is not None and first.description is not None
            params = {
                "_meta": modern_meta(first.description.protocol_version, {}, bridge_info()),
                "notifications": wanted,
            }
            self._again.clear()
            try:
                up = await self.pool.acquire()
            except JsonRpcError:
                failures += 1
                await asyncio.sleep(self._delay(failures))
                continue
            listen = asyncio.ensure_future(
                up.request(LISTEN, params, on_notification=self._deliver)
            )
            again = asyncio.ensure_future(self._again.wait())
            try:
                await asyncio.wait({listen, again}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                again.cancel()
                if not listen.done():
                    listen.cancel()
                with contextlib.suppress(BaseException):
                    await listen
                self.pool.release(up)
            if listen.cancelled() or self._again.is_set():
                failures = 0
                continue
            failures += 1
            await asyncio.sleep(self._delay(failures))

    def _delay(self, failures: int) -> float:
        low, high = self.backoff
        return float(min(high, low * 2 ** (failures - 1)))


class LegacyOverModern(LegacyEra):
    """mcpline's legacy era over `UpstreamHost`, with `RemoteWatch` for its notifications."""

    def __init__(self, host: UpstreamHost, watch: RemoteWatch, **options: Any) -> None:
        super().__init__(host, **options)
        self.watch = watch
        self.on_subscribe: Callable[[Context, str, bool], Any] | None = watch.subscription

    def route(self, exchange: Exchange) -> Routed | None:
        routed = super().route(exchange)
        if routed is not None and exchange.request.method == INITIALIZE:
            self.watch.want()
        return routed


__all__ = [
    "LegacyOverModern",
    "RemoteWatch",
    "UpstreamHost",
    "bridge_info",
    "input_required",
    "legacy_error",
]
