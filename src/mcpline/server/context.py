"""What a handler knows about the request it is serving, and how it talks back.

The reporting methods (`Context.info`, `Context.log`, `Context.report_progress`, …) do their
work when called and return an awaitable that is already done, so ``await ctx.info(...)``
(FastMCP's spelling, in an ``async def`` tool) and ``ctx.info(...)`` (in a plain ``def``
tool, on a worker thread) both work and send the same message once.

`Context.elicit` and `Context.ask` rest on MRTR (see `mcpline.server.mrtr`): the first time a
question is asked the handler is stopped, the client is asked, and the handler runs again
from the top with the answer. Code before a question therefore runs again: ask first, keep
earlier work idempotent, or keep its result with `Context.remember`.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from ..jsonrpc import MISSING, notification
from ..protocol.capabilities import has_capability, require_capability
from ..protocol.meta import RequestMeta
from ..spec import ELICIT, LOG_LEVEL_RANK, MESSAGE, PROGRESS, PYTHON_LOG_LEVEL

if TYPE_CHECKING:
    from typing_extensions import TypeVar as TypeVarWithDefault

    from .auth.tokens import AccessToken
    from .engine import Exchange
    from .eras import EraHost
    from .mrtr import InputRequest

    LifespanT = TypeVarWithDefault("LifespanT", default=Any)
else:
    LifespanT = TypeVar("LifespanT")

T = TypeVar("T")

RERUN_KEY = "mcpline.rerun"
"""The key under which the framework keeps its own part of an MRTR state (answers to earlier
questions and `Context.remember` values) beside yours."""


def _finite(value: Any) -> bool:
    """A JSON number: int or float, not bool, not NaN or infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


class Ready(Awaitable[T]):
    """An awaitable that is already done: ``await`` gives `value` at once."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, T]:
        return self.value
        yield  # a generator that never suspends


DONE: Ready[None] = Ready(None)
"""What the reporting methods return: their work is done before ``await``."""


@dataclass(frozen=True)
class ElicitResult(Generic[T]):
    """The user's answer to `Context.elicit`. Awaitable (to itself), so both
    ``result = ctx.elicit(...)`` and ``result = await ctx.elicit(...)`` work."""

    action: Literal["accept", "decline", "cancel"]
    """What the user did."""
    data: T | None = None
    """The answer as the type asked for (``None`` unless `accepted`)."""
    content: dict[str, Any] = field(default_factory=dict)
    """The form's content as the client sent it."""

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (``action == "accept"``): only then is `data` set."""
        return self.action == "accept"

    def __await__(self) -> Generator[Any, None, ElicitResult[T]]:
        return self
        yield  # a generator that never suspends


class _Rerun:
    """What the framework carries from one round of a request to the next."""

    __slots__ = ("answers", "memo", "seen", "chain", "taken")

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any]] = {}
        """Answers from earlier rounds (each checked when it came), by input key."""
        self.memo: dict[str, Any] = {}
        """`Context.remember` values, by key."""
        self.seen: dict[str, int] = {}
        """This run's `Context.elicit` questions, for their keys (cleared at each run)."""
        self.chain = False
        """Whether the middleware chain ran for this request (the next state says so)."""
        self.taken = False
        """Whether the state was opened before the handler ran (`Context.take_state`)."""


def _as_json(value: Any) -> Any:
    """``value`` as it comes back from JSON (what a later round sees)."""
    from .signature.schema import json_copy

    return json_copy(value)


class Context(Generic[LifespanT]):
    """Per-request context: what the request is, and how the handler talks back.

    Annotate a parameter ``ctx: Context`` (or ``Context[MyState]`` to type `lifespan`). Every
    method is safe from a sync tool's worker thread; nothing is ever written for a request
    after its response or its cancellation.
    """

    __slots__ = (
        "request_id",
        "method",
        "meta",
        "_exchange",
        "_host",
        "_loop",
        "_loop_thread",
        "_last_progress",
        "input_responses",
        "_state",
        "_rerun",
        "asked",
        "legacy_version",
        "resource_uri",
    )

    def __init__(self, exchange: Exchange, meta: RequestMeta | None, host: EraHost) -> None:
        self.request_id = exchange.request.id
        self.method = exchange.request.method
        self.meta = meta
        self._exchange = exchange
        self._host = host
        peer = exchange.peer
        self._loop = peer.loop
        self._loop_thread = peer.loop_thread
        self._last_progress: float | None = None
        self.input_responses: dict[str, dict[str, Any]] = {}
        """MRTR: the client's answers on a retry (``inputResponses``), checked to be objects."""
        self._state: Any = None
        self._rerun: _Rerun | None = None
        self.asked: dict[str, str] = {}
        """MRTR: input key → method of the requests recorded in the sealed state."""
        self.legacy_version: str | None = None
        """The negotiated revision when this request belongs to a legacy (initialize) session."""
        self.resource_uri: str | None = None
        """In ``resources/read``: the URI the client asked for (``None`` elsewhere)."""

    # --- the request ------------------------------------------------------------------------

    @property
    def exchange(self) -> Exchange:
        """The engine's exchange this context serves: its request, peer and binding (what
        framework features such as listens and legacy sessions work with)."""
        return self._exchange

    @property
    def legacy(self) -> bool:
        """Whether this request belongs to a legacy (``initialize``) session."""
        return self.legacy_version is not None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The ``ClientCapabilities`` this request declared (``{}`` when it declared none);
        `has_capability` and `can_ask` read them for you."""
        return self.meta.client_capabilities if self.meta else {}

    @property
    def client_info(self) -> dict[str, Any] | None:
        """The client's ``Implementation`` object, ``None`` when it sent none (see
        `client_name` for a plain string)."""
        return self.meta.client_info if self.meta else None

    @property
    def client_name(self) -> str:
        """The client's name (``clientInfo.name``), ``""`` when it did not say."""
        info = self.client_info
        name = info.get("name") if info else None
        return name if isinstance(name, str) else ""

    @property
    def client_version(self) -> str:
        """The client's version (``clientInfo.version``), ``""`` when it did not say."""
        info = self.client_info
        version = info.get("version") if info else None
        return version if isinstance(version, str) else ""

    @property
    def cancelled(self) -> bool:
        """True once the request was cancelled or answered: nothing more reaches the client."""
        return not self._exchange.open

    @property
    def lifespan(self) -> LifespanT:
        """What the server's lifespan hook yielded (``None`` without one); its type is the
        parameter of ``Context[...]``."""
        value: LifespanT = self._host.lifespan
        return value

    @property
    def lifespan_context(self) -> Any:
        """FastMCP's name for `lifespan`: the same value, ``{}`` when there is no lifespan
        hook (or it yielded ``None``)."""
        value = self._host.lifespan
        return {} if value is None else value

    @property
    def principal(self) -> Any:
        """Who sent this request, as the transport's token check said: over HTTP, what
        ``verify_token`` returned for its bearer token; ``None`` elsewhere."""
        binding = self._exchange.binding
        return None if binding is None else binding.principal

    @property
    def access_token(self) -> AccessToken | None:
        """The verified OAuth access token of this HTTP request (``--auth``, the verifiers of
        `mcpline.server.auth`, the OAuth proxy's tokens): its ``subject``, ``client_id``,
        ``scopes``, ``expires_at``, ``audience`` and ``claims``, read-only; the token text is
        never kept. ``None`` on stdio, sockets, unauthenticated HTTP and with a
        ``verify_token`` of your own that returns something else (see `principal`)."""
        principal = self.principal
        if principal is None:
            return None
        from .auth.tokens import access_token_of

        return access_token_of(principal)

    @property
    def headers(self) -> Mapping[str, str] | None:
        """The HTTP request's headers, read-only, by lower-case name (repeated fields joined
        by commas); ``None`` on stdio, sockets and task runs."""
        found = getattr(self._exchange.binding, "headers", None)
        if found is None:
            return None
        view: Mapping[str, str] = found.view()
        return view

    def close_sse_stream(self) -> None:
        """End the HTTP event stream of this request now, before its result, in a legacy
        (2025-11-25) HTTP session: the client reconnects with ``Last-Event-ID`` and gets the
        rest. Does nothing elsewhere (stdio, sockets, modern requests)."""
        binding = self._exchange.binding
        if binding is not None:
            self._call(binding.close_stream)

    def has_capability(self, path: str) -> bool:
        """Whether this request declared a client capability, e.g. ``"sampling"``."""
        return has_capability(self.client_capabilities, path)

    def require_capability(self, path: str) -> None:
        """Raise -32021 unless this request declared ``path`` (e.g. ``"elicitation.url"``)."""
        require_capability(self.client_capabilities, path)

    # --- MRTR ---------------------------------------------------------------------------------

    @property
    def state(self) -> Any:
        """MRTR: the state you passed to `InputRequired` (or `ask`) in the previous round,
        verified (``None`` in the first round); `state_as` gives it a type."""
        return self._state

    @state.setter
    def state(self, value: Any) -> None:
        if type(value) is dict and len(value) == 2 and RERUN_KEY in value and "state" in value:
            kept = value[RERUN_KEY]
            rerun = self._rerun = _Rerun()
            if type(kept) is dict:
                rerun.answers = dict(kept.get("answers") or {})
                rerun.memo = dict(kept.get("memo") or {})
                rerun.chain = kept.get("chain") is True
            value = value["state"]
        self._state = value

    def state_as(self, tp: type[T]) -> T | None:
        """`state` converted to ``tp`` (a dataclass, TypedDict, msgspec or pydantic type you
        passed as the state), or ``None`` in the first round."""
        if self._state is None:
            return None
        from .signature.schema import convert

        value: T = convert(self._state, tp)
        return value

    def carry(self, state: Any) -> Any:
        """The state to seal for the next round: ``state``, with the answers and `remember`
        values of this round beside it when there are any (the framework calls this)."""
        rerun = self._rerun
        if rerun is None or not (rerun.answers or rerun.memo or rerun.chain):
            return state
        if type(state) is dict and RERUN_KEY in state:
            return state
        kept: dict[str, Any] = {}
        if rerun.answers:
            kept["answers"] = dict(rerun.answers)
        if rerun.memo:
            kept["memo"] = dict(rerun.memo)
        if rerun.chain:
            kept["chain"] = True
        return {RERUN_KEY: kept, "state": state}

    def note_chain(self) -> None:
        """MRTR: the middleware chain ran for this request, so the state sealed for its next
        round says so (what lets that round skip the chain; the seal binds it to this
        principal)."""
        self._kept().chain = True

    @property
    def chain_ran(self) -> bool:
        """MRTR: whether the opened state says the middleware chain already ran for this
        request (the state opened only for the principal it was sealed for)."""
        rerun = self._rerun
        return rerun is not None and rerun.chain

    def take_state(self, state: Any, asked: dict[str, str]) -> None:
        """MRTR: the ``requestState`` opened before the handler ran (by the middleware
        chain): the handler takes it as it is rather than opening it again."""
        self.state = state
        self.asked = asked
        self._kept().taken = True

    @property
    def state_taken(self) -> bool:
        """Whether `take_state` gave this request its state."""
        rerun = self._rerun
        return rerun is not None and rerun.taken

    def _kept(self) -> _Rerun:
        rerun = self._rerun
        if rerun is None:
            rerun = self._rerun = _Rerun()
        return rerun

    def _answer_kept(self, key: str) -> dict[str, Any] | None:
        """An answer under ``key`` from an earlier round."""
        rerun = self._rerun
        return None if rerun is None else rerun.answers.get(key)

    def _keep_answer(self, key: str, answer: dict[str, Any]) -> None:
        self._kept().answers[key] = answer

    def new_run(self) -> None:
        """The handler starts (again): `elicit` numbers its questions from the start."""
        rerun = self._rerun
        if rerun is not None:
            rerun.seen.clear()

    def can_ask(self, request: InputRequest) -> bool:
        """Whether this request's client declared what ``request`` needs (MRTR)."""
        from .mrtr import can_ask

        return can_ask(self.client_capabilities, request, self.legacy_version)

    def ask(self, key: str, request: InputRequest, state: Any = MISSING) -> dict[str, Any]:
        """The client's answer to ``request`` (under ``key``), or raise `InputRequired` for it.

        ``state`` (default: the current `state`) comes back as ``ctx.state`` on the retry.
        An answer stays known in later rounds, so questions can be asked one after another.
        A wrong answer is never asked for again and never returned: it is -32602 for a modern
        client and an ``isError`` result for a legacy one (see `mcpline.server.mrtr.ask`).
        """
        from .mrtr import ask

        return ask(self, key, request, state)

    def ask_all(
        self, requests: dict[str, InputRequest], state: Any = MISSING
    ) -> dict[str, dict[str, Any]]:
        """Answers to every request, or raise `InputRequired` for all of them (see
        `mcpline.server.mrtr.ask_all`). An answer from an earlier round of the same request
        counts: it is kept in the sealed state (`carry`), checked when it came."""
        from .mrtr import InputRequired, check_answer

        got: dict[str, dict[str, Any]] = {}
        for key, request in requests.items():
            answer = self.input_responses.get(key)
            if answer is None:
                kept = self._answer_kept(key)
                if kept is not None:
                    got[key] = kept
                continue
            check_answer(key, request, answer)
            got[key] = answer
            self._keep_answer(key, answer)
        if len(got) == len(requests):
            return got
        raise InputRequired(requests, self.state if state is MISSING else state)

    @overload
    def elicit(
        self, message: str, schema: type[T], *, key: str | None = None
    ) -> ElicitResult[T]: ...

    @overload
    def elicit(
        self, message: str, *, response_type: type[T], key: str | None = None
    ) -> ElicitResult[T]: ...

    @overload
    def elicit(
        self,
        message: str,
        schema: Any = None,
        *,
        response_type: Any = MISSING,
        key: str | None = None,
    ) -> ElicitResult[Any]: ...

    def elicit(
        self,
        message: str,
        schema: Any = None,
        *,
        response_type: Any = MISSING,
        key: str | None = None,
    ) -> Any:
        """Ask the user to fill in a form; the `ElicitResult` is awaitable, so
        ``await ctx.elicit(...)`` and ``ctx.elicit(...)`` both work.

        ``schema`` is a type — ``str``, ``int``, ``float``, ``bool``, a ``Literal`` or
        ``Enum`` (one field, ``data`` is the value), a dataclass, TypedDict, msgspec struct
        or pydantic model with flat fields (``data`` is an instance) — a list of strings to
        choose from, a ``requestedSchema`` or `mcpline.elicit`'s shorthand (``data`` is the
        content), or ``None`` (an empty form: accept or decline). ``response_type=`` is
        FastMCP's name for it (a type or a list of strings).

        On MRTR (`ask`): the first call stops the handler and asks; the handler then runs
        again from the top, and this call returns the answer. ``key`` names the question;
        by default it comes from the message, the schema and how many times this run asked
        the same, which stays the same across runs as long as the code before it does.
        """
        from .mrtr import InputRequest, elicit
        from .signature import schema as _schema

        if not isinstance(message, str):
            raise TypeError("message must be a string")
        if response_type is not MISSING:
            schema = _response_type(schema, response_type)
        convert: Callable[[dict[str, Any]], Any]
        if isinstance(schema, Mapping):
            requested = elicit(message, schema).params["requestedSchema"]
            convert = dict
        else:
            requested, convert = _schema.elicitation_form(schema)
        if key is None:
            import hashlib  # here: libcrypto costs ~1 MiB of RSS to every server at start-up

            digest = hashlib.sha256(_schema.dumps_text([message, requested]).encode()).hexdigest()[
                :16
            ]
            seen = self._kept().seen
            seen[digest] = n = seen.get(digest, 0) + 1
            key = f"elicit-{digest}-{n}"
        request = InputRequest(ELICIT, {"message": message, "requestedSchema": requested})
        answer = self.ask(key, request)
        action = answer["action"]
        content = answer.get("content") or {}
        data = convert(content) if action == "accept" else None
        return ElicitResult(action, data, dict(content))

    @overload
    def remember(self, key: str, fn: Callable[[], Awaitable[T]]) -> Awaitable[T]: ...

    @overload
    def remember(self, key: str, fn: Callable[[], T]) -> T: ...

    def remember(self, key: str, fn: Callable[[], Any]) -> Any:
        """``fn()``'s value, computed once per request however often the handler re-runs.

        The first run calls ``fn`` and keeps its value (JSON data) in the request's state;
        later runs — after `elicit`/`ask` — get the kept value without calling ``fn``. The
        value is returned as JSON brings it back (a dataclass becomes a dict), the same on
        every run. Pass an ``async def`` function to get an awaitable. Keep the values
        small: a modern client carries them in the sealed state (64 KiB at most).
        """
        memo = self._kept().memo
        if inspect.iscoroutinefunction(fn):
            if key in memo:
                return Ready(memo[key])
            return self._remember_async(key, fn)
        if key not in memo:
            memo[key] = _as_json(fn())
        return memo[key]

    async def _remember_async(self, key: str, fn: Callable[[], Awaitable[Any]]) -> Any:
        value = _as_json(await fn())
        self._kept().memo[key] = value
        return value

    # --- progress and logging -------------------------------------------------------------------

    def _call(self, fn: Any, *args: Any) -> None:
        if threading.get_ident() == self._loop_thread:
            fn(*args)
        else:
            self._loop.call_soon_threadsafe(fn, *args)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Ready[None]:
        """Send `notifications/progress` if the request asked for it (a ``progressToken``).

        Values must increase; a value that does not is dropped with a warning on stderr.
        Sent when called; the awaitable it returns is already done.
        """
        self._call(self._progress, progress, total, message)
        return DONE

    def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        token = self.meta.progress_token if self.meta else None
        if token is None or not self._exchange.open:
            return
        if not _finite(progress) or (total is not None and not _finite(total)):
            logging.getLogger("mcpline").warning(
                "progress for request %r must be a finite number (progress=%r, total=%r); not sent",
                self.request_id,
                progress,
                total,
            )
            return
        if self._last_progress is not None and not progress > self._last_progress:
            logging.getLogger("mcpline").warning(
                "progress for request %r must increase (%s after %s); not sent",
                self.request_id,
                progress,
                self._last_progress,
            )
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._exchange.send(notification(PROGRESS, params))

    def log(
        self,
        level: Any = MISSING,
        data: Any = MISSING,
        logger: str | None = None,
        /,
        **keywords: Any,
    ) -> Ready[None]:
        """Log for this request: a `notifications/message` when the request's ``logLevel``
        admits ``level``, otherwise a record on stderr through `logging`. Sent when called;
        the awaitable it returns is already done.

        ``ctx.log("info", data)`` is the spelling; FastMCP's ``ctx.log(message, level=...,
        logger_name=..., extra=...)`` (``level`` ``"info"`` by default) means the same and
        works too (with ``extra``, ``data`` is ``{"msg": message, "extra": extra}``, as
        FastMCP sends it)."""
        level, data, logger = _log_arguments((level, data, logger), keywords)
        if level not in LOG_LEVEL_RANK:
            raise ValueError(
                f"unknown log level {level!r}: ctx.log takes the level first, "
                f"ctx.log('info', data) (or ctx.log(message, level='info'))"
            )
        self._call(self._log, level, data, logger)
        return DONE

    def _log(self, level: str, data: Any, logger: str | None) -> None:
        if not self._exchange.open:
            return
        name = logger or self._host.info["name"]
        if self.meta is not None and self.meta.wants_log(level):
            params: dict[str, Any] = {"level": level, "logger": name, "data": data}
            self._exchange.send(notification(MESSAGE, params))
        else:
            logging.getLogger(name).log(PYTHON_LOG_LEVEL[level], "%s", data)

    def debug(
        self,
        data: Any,
        logger: str | None = None,
        *,
        logger_name: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Ready[None]:
        """`log` at ``debug`` (FastMCP's ``logger_name=`` and ``extra=`` work too)."""
        return self.log("debug", data, logger, logger_name=logger_name, extra=extra)

    def info(
        self,
        data: Any,
        logger: str | None = None,
        *,
        logger_name: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Ready[None]:
        """`log` at ``info`` (FastMCP's ``logger_name=`` and ``extra=`` work too)."""
        return self.log("info", data, logger, logger_name=logger_name, extra=extra)

    def warning(
        self,
        data: Any,
        logger: str | None = None,
        *,
        logger_name: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Ready[None]:
        """`log` at ``warning`` (FastMCP's ``logger_name=`` and ``extra=`` work too)."""
        return self.log("warning", data, logger, logger_name=logger_name, extra=extra)

    def error(
        self,
        data: Any,
        logger: str | None = None,
        *,
        logger_name: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Ready[None]:
        """`log` at ``error`` (FastMCP's ``logger_name=`` and ``extra=`` work too)."""
        return self.log("error", data, logger, logger_name=logger_name, extra=extra)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            pointer = _FASTMCP_ONLY.get(name)
            if pointer is None:
                raise AttributeError(
                    f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self
                )
            raise AttributeError(
                f"mcpline's Context has no {name}() (FastMCP has): {pointer}", name=name, obj=self
            )


_STATE_POINTER = (
    "the 2026-07-28 protocol keeps no session between requests. Within one request, "
    "ctx.remember(key, fn) keeps a value across the rounds of ctx.elicit/ctx.ask; across "
    "requests, keep state in your lifespan value (ctx.lifespan) or a store of your own, keyed "
    "by what the request names. See docs/coming-from-fastmcp.md"
)
_FASTMCP_ONLY: dict[str, str] = {
    "read_resource": (
        "call the function you registered with @server.resource directly; it is a plain "
        "function. See docs/coming-from-fastmcp.md"
    ),
    "set_state": _STATE_POINTER,
    "get_state": _STATE_POINTER,
    "delete_state": _STATE_POINTER,
}
"""FastMCP `Context` methods mcpline does not have, with what to do instead."""


def _response_type(schema: Any, response_type: Any) -> Any:
    """``elicit``'s ``schema`` from FastMCP's ``response_type=`` (refusing what differs)."""
    if schema is not None:
        raise TypeError("elicit: pass the form once, as schema or as response_type, not both")
    if isinstance(response_type, Mapping):
        raise TypeError(
            "elicit: FastMCP's titled choices response_type={key: {'title': ...}} are not "
            "mcpline's; use an Enum or Literal[...] for choices, or pass a requestedSchema "
            "as schema= (see docs/context.md)"
        )
    return response_type


def _log_arguments(
    positional: tuple[Any, ...], keywords: dict[str, Any]
) -> tuple[Any, Any, str | None]:
    """``(level, data, logger)`` from mcpline's ``log(level, data, logger)`` or FastMCP's
    ``log(message, level="info", logger_name=None, extra=None)`` (chosen by the keywords:
    ``message=``, or ``level=`` without ``data=``, is FastMCP's)."""
    unknown = set(keywords) - {"level", "data", "logger", "message", "logger_name", "extra"}
    if unknown:
        raise TypeError(f"log() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    fastmcp = "message" in keywords or ("level" in keywords and "data" not in keywords)
    names = ("message", "level", "logger_name") if fastmcp else ("level", "data", "logger")
    *values, logger = positional
    given = [value for value in values if value is not MISSING]
    if logger is not None:
        given.append(logger)
    bound = dict(zip(names, given, strict=False))
    for name, value in keywords.items():
        if name in bound:
            raise TypeError(f"log() got {name!r} twice")
        bound[name] = value
    if bound.get("logger") is not None and bound.get("logger_name") is not None:
        raise TypeError("log() got logger and logger_name: pass one")
    chosen = bound.get("logger") or bound.get("logger_name")
    if fastmcp or "data" not in bound:
        # FastMCP: log(message) logs at info.
        if "message" not in bound and "level" not in bound:
            raise TypeError("log() needs a level and data: ctx.log('info', data)")
        if not fastmcp:
            bound = {"message": bound.pop("level"), **bound}
        level, data = bound.get("level") or "info", bound["message"]
    else:
        level, data = bound.get("level", MISSING), bound["data"]
        if level is MISSING:
            raise TypeError("log() needs a level: ctx.log('info', data)")
    extra = bound.get("extra")
    if extra is not None:
        data = {"msg": data, "extra": dict(extra)}
    return level, data, chosen


__all__ = [
    "Context",
    "DONE",
    "ElicitResult",
    "Ready",
    "RERUN_KEY",
]
