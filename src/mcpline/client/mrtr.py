"""Host input handlers (elicitation, sampling, roots) and the multi round-trip loop.

The same handlers answer a modern server's ``input_required`` results and a legacy
server's ``elicitation/create``, ``sampling/createMessage`` and ``roots/list`` requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputDeclined, JsonRpcError, ProtocolError
from ..spec import (
    ELICIT,
    METHOD_NOT_FOUND,
    MRTR_METHODS,
    PING,
    RESULT_TASK,
    ROOTS,
    SAMPLE,
    TASK_AUGMENTABLE_METHODS,
    USER_REJECTED,
)

InputHandler = Callable[[dict[str, Any]], "Awaitable[dict[str, Any]] | dict[str, Any]"]

if TYPE_CHECKING:
    from .session import ProgressCallback, Session

RESULT_TYPES = ("complete", "input_required", RESULT_TASK)


async def maybe_await(value: Any) -> Any:
    if isinstance(value, Awaitable):
        return await value
    return value


def result_type(result: Any, method: str) -> str:
    """``"complete"``, ``"input_required"`` or (tools/call, tasks extension) ``"task"``;
    absent means complete; anything else is an error."""
    if not isinstance(result, dict):
        raise ProtocolError(f"{method}: the result is not a JSON object: {result!r:.200}")
    kind = result.get("resultType", "complete")
    if kind not in RESULT_TYPES:
        raise ProtocolError(f"{method}: unrecognised resultType {kind!r}; the result was not used")
    if kind == "input_required" and method not in MRTR_METHODS:
        raise ProtocolError(
            f"{method}: the server answered input_required, which {method} may not do"
        )
    if kind == RESULT_TASK and method not in TASK_AUGMENTABLE_METHODS:
        raise ProtocolError(f"{method}: the server answered with a task, which {method} may not")
    return kind  # type: ignore[no-any-return]


@dataclass
class InputHandlers:
    """Host callbacks; each takes the request's params and returns its result object.

    ``elicitation_modes`` says which elicitation modes the elicit handler supports.
    """

    elicit: InputHandler | None = None
    sample: InputHandler | None = None
    roots: InputHandler | None = None
    elicitation_modes: Sequence[str] = ("form",)

    def capabilities(self) -> dict[str, Any]:
        """ClientCapabilities derived from what the host registered."""
        caps: dict[str, Any] = {}
        if self.elicit is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.sample is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {}
        return caps

    def _handler(self, method: str) -> InputHandler | None:
        return {
            ELICIT: self.elicit,
            SAMPLE: self.sample,
            ROOTS: self.roots,
        }.get(method)

    async def answer(self, method: str, params: Any) -> dict[str, Any]:
        """Serve one server-initiated request (legacy era); JSON-RPC errors for what we lack."""
        if method == PING:
            return {}
        handler = self._handler(method)
        if handler is None:
            raise JsonRpcError(
                METHOD_NOT_FOUND, f"Method not found: this client does not handle {method}"
            )
        try:
            return _strip(await maybe_await(handler(params if isinstance(params, dict) else {})))
        except InputDeclined as exc:
            raise JsonRpcError(USER_REJECTED, f"the user declined: {exc}") from None

    async def fulfil(self, requests: Any) -> dict[str, Any]:
        """Answers for every entry of ``inputRequests`` (all of them, or an error)."""
        if not isinstance(requests, dict):
            raise ProtocolError(f"inputRequests must be an object, got {requests!r:.200}")
        keys = list(requests)
        jobs = []
        for key in keys:
            req = requests[key]
            if not isinstance(req, dict) or not isinstance(req.get("method"), str):
                raise ProtocolError(f"inputRequests[{key!r}] is not an input request: {req!r:.200}")
            handler = self._handler(req["method"])
            if handler is None:
                raise InputDeclined(
                    f"the server asked for {req['method']} (input {key!r}), "
                    "which this client does not provide"
                )
            params = req.get("params")
            jobs.append(maybe_await(handler(params if isinstance(params, dict) else {})))
        results = await asyncio.gather(*jobs)
        return {key: _strip(res) for key, res in zip(keys, results, strict=False)}


def _strip(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise TypeError(f"an input handler must return a dict, got {type(result).__name__}")
    # Input responses are not Results: no resultType (spec: schema#inputresponses).
    return {k: v for k, v in result.items() if k != "resultType"}


async def run_rounds(
    session: Session,
    method: str,
    params: dict[str, Any],
    handlers: InputHandlers,
    max_rounds: int,
    *,
    timeout: float | None = None,
    max_timeout: float | None = None,
    on_progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Send ``method`` on ``session`` (``params`` as sent, ``_meta`` included), and while the
    server answers ``input_required`` obtain the inputs and retry (a task handle ends the
    rounds like a result). ``timeout``, ``max_timeout`` and ``on_progress`` are those of
    each request (`Session.request`).

    Each retry is a new request (with a new id) carrying the original params, the
    ``inputResponses`` and the ``requestState`` value exactly as received.
    """
    current = params
    rounds = 0
    while True:
        result: dict[str, Any] = await session.request(
            method, current, timeout=timeout, max_timeout=max_timeout, on_progress=on_progress
        )
        if result_type(result, method) != "input_required":
            return result
        if rounds >= max_rounds:
            raise ProtocolError(
                f"{method}: the server still wanted input after {max_rounds} rounds; gave up"
            )
        rounds += 1
        if "inputRequests" not in result and "requestState" not in result:
            raise ProtocolError(f"{method}: input_required without inputRequests or requestState")
        current = dict(params)
        if "inputRequests" in result:
            current["inputResponses"] = await handlers.fulfil(result["inputRequests"])
        if "requestState" in result:
            current["requestState"] = result["requestState"]


__all__ = [
    "RESULT_TYPES",
    "InputHandler",
    "InputHandlers",
    "maybe_await",
    "result_type",
    "run_rounds",
]
