"""Multi round-trip requests (MRTR): handlers that need input from the client.

A tool, prompt or resource function asks for input by raising (or returning)
`InputRequired`, or with ``ctx.ask(key, request)``, which returns the client's answer when
the retry carries it and raises `InputRequired` otherwise::

    @server.tool()
    def greet(ctx: Context) -> str:
        answer = ctx.ask("who", elicit("Your name?", {"name": str}))
        if answer["action"] != "accept":
            return "No name given."
        return f"Hello, {answer['content']['name']}!"

Requests are built with `elicit`, `elicit_url`, `sample` and `list_roots`. On a modern
request the framework answers with an ``InputRequiredResult`` and the client retries with
``inputResponses`` (and ``requestState``, sealed by the framework — see
`mcpline.protocol.state`); on a legacy (``initialize``) session it sends real requests to the
client and re-runs the handler with the answers. Either way the handler is written once.

The framework never sends an input request whose client capability the request did not
declare: that is -32021, unless the handler checked ``ctx.can_ask(request)`` or raised
``InputRequired(..., drop_undeclared=True)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import JsonRpcError, MissingCapabilityError
from ..jsonrpc import MISSING
from ..spec import (
    ELICIT,
    INPUT_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_ELICITATION_FROM,
    LEGACY_URL_ELICITATION_FROM,
    MRTR_METHODS,
    ROOTS,
    SAMPLE,
)
from .owners import owner_key

if TYPE_CHECKING:
    from ..protocol.state import StateSealer
    from .context import Context


_PY_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ELICIT_ACTIONS = frozenset({"accept", "decline", "cancel"})


@dataclass(frozen=True)
class InputRequest:
    """One request for client input (the value of an ``inputRequests`` entry)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in INPUT_METHODS:
            raise ValueError(f"an input request is one of {', '.join(sorted(INPUT_METHODS))}")

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "params": dict(self.params)}

    def required_capabilities(self) -> dict[str, Any]:
        """The client capabilities this request needs, as a ``ClientCapabilities`` object."""
        if self.method == ELICIT:
            return (
                {"elicitation": {"url": {}}}
                if self.params.get("mode") == "url"
                else {"elicitation": {}}
            )
        if self.method == SAMPLE:
            need: dict[str, Any] = {}
            if "tools" in self.params or "toolChoice" in self.params:
                need["tools"] = {}
            if self.params.get("includeContext", "none") != "none":
                need["context"] = {}
            return {"sampling": need}
        return {"roots": {}}


def elicit(
    message: str,
    schema: Mapping[str, Any],
    *,
    required: Iterable[str] | None = None,
) -> InputRequest:
    """A form-mode elicitation.

    ``schema`` is a full ``requestedSchema`` (``{"type": "object", "properties": …}``) or a
    shorthand mapping field → ``str``/``int``/``float``/``bool`` or a property schema; with
    the shorthand every field is required unless ``required`` says otherwise.
    """
    if not isinstance(message, str):
        raise TypeError("message must be a string")
    if schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping):
        requested = dict(schema)
        if required is not None:
            requested["required"] = list(required)
    else:
        props: dict[str, Any] = {}
        for name, spec in schema.items():
            if isinstance(spec, Mapping):
                props[name] = dict(spec)
            elif isinstance(spec, type) and spec in _PY_TYPES:
                props[name] = {"type": _PY_TYPES[spec]}
            else:
                raise TypeError(f"field {name!r}: use str, int, float, bool or a property schema")
        requested = {"type": "object", "properties": props}
        requested["required"] = list(props if required is None else required)
    return InputRequest(ELICIT, {"message": message, "requestedSchema": requested})


def elicit_url(message: str, url: str) -> InputRequest:
    """A URL-mode elicitation (needs the client's ``elicitation.url`` capability).

    Use it for anything sensitive; the outcome is learnt when the client retries.
    """
    if not isinstance(url, str) or "://" not in url:
        raise ValueError("url must be an absolute URL")
    return InputRequest(ELICIT, {"mode": "url", "message": message, "url": url})


def sample(
    messages: str | list[dict[str, Any]],
    max_tokens: int,
    *,
    system_prompt: str | None = None,
    temperature: float | None = None,
    stop_sequences: list[str] | None = None,
    model_preferences: dict[str, Any] | None = None,
    include_context: str | None = None,
    metadata: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: dict[str, Any] | None = None,
) -> InputRequest:
    """A sampling request (deprecated feature); a string is one user text message."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
    if type(max_tokens) is not int or max_tokens < 1:
        raise ValueError("max_tokens must be a positive integer")
    params: dict[str, Any] = {"messages": list(messages), "maxTokens": max_tokens}
    for key, value in (
        ("systemPrompt", system_prompt),
        ("temperature", temperature),
        ("stopSequences", stop_sequences),
        ("modelPreferences", model_preferences),
        ("includeContext", include_context),
        ("metadata", metadata),
        ("tools", tools),
        ("toolChoice", tool_choice),
    ):
        if value is not None:
            params[key] = value
    return InputRequest(SAMPLE, params)


def list_roots() -> InputRequest:
    """A ``roots/list`` request (deprecated feature)."""
    return InputRequest(ROOTS, {})


class InputRequired(Exception):
    """Raise (or return) from a handler to ask the client for input.

    ``requests`` maps keys of your choice to `InputRequest` values; ``state`` is any JSON
    data you want back on the retry (as ``ctx.state``), sealed by the framework.
    ``drop_undeclared`` silently leaves out requests the client cannot answer instead of
    failing with -32021 (if none is left, it is still -32021).
    """

    def __init__(
        self,
        requests: Mapping[str, InputRequest] | None = None,
        state: Any = None,
        *,
        drop_undeclared: bool = False,
    ) -> None:
        reqs = dict(requests or {})
        for key, req in reqs.items():
            if not isinstance(key, str) or not key:
                raise ValueError("input request keys must be non-empty strings")
            if not isinstance(req, InputRequest):
                raise TypeError(
                    f"input request {key!r} must be an InputRequest (see elicit(), sample(), …)"
                )
        if not reqs and state is None:
            raise ValueError("InputRequired needs input requests, a state, or both")
        super().__init__(f"input required: {', '.join(reqs) or 'state only'}")
        self.requests = reqs
        self.state = state
        self.drop_undeclared = drop_undeclared


# --- capabilities ---------------------------------------------------------------------------


def can_ask(
    caps: Mapping[str, Any], request: InputRequest, legacy_version: str | None = None
) -> bool:
    """Whether a client that declared ``caps`` can answer ``request``.

    ``elicitation: {}`` means form mode only. ``legacy_version`` applies the limits of an
    older revision (no elicitation before 2025-06-18, no URL mode before 2025-11-25).
    """
    need = request.required_capabilities()
    if request.method == ELICIT:
        if legacy_version is not None and legacy_version < LEGACY_ELICITATION_FROM:
            return False
        el = caps.get("elicitation")
        if type(el) is not dict:
            return False
        if "url" in need["elicitation"]:
            ok = type(el.get("url")) is dict
            return ok and (legacy_version is None or legacy_version >= LEGACY_URL_ELICITATION_FROM)
        return ("form" not in el and "url" not in el) or type(el.get("form")) is dict
    top, sub = next(iter(need.items()))
    node = caps.get(top)
    if type(node) is not dict:
        return False
    return all(type(node.get(k)) is dict for k in sub)


def missing_capabilities(
    caps: Mapping[str, Any], requests: Iterable[InputRequest], legacy_version: str | None = None
) -> dict[str, Any]:
    """The merged ``requiredCapabilities`` of the requests ``caps`` cannot serve ({} if none)."""
    out: dict[str, Any] = {}
    for req in requests:
        if can_ask(caps, req, legacy_version):
            continue
        for top, sub in req.required_capabilities().items():
            out.setdefault(top, {}).update(sub)
    if "elicitation" in out and not out["elicitation"] and type(caps.get("elicitation")) is dict:
        out["elicitation"] = {"form": {}}  # declared, but URL mode only
    return out


def select_requests(
    ir: InputRequired, caps: Mapping[str, Any], legacy_version: str | None = None
) -> dict[str, InputRequest]:
    """The requests to send for ``ir``; raises `MissingCapabilityError` as the rules say."""
    missing = missing_capabilities(caps, ir.requests.values(), legacy_version)
    if not missing:
        return ir.requests
    kept = {k: r for k, r in ir.requests.items() if can_ask(caps, r, legacy_version)}
    if ir.drop_undeclared and kept:
        return kept
    raise MissingCapabilityError(
        missing,
        "Missing required client capability: this request needs "
        + ", ".join(sorted(missing))
        + " to ask the client for input, and the request did not declare it",
    )


# --- responses ----------------------------------------------------------------------------


def response_problem(method: str, value: Any) -> str | None:
    """Why ``value`` is not a well-formed answer to a ``method`` input request (None if it is)."""
    if type(value) is not dict:
        return "must be an object"
    if method == ELICIT:
        action = value.get("action")
        if type(action) is not str or action not in _ELICIT_ACTIONS:
            return "must have action 'accept', 'decline' or 'cancel'"
        content = value.get("content", MISSING)
        if content is MISSING or content is None:
            return None
        if type(content) is not dict:
            return "content must be an object"
        for name, v in content.items():
            if type(v) is list:
                if not all(type(x) is str for x in v):
                    return f"content.{name} must be a string, number, boolean or list of strings"
            elif type(v) not in (str, int, float, bool):
                return f"content.{name} must be a string, number, boolean or list of strings"
        return None
    if method == SAMPLE:
        if value.get("role") not in ("user", "assistant"):
            return "must have role 'user' or 'assistant'"
        if type(value.get("model")) is not str:
            return "must have a string model"
        content = value.get("content")
        blocks = content if type(content) is list else [content]
        if not all(type(b) is dict and type(b.get("type")) is str for b in blocks):
            return "content must be a content block or a list of them"
        return None
    roots = value.get("roots")
    if type(roots) is not list or not all(
        type(r) is dict and type(r.get("uri")) is str for r in roots
    ):
        return "must have roots: a list of objects with a string uri"
    return None


def check_response(key: str, method: str, value: Any) -> None:
    """Raise -32602 when the answer under ``key`` does not fit a ``method`` request."""
    problem = response_problem(method, value)
    if problem is not None:
        raise JsonRpcError(
            INVALID_PARAMS,
            f"Invalid params: inputResponses[{key!r}] {problem} (answer to {method})",
            {"inputKey": key},
        )


def content_problems(request: InputRequest, answer: dict[str, Any]) -> list[str]:
    """For an accepted form elicitation: how the content breaks the requested schema, each
    naming its field (``content/age: …``); empty when it fits or nothing is to be checked."""
    if (
        request.method != ELICIT
        or request.params.get("mode") == "url"
        or answer.get("action") != "accept"
    ):
        return []
    from .signature.schema import SchemaError, Validator

    try:
        found = Validator(request.params["requestedSchema"]).errors(answer.get("content", {}))
    except SchemaError:
        return []
    return ["content" + p.removeprefix("arguments") for p in found]


def check_answer(key: str, request: InputRequest, answer: Any) -> None:
    """Raise -32602 when the answer under ``key`` does not fit ``request``: its shape
    (`check_response`), or an accepted form's content against the requested schema."""
    check_response(key, request.method, answer)
    problems = content_problems(request, answer)
    if problems:
        raise JsonRpcError(
            INVALID_PARAMS,
            f"Invalid params: inputResponses[{key!r}] does not match the requested schema: "
            + "; ".join(problems),
            {"inputKey": key, "problems": problems},
        )


def parse_input_responses(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``params.inputResponses`` checked to be an object of objects (-32602 otherwise)."""
    raw = params.get("inputResponses", MISSING)
    if raw is MISSING:
        return {}
    if type(raw) is not dict:
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
    for key, value in raw.items():
        if type(value) is not dict:
            raise JsonRpcError(
                INVALID_PARAMS,
                f"Invalid params: inputResponses[{key!r}] must be an object (an ElicitResult, "
                "CreateMessageResult or ListRootsResult)",
                {"inputKey": key},
            )
    return raw


def ask(ctx: Context, key: str, request: InputRequest, state: Any = MISSING) -> dict[str, Any]:
    """The client's valid answer to ``request`` under ``key``, or raise `InputRequired`.

    ``state`` (default: the current ``ctx.state``) rides along with the new request.

    An answer is never asked for again because it is wrong: a client that sent a bad answer
    once would send it again (a user would face the same dialog over and over), and the
    protocol has no way to say what was wrong with it. So an answer of the wrong shape, or an
    accepted form whose content breaks the requested schema, never reaches the handler:

    * modern era: the retry is -32602 Invalid params, naming the input key and the field;
    * legacy era (the server asked with a real ``elicitation/create``): ``tools/call`` ends
      with an ``isError`` result saying that the client's answer did not match the requested
      schema; ``prompts/get`` and ``resources/read`` end with -32602.

    Either way the handler sees only answers that fit. A missing answer is asked for (the
    retry simply lacked it).
    """
    return ask_all(ctx, {key: request}, state)[key]


def ask_all(
    ctx: Context, requests: Mapping[str, InputRequest], state: Any = MISSING
) -> dict[str, dict[str, Any]]:
    """Answers to all ``requests``, or raise `InputRequired` for all of them if any is missing.

    An answer given in an earlier round of the same request counts: the framework keeps the
    answers in the sealed state (`Context.carry`), so questions can follow one another."""
    return ctx.ask_all(dict(requests), state)


# --- the modern flow ------------------------------------------------------------------------


def prepare(ctx: Context, params: Mapping[str, Any], sealer: StateSealer) -> None:
    """Check ``inputResponses`` and open ``requestState`` before the handler runs (a first
    round, with neither, has nothing to check or open)."""
    if "inputResponses" not in params and "requestState" not in params:
        return
    responses = parse_input_responses(params)
    token = params.get("requestState", MISSING)
    state: Any = None
    asked: dict[str, str] = {}
    if token is not MISSING and ctx.state_taken:
        asked = ctx.asked
    else:
        if token is not MISSING:
            state, asked = sealer.open(token, ctx.method, params, owner_key(ctx.principal))
        ctx.state = state
        ctx.asked = asked
    for key, method in asked.items():
        if key in responses:
            check_response(key, method, responses[key])
    ctx.input_responses = responses


def input_required_result(
    ctx: Context, params: Mapping[str, Any], ir: InputRequired, sealer: StateSealer
) -> dict[str, Any]:
    """The ``InputRequiredResult`` for ``ir`` on this modern request. When the middleware
    chain ran for the request (`Context.note_chain`), a state is sealed even if the handler
    gave none, saying so (`Context.carry`)."""
    requests = select_requests(ir, ctx.client_capabilities)
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests:
        result["inputRequests"] = {k: r.to_json() for k, r in requests.items()}
    state = ctx.carry(ir.state)
    if state is not None:
        try:
            result["requestState"] = sealer.seal(
                ctx.method,
                params,
                state,
                {k: r.method for k, r in requests.items()},
                owner=owner_key(ctx.principal),
            )
        except ValueError as exc:
            raise JsonRpcError(
                INTERNAL_ERROR, f"Internal error: cannot seal requestState: {exc}"
            ) from None
    return result


async def run_modern(
    handler: Callable[[Context, dict[str, Any]], Awaitable[dict[str, Any]]],
    ctx: Context,
    params: dict[str, Any],
    sealer: StateSealer,
) -> dict[str, Any]:
    """Run an MRTR-capable handler for a modern request."""
    prepare(ctx, params, sealer)
    try:
        return await handler(ctx, params)
    except InputRequired as ir:
        return input_required_result(ctx, params, ir, sealer)


def refuse(method: str) -> JsonRpcError:
    """The error for a handler that asked for input where MRTR is not allowed."""
    return JsonRpcError(
        INTERNAL_ERROR,
        f"Internal error: {method} cannot ask the client for input "
        f"(only {', '.join(sorted(MRTR_METHODS))} can)",
    )


__all__ = [
    "ask",
    "ask_all",
    "can_ask",
    "check_answer",
    "check_response",
    "content_problems",
    "elicit",
    "elicit_url",
    "input_required_result",
    "InputRequest",
    "InputRequired",
    "list_roots",
    "missing_capabilities",
    "parse_input_responses",
    "prepare",
    "refuse",
    "response_problem",
    "run_modern",
    "sample",
    "select_requests",
]
