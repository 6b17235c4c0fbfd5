"""Tools: registration from typed functions or raw schemas, validation and result shaping."""

from __future__ import annotations

import inspect
import logging
import re
import sys
import typing
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..errors import JsonRpcError, ToolError
from ..protocol.headers import HeaderParam, InvalidHeaderAnnotation, header_params
from ..spec import TOOL_NAME_MAX
from ._options import ToolDefinition, check_keywords
from ._userfn import RunSync, UserFunction, definition, wants_context
from .content import CONTENT, ToolResult, is_content_block, looks_like_content, text
from .context import Context
from .mrtr import InputRequired
from .signature import schema as _schema

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

log = logging.getLogger("mcpline.server")

TOOL_FAILURE: ContextVar[type[BaseException] | None] = ContextVar(
    "mcpline.tool_failure", default=None
)
"""The type of the exception a tool body raised (not a `ToolError`) in the request being
served, set when its ``isError`` result was made (error masking middleware reads it)."""

NAME_RE = re.compile(rf"^[A-Za-z0-9_.-]{{1,{TOOL_NAME_MAX}}}$")
"""Tool names: 1 to `TOOL_NAME_MAX` characters of ``A-Z a-z 0-9 _ - .``."""

ANNOTATION_KEYS = {
    "title": "title",
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}


class Deferred(Exception):
    """What a tool body returns (or raises) to answer later instead of with a value: a task
    handle (`mcpline.Task`, see `mcpline.server.tasks.manager`). `invoke` hands it to its caller."""


def check_name(name: str, kind: str = "tool") -> None:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ValueError(
            f"invalid {kind} name {name!r}: use 1-{TOOL_NAME_MAX} characters from A-Z a-z 0-9 _ - ."
        )


def _plain_return(tp: Any) -> bool:
    """Return types that map to content, not to structured output: text, `ContentBlock`
    and lists of them, `ToolResult`, ``Any`` and nothing. (``dict`` is structured data.)"""
    if tp in (inspect.Signature.empty, None, type(None), str, Any, ToolResult, list):
        return True
    if isinstance(tp, type) and issubclass(tp, Deferred):
        return True  # a task handle: its value is shaped when the work ends
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        return any(m is CONTENT for m in meta) or _plain_return(base)
    if origin is typing.Union or (origin is not None and str(origin) == "types.UnionType"):
        return all(_plain_return(a) for a in typing.get_args(tp))
    if origin is list:
        args = typing.get_args(tp)
        return bool(args) and _content_item(args[-1])
    return False


def _content_item(tp: Any) -> bool:
    """Element types of a list of content blocks (``dict``, ``ContentBlock``, ``Any``)."""
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        return any(m is CONTENT for m in meta) or _content_item(base)
    return tp in (dict, Any) or typing.get_origin(tp) is dict


def tool_header_params(schema: dict[str, Any], tool_name: str) -> tuple[HeaderParam, ...]:
    """The ``x-mcp-header`` parameters of a tool's ``inputSchema``
    (`mcpline.protocol.headers.header_params`); `ValueError` naming the tool, the property
    and the rule broken."""
    try:
        return header_params(schema)
    except InvalidHeaderAnnotation as exc:
        raise ValueError(f"tool {tool_name!r}: {exc}") from None


class Tool:
    """A registered tool. `definition` is the `Tool` object of ``tools/list``.

    A plain class: every tool-serving process builds this one at start, and a dataclass
    costs a third of a millisecond to build."""

    __slots__ = (
        "body",
        "definition",
        "header_params",
        "name",
        "open_object",
        "output_validator",
        "signature",
        "strict",
        "validator",
        "wrap_output",
    )

    def __init__(
        self,
        name: str,
        body: UserFunction,
        definition: dict[str, Any],
        validator: _schema.Validator,
        signature: _schema.Signature | None,
        wrap_output: bool | None,
        output_validator: _schema.Validator | None = None,
        header_params: tuple[HeaderParam, ...] = (),
        strict: bool = False,
        open_object: bool = False,
    ) -> None:
        self.name = name
        self.body = body
        self.definition = definition
        self.validator = validator
        self.signature = signature
        self.wrap_output = wrap_output
        """None: no structured output; False: the value is the object; True: it is wrapped
        as ``{"result": …}``."""
        self.output_validator = output_validator
        """For an explicit ``output_schema``: results are checked against it."""
        self.header_params = header_params
        """Parameters mirrored into ``Mcp-Param-*`` headers (HTTP checks them against the
        body)."""
        self.strict = strict
        """Arguments must fit ``inputSchema`` as sent: no string is read as the number (or
        boolean, array, object) it spells."""
        self.open_object = open_object
        """Annotated ``-> dict`` (any object): a content block returned by mistake is
        refused."""

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    @property
    def annotations(self) -> dict[str, Any]:
        ann: dict[str, Any] = self.definition.get("annotations", {})
        return ann


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    strict: bool = False,
    inline: bool | None = None,
    **spec: Unpack[ToolDefinition],
) -> Tool:
    """Build a `Tool` from a function; raises `ValueError` for anything a client would reject.

    ``spec`` is the rest of its definition (`mcpline.server._options.ToolDefinition`).
    ``strict`` turns off the reading of strings as the numbers, booleans, arrays or objects
    they spell (``"5"`` for an integer), which is otherwise applied to arguments that break
    ``inputSchema``. ``inline`` pins where a plain ``def`` runs (see `UserFunction`): True on
    the event loop, False on a worker thread; None decides by timing its calls."""
    check_keywords(ToolDefinition, spec, "make_tool()")
    title, description = spec.get("title"), spec.get("description")
    input_schema, output_schema = spec.get("input_schema"), spec.get("output_schema")
    structured_output, annotations = spec.get("structured_output"), spec.get("annotations")
    icons, meta = spec.get("icons"), spec.get("meta")
    tool_name = name or fn.__name__
    check_name(tool_name)
    summary, arg_docs = _schema.split_docstring(inspect.getdoc(fn))
    desc = description if description is not None else summary
    if not desc:
        raise ValueError(f"tool {tool_name!r} needs a description (a docstring or description=)")
    signature: _schema.Signature | None = None
    if input_schema is None:
        signature = _schema.Signature(fn, name=tool_name, skip=wants_context, arg_docs=arg_docs)
        body = UserFunction.of(fn, signature.context_param, inline=inline)
        schema = signature.schema
    else:
        schema = input_schema
        body = UserFunction.of(fn, inline=inline)
    _schema.check_tool_input_schema(schema)
    headers = tool_header_params(schema, tool_name)
    validator = _schema.Validator(schema)
    if input_schema is not None:
        validator.compile()  # a hand-written schema fails here, at registration, if invalid

    wrap: bool | None = None
    output_validator: _schema.Validator | None = None
    if output_schema is not None:
        _schema.check_schema(output_schema)
        output_validator = _schema.Validator(output_schema)
        output_validator.compile()
        wrap = False
    elif structured_output is not False:
        ret = typing.get_type_hints(fn, include_extras=True).get("return", inspect.Signature.empty)
        if not _plain_return(ret):
            try:
                output_schema, wrap = _schema.output_schema_for(ret)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"tool {tool_name!r}: {exc} (for content, annotate -> Any or "
                    "-> ContentBlock, or pass structured_output=False)"
                ) from exc
            # The advertised schema is a promise: values that break it are tool errors.
            output_validator = _schema.Validator(output_schema)
        elif structured_output:
            raise ValueError(
                f"tool {tool_name!r}: structured output needs a typed return annotation"
            )

    tool_body: dict[str, Any] = {"inputSchema": schema}
    if output_schema is not None:
        tool_body["outputSchema"] = output_schema
    return Tool(
        name=tool_name,
        body=body,
        definition=definition(
            {"name": tool_name},
            title=title,
            description=desc,
            body=tool_body,
            annotations={ANNOTATION_KEYS.get(k, k): v for k, v in (annotations or {}).items()},
            icons=icons,
            meta=meta,
        ),
        validator=validator,
        signature=signature,
        wrap_output=wrap,
        output_validator=output_validator,
        header_params=headers,
        strict=strict,
        open_object=wrap is False and output_schema is not None and _open_object(output_schema),
    )


def _open_object(schema: dict[str, Any]) -> bool:
    """An output schema that any object fits (``-> dict``, ``-> dict[str, Any]``)."""
    return schema.get("type") == "object" and not (set(schema) - {"type", "additionalProperties"})


def error_result(message: str) -> dict[str, Any]:
    return {"content": [text(message)], "isError": True}


def shape_result(tool: Tool, value: Any) -> dict[str, Any]:
    """A tool's return value as a `CallToolResult`."""
    if isinstance(value, ToolResult):
        return value.to_json()
    if tool.wrap_output is not None:
        if tool.open_object and looks_like_content(value):
            log.error("tool %r is annotated -> dict but returned a content block", tool.name)
            return error_result(
                f"Tool {tool.name!r} returned a content block, but its return annotation "
                "(dict) promises structured data; annotate it -> ContentBlock to send content"
            )
        data = _schema.to_json(value)
        structured = {"result": data} if tool.wrap_output else data
        if tool.output_validator is not None:
            problems = tool.output_validator.errors(structured)
            if problems:
                log.error(
                    "tool %r returned output that breaks its outputSchema: %s",
                    tool.name,
                    "; ".join(problems),
                )
                return error_result(
                    f"Tool {tool.name!r} produced output that does not match its outputSchema"
                )
        return {
            "content": [text(_schema.dumps_text(structured))],
            "structuredContent": structured,
        }
    if value is None:
        return {"content": []}
    if isinstance(value, str):
        return {"content": [text(value)]}
    if is_content_block(value):
        return {"content": [value]}
    if isinstance(value, (list, tuple)) and all(
        is_content_block(v) or isinstance(v, str) for v in value
    ):
        return {"content": [text(v) if isinstance(v, str) else v for v in value]}
    return {"content": [text(_schema.dumps_text(_schema.to_json(value)))]}


def prepare_call(
    tool: Tool, arguments: dict[str, Any]
) -> tuple[dict[str, Any], None] | tuple[None, dict[str, Any]]:
    """``arguments`` validated and bound: the keyword arguments of the body, or the
    ``isError`` result saying what is wrong with them."""
    problems = tool.validator.errors(arguments)
    if problems:
        fixed = None if tool.strict else tool.validator.coerce(arguments)
        if fixed is not None:
            problems = tool.validator.errors(fixed)
            arguments = fixed  # a copy: what the client sent (and MRTR seals) is unchanged
        if problems:
            why = f"Invalid arguments for tool {tool.name!r}: " + "; ".join(problems)
            return None, error_result(why)
    try:
        return (tool.signature.bind(arguments) if tool.signature else dict(arguments)), None
    except (TypeError, ValueError) as exc:
        return None, error_result(f"Invalid arguments for tool {tool.name!r}: {exc}")


def outcome(tool: Tool, value: Any) -> dict[str, Any]:
    """The result of a body that returned ``value``; an `InputRequired` or a task handle
    (`Deferred`) it returned is raised, for the method to answer."""
    if isinstance(value, (InputRequired, Deferred)):
        try:
            raise value
        finally:
            del value  # this frame is in its traceback: holding it would make a cycle
    return shape_result(tool, value)


def failed(tool: Tool, exc: Exception) -> dict[str, Any] | None:
    """The ``isError`` result of a body that raised ``exc``; None for what the method
    answers itself (`JsonRpcError`, `InputRequired`, `Deferred`), which the caller raises
    again (with a bare ``raise``: re-raised from here, this frame, holding ``exc``, would
    join its traceback in a cycle)."""
    if isinstance(exc, ToolError):
        return error_result(str(exc) or type(exc).__name__)
    if isinstance(exc, (JsonRpcError, InputRequired, Deferred)):
        return None
    log.exception("tool %r raised", tool.name, exc_info=exc)
    return failure_result(tool, exc)


async def invoke(
    tool: Tool,
    arguments: dict[str, Any],
    ctx: Context,
    run_sync: RunSync,
) -> dict[str, Any]:
    """Validate ``arguments``, run the tool and shape its result.

    Schema violations and exceptions from the tool body become ``isError`` results that
    say what went wrong; cancellation propagates.
    """
    kwargs, refused = prepare_call(tool, arguments)
    if kwargs is None:
        assert refused is not None
        return refused
    try:
        return outcome(tool, await tool.body.call(kwargs, ctx, run_sync))
    except Exception as exc:
        result = failed(tool, exc)
        if result is None:
            raise
        return result


def failure_result(tool: Tool, exc: Exception) -> dict[str, Any]:
    """The ``isError`` result of a tool whose body raised ``exc`` (not a `ToolError`): its
    type and text. The type is kept as `TOOL_FAILURE` for error masking (the exception
    itself would tie the request's frames, through its traceback, to the task's context)."""
    TOOL_FAILURE.set(type(exc))
    detail = str(exc) or "no details"
    return error_result(f"Tool {tool.name!r} failed: {type(exc).__name__}: {detail}")


__all__ = [
    "ANNOTATION_KEYS",
    "check_name",
    "Deferred",
    "error_result",
    "failed",
    "failure_result",
    "tool_header_params",
    "invoke",
    "make_tool",
    "NAME_RE",
    "outcome",
    "prepare_call",
    "shape_result",
    "Tool",
    "TOOL_FAILURE",
]
